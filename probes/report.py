"""Reports: results.json, a Markdown and a CSV table per probe, PNG bar plots.

Tables are laid out like the papers' (a row per model, a column per role), with
measured rows first, a chance row, then published reference rows clearly marked.
Several models in one run share one table per (probe, group, metric).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from comco.io import write_json, write_text
from comco.report.plots import interval_bars, pyplot, save
from comco.report.published import published_rows
from comco.report.tables import csv_text as table_csv

TITLES = {
    "tor": "TOR: text-based object retrieval, by mention position",
    "ior": "IOR: image-based object retrieval, by measured size rank",
    "ior_slot": "IOR by slot (large / small object in each slot)",
    "i2tor": "I2TOR: image vs object-name texts, by measured size rank",
    "matching": "Image-text matching (1: bias helps, 2: bias hurts)",
    "toc": "TOC: linear probe of the object at each mention position (caption embeddings)",
    "ioc": "IOC: linear probe of the object in each slot (image embeddings)",
    "binding": "Colour binding: uni-modal linear probes and cross-modal swap test",
    "attention": "Last-layer CLS attention inside each object's box, by measured size rank",
}


def value(stat: dict) -> float:
    return stat.get("acc", stat.get("mean", float("nan")))


def fmt(stat: dict) -> str:
    v = value(stat)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if stat.get("unit") == "x":
        return f"{v:.2f} [{stat['lo']:.2f}, {stat['hi']:.2f}]"
    return f"{100 * v:.1f} [{100 * stat['lo']:.1f}, {100 * stat['hi']:.1f}]"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def tables(results: dict) -> dict[str, list[dict]]:
    """probe -> [{"group", "metric", "n_objects", "roles", "rows": {model: [stat per role]}}] in run order."""
    out: dict[str, list[dict]] = {}
    for probe, per_model in results["probes"].items():
        merged: dict[tuple, dict] = {}
        for model, groups in per_model.items():
            for g in groups:
                for metric, stats in g["metrics"].items():
                    t = merged.setdefault((g["key"], metric), {
                        "group": g["key"], "metric": metric, "n_objects": g.get("n_objects"),
                        "roles": [], "rows": {}, "notes": {}})
                    for s in stats:
                        if s["role"] not in t["roles"]:
                            t["roles"].append(s["role"])
                    t["rows"][model] = {s["role"]: s for s in stats}
                    t["notes"][model] = {k: g[k] for k in ("queries", "kept_conditional", "skipped", "gallery")
                                         if k in g}
        out[probe] = list(merged.values())
    return out


def markdown(probe: str, tabs: list[dict], results: dict) -> str:
    lines = [f"# {TITLES.get(probe, probe)}", "",
             f"Dataset `{results['dataset'].get('root', '-')}` (hash {results['dataset'].get('hash', '-')}), "
             f"seed {results['seed']}. Cells: % with a bootstrap 95 % interval over images; "
             "n = trials per cell (min-max over columns).", ""]
    for t in tabs:
        roles = t["roles"]
        lines += [f"## {t['group']} - {t['metric']}", "",
                  "| model | " + " | ".join(roles) + " | n |", "|---" * (len(roles) + 2) + "|"]
        chance = {}
        for model, by_role in t["rows"].items():
            cells = [fmt(by_role[r]) if r in by_role else "–" for r in roles]
            ns = [by_role[r]["n"] for r in roles if r in by_role]
            lines.append(f"| {model} | " + " | ".join(cells) + f" | {_span(ns)} |")
            for r in roles:
                c = by_role.get(r, {}).get("chance")
                if c is not None and r not in chance:
                    chance[r] = c
        if chance:
            lines.append("| *chance* | " + " | ".join(
                f"{100 * chance[r]:.1f}" if r in chance else "–" for r in roles) + " | |")
        for p in published_rows(probe, t["metric"], t["n_objects"]):
            lines.append(f"| *published:* {p['label']} ({p['source']}) | " + " | ".join(
                f"{p['values'][r]:.2f}" if r in p["values"] else "–" for r in roles) + " | |")
        notes = "; ".join(f"{m}: " + ", ".join(f"{k} {v}" for k, v in n.items()) for m, n in t["notes"].items() if n)
        if notes:
            lines += ["", f"Counts - {notes}."]
        lines.append("")
    return "\n".join(lines)


def _span(ns: list[int]) -> str:
    if not ns:
        return "0"
    return str(min(ns)) if min(ns) == max(ns) else f"{min(ns)}-{max(ns)}"


CSV_COLUMNS = ["probe", "group", "metric", "source", "model", "role", "value", "lo", "hi", "n", "clusters", "chance"]


def csv_text(probe: str, tabs: list[dict]) -> str:
    rows = []
    for t in tabs:
        for model, by_role in t["rows"].items():
            for r in t["roles"]:
                s = by_role.get(r)
                if s:
                    rows.append([probe, t["group"], t["metric"], "measured", model, r, value(s), s["lo"], s["hi"],
                                 s["n"], s.get("clusters", ""), "" if s.get("chance") is None else s["chance"]])
        for p in published_rows(probe, t["metric"], t["n_objects"]):
            for r, v in p["values"].items():
                if r in t["roles"]:
                    rows.append([probe, t["group"], t["metric"], f"published: {p['source']}", p["label"], r,
                                 v / 100, "", "", "", "", ""])
    return table_csv(CSV_COLUMNS, rows)


def plot(path: Path, probe: str, t: dict) -> None:
    import numpy as np

    plt = pyplot()
    roles, models = t["roles"], list(t["rows"])
    scale = 1.0 if any(s.get("unit") == "x" for m in models for s in t["rows"][m].values()) else 100.0
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(roles) * max(1, len(models)) ** 0.5, 3.6))
    x = np.arange(len(roles))
    interval_bars(ax, roles, {m: [(value(s), s["lo"], s["hi"]) if s else None for s in map(t["rows"][m].get, roles)]
                              for m in models}, scale=scale)
    chance = [next((t["rows"][m][r].get("chance") for m in models if r in t["rows"][m]
                    and t["rows"][m][r].get("chance") is not None), None) for r in roles]
    for i, c in enumerate(chance):
        if c is not None:
            ax.hlines(scale * c, i - 0.45, i + 0.45, colors="k", linestyles="dashed", linewidth=1,
                      label="chance" if i == next(k for k, cc in enumerate(chance) if cc is not None) else None)
    for k, p in enumerate(published_rows(probe, t["metric"], t["n_objects"])[:7]):
        ys = [p["values"].get(r, np.nan) for r in roles]
        ax.plot(x, ys, linestyle="none", marker="x", markersize=5, color=f"C{(k + len(models)) % 10}",
                label=f"published: {p['label']}")
    ax.set_xticks(x, roles, rotation=20 if len(roles) > 5 else 0)
    ax.set_ylabel("%" if scale == 100 else "ratio")
    ax.set_title(f"{probe}: {t['group']} - {t['metric']}", fontsize=9)
    ax.legend(fontsize=6, loc="best")
    save(fig, path, dpi=110)


def write_reports(out: Path, results: dict, plots: bool = True) -> list[Path]:
    """results.json, a Markdown and a CSV table per probe, and PNG plots (unless `plots` is False).

    Args:
        out: the output folder.
        results: what run_probes returned.
        plots: draw the plots.
    Returns the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "results.json"]
    write_json(written[0], results, indent=1, sort_keys=False, default=_jsonable, allow_nan=True)
    for probe, tabs in tables(results).items():
        for ext, text in (("md", markdown(probe, tabs, results)), ("csv", csv_text(probe, tabs))):
            path = out / f"{probe}.{ext}"
            write_text(path, text)
            written.append(path)
        if plots:
            for t in tabs:
                path = out / "plots" / f"{probe}_{_slug(t['group'])}_{_slug(t['metric'])}.png"
                plot(path, probe, t)
                written.append(path)
    return written


def _jsonable(o):
    import numpy as np

    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
