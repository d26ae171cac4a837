"""The per-probe pieces of a probe report: a Markdown and a CSV table per probe and one
PNG figure per probe (object counts as panels); comco.probes.page puts them on the page.

Tables are laid out like the papers' (a row per model, a column per role), with
measured rows first, a chance row, then published reference rows clearly marked.
Several models in one run share one table per (probe, group, metric).
"""

from __future__ import annotations

import math
from pathlib import Path

from comco.probes.retrieval import NO_PREFERENCE, TIE_RULE, mostly_ties
from comco.report.plots import interval_bars, pyplot, save
from comco.report.published import published_rows
from comco.report.tables import MIN_TRIALS, Dashes, markdown_table, md_line, md_text, too_few, units
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
    "pairs": "Counterfactual pairs: Winoground text, image and group scores (and TTM's matching) per factor",
    "size-class": "Size classes in text: TOR by mention position, captions opening with a large or a small object",
    "mention": "Generative VLM: which objects its answer names, by measured size rank",
    "half-truth": "Half-truths: the image against its correct caption and the same caption plus one wrong detail",
}
# What a probe's cells mean where cells_note() does not say it.
PROBE_NOTES = {
    "size-class": "Text only. Size classes from the manifest's real-world sizes (small: under a school bag, 0.5 m; "
                  "large: over a car, 4.6 m). paper: the opening object, then medium ones (as ComCO describes it); "
                  "script: the opening object, medium ones, and one of the other class last (as ComCO's script "
                  "builds it). ComCO's claim 1: the 1st column is higher for large-first than for small-first.",
    "mention": "A generative VLM (vlm:DIR) is asked each prompt of the prompts file about each image (greedy "
               "decoding) and its answer is parsed against the set's names, plurals and synonyms (whole words; "
               "each name counted once, at its first mention); every answer is in answers.jsonl. first named: "
               "among answers that name a present object, the share whose first such object has this size rank "
               "(chance 1 / n); recall: the share of images whose answer names the object of this rank (small "
               "(pooled): every object but the largest); mean position: the object's place among the present "
               "objects named (1 = first; chance: (k + 1) / 2 for k named). Counts: empty_answers, absent_named "
               "(answers naming a set object the image does not hold), none_named (answers naming no present "
               "object).",
    "matching": "Rows of a generative VLM (vlm:DIR; groups ending 'caption likelihood') score each caption by its "
                "log-probability as the VLM's answer to the prompts file's matching prompt about the image: the mean "
                "per caption token and the sum, each its own table; an embedding model's rows, by cosine similarity.",
    "half-truth": "The correct caption names the image's objects (the record's first mention order, no colours); the "
                  "half-truth adds one wrong detail and changes nothing else: an absent object named last, a wrong "
                  "colour before one object's name (colour datasets), the first two objects' relation clause with "
                  "the opposite relation (from slots and depth), or \"two\" of an object held once. A cell is the "
                  "share of images closer to the correct caption (a tie counts as lost; ties are counted), chance "
                  "50 %. CS-CLIP (arXiv 2602.23906) measured CLIP at 40.6 % on COCO, 32.9 % for relations.",
    "pairs": "Each pair is a base image and its variant with one factor changed, captioned by the template that "
             "names the factor (swap-size: sizes, swap-slots: relations, swap-colors: attributes, remove / add: and, "
             "count: counts). Text score: each image prefers its own caption; image score: each caption prefers "
             "its own image; group: both (ties fail). Every caption order of a pair is a trial and the bootstrap "
             "resamples pairs; n = trials. Counts: queries (trials), pairs, identical (caption pairs with the same "
             "two texts, left out), no_captions (pairs without the template), orphans (variants without their "
             "base). swap-size is also split by whether the variant's caption names its new largest object first.",
}
NOTE_KEYS = ("queries", "kept_conditional", "skipped", "gallery", "pairs", "identical", "no_captions", "orphans",
             "empty_answers", "absent_named", "none_named", "ties")
AGGREGATED_NOTE = ("With --text-aggregate per-object: every text is embedded as the mean of its mentioned objects' "
                   "phrase embeddings (each phrase the name with its article, count, size and colour words), "
                   "normalised; relations and the order of mention are not in it. The table without the suffix is "
                   "the same probe on whole captions.")


def base_probe(probe: str) -> tuple[str, str | None]:
    """("tor-per-object") -> ("tor", "per-object"); a probe on whole captions -> (probe, None)."""
    from comco.probes.aggregate import AGGREGATES

    for agg in AGGREGATES:
        if probe.endswith(f"-{agg}"):
            return probe.removesuffix(f"-{agg}"), agg
    return probe, None


def title(probe: str) -> str:
    base, agg = base_probe(probe)
    return TITLES.get(base, base) + (f" ({agg} texts, mean of phrase embeddings)" if agg else "")


def probe_note(probe: str) -> str | None:
    base, agg = base_probe(probe)
    notes = [n for n in (PROBE_NOTES.get(base), AGGREGATED_NOTE if agg else None) if n]
    return " ".join(notes) or None


TOO_FEW = (f"A cell built from fewer than {MIN_TRIALS} trials (kept queries for a conditional share), or from "
           f"fewer than {MIN_TRIALS} of the units its bootstrap resamples (images, pairs, sampled tuples), shows "
           f"its count instead of a number (\"2 of 32 kept: too few to read\"); results.json and the CSV tables "
           f"keep every number. Each – carries a mark whose reason follows its table.")
NO_KEPT = "no query had its top-n retrieved items exactly the n objects present"


def value(stat: dict) -> float:
    return stat.get("acc", stat.get("mean", float("nan")))


def readable(stat: dict | None) -> bool:
    """A number with enough trials to be read (a stat without a count is taken as it is)."""
    if stat is None:
        return False
    v = value(stat)
    count = units(stat)
    return not (v is None or (isinstance(v, float) and math.isnan(v))) and (count is None or count >= MIN_TRIALS)


def cell(stat: dict | None, dashes: Dashes, *, of: int | None = None, missing: str = "not measured",
         unit: str = "trials") -> str:
    """A table cell: the number with its interval, its count when too few trials ("2 of 32 kept:
    too few to read", `of` the queries a conditional share was kept from), or a marked dash."""
    if stat is None:
        return dashes.dash(missing)
    v, n = value(stat), stat.get("n")
    if mostly_ties(stat.get("ties"), n):  # the top-1s were rounding (comco.probes.retrieval.near_ties)
        return f"{NO_PREFERENCE} ({stat['ties']} of {stat['ties'] + (n or 0)} near-ties)"
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return dashes.dash(f"0 of {of} kept: {NO_KEPT}" if of else f"no {unit}")
    return too_few(n, of, unit, stat.get("clusters")) or fmt(stat)


def fmt(stat: dict) -> str:
    """The number and its interval, as the results hold it (cell() applies the minimum)."""
    v = value(stat)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if stat.get("unit") == "x":
        return f"{v:.2f} [{stat['lo']:.2f}, {stat['hi']:.2f}]"
    return f"{100 * v:.1f} [{100 * stat['lo']:.1f}, {100 * stat['hi']:.1f}]"


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
                        "roles": [], "rows": {}, "notes": {}, "of": {}})
                    for s in stats:
                        if s["role"] not in t["roles"]:
                            t["roles"].append(s["role"])
                    t["rows"][model] = {s["role"]: s for s in stats}
                    if metric == "conditional":  # the queries each role's share was kept from
                        t["of"][model] = {s["role"]: s["n"] for s in g["metrics"].get("unconditional", [])}
                    t["notes"][model] = {k: g[k] for k in NOTE_KEYS if k in g}
        out[probe] = list(merged.values())
    return out


def probe_rows(results: dict, probe: str, metric: str | None = None) -> list[dict]:
    """One probe's measured numbers as flat rows (comco.probe_table): one per group, metric, model
    and role, with the interval, the trials, the resampled units, chance and whether the page
    reads it (`readable`)."""
    rows = []
    for t in tables(results).get(probe, []):
        if metric is not None and t["metric"] != metric:
            continue
        for model, by_role in t["rows"].items():
            for role in t["roles"]:
                s = by_role.get(role)
                if s is None:
                    continue
                rows.append({"group": t["group"], "metric": t["metric"], "n_objects": t["n_objects"],
                             "model": model, "role": role, "value": value(s), "lo": s.get("lo"),
                             "hi": s.get("hi"), "n": s.get("n"), "units": units(s), "chance": s.get("chance"),
                             "readable": readable(s)})
    return rows


def table_block(probe: str, t: dict) -> tuple[list[str], list[list[str]], str]:
    """(header, rows, note) of one table: measured rows, a chance row, published rows (marked); the
    note holds the counts and the reason of every "–"."""
    roles, dashes = t["roles"], Dashes()
    rows, chance = [], {}
    for model, by_role in t["rows"].items():
        ns = [by_role[r]["n"] for r in roles if r in by_role]
        of = t.get("of", {}).get(model, {})
        rows.append([model] + [cell(by_role.get(r), dashes, of=of.get(r), missing=f"{model} has no {r} column here")
                               for r in roles] + [_span(ns)])
        for r in roles:
            c = by_role.get(r, {}).get("chance")
            if c is not None and r not in chance:
                chance[r] = f"{c:.2f}" if by_role[r].get("unit") == "x" else f"{100 * c:.1f}"
    if chance:
        unknown = ("chance unknown: no answer named this object" if probe == "mention" else
                   f"chance unknown (1 / n over kept queries): {NO_KEPT}")
        rows.append(["*chance*"] + [chance[r] if r in chance else dashes.dash(unknown)
                                    for r in roles] + [""])
    for p in published_rows(probe, t["metric"], t["n_objects"]):
        rows.append([f"*published:* {p['label']} ({p['source']})"]
                    + [f"{p['values'][r]:.2f}" if r in p["values"] else
                       dashes.dash(f"{p['source']} gives no number for this column") for r in roles] + [""])
    notes = "; ".join(f"{m}: " + ", ".join(f"{k} {v}" for k, v in n.items()) for m, n in t["notes"].items() if n)
    note = " ".join(x for x in (f"Counts - {notes}." if notes else "", dashes.note()) if x)
    return ["model", *roles, "n"], rows, note


def cells_note(probe: str) -> str:
    """What a cell holds; the pair probe's bootstrap resamples pairs, the others' images."""
    unit = "pairs" if base_probe(probe)[0] == "pairs" else "images"
    what = "% (mean position: a place, 1 = named first)" if probe == "mention" else "%"
    ties = (f" Retrieval shares: {TIE_RULE}; their count is in `ties`, and a cell mostly of them reads "
            f"\"{NO_PREFERENCE}\"." if base_probe(probe)[0] in ("tor", "ior", "i2tor") else "")
    return (f"Cells: {what} with a bootstrap 95 % interval over {unit}; n = trials per cell (min-max over "
            f"columns).{ties}")


def markdown(probe: str, tabs: list[dict], results: dict) -> str:
    lines = [f"# {md_line(title(probe))}", "",
             md_text(f"Dataset `{results['dataset'].get('root', '-')}` (hash {results['dataset'].get('hash', '-')}), "
                     f"seed {results['seed']}. {cells_note(probe)} {TOO_FEW}"), ""]
    if probe_note(probe):
        lines += [probe_note(probe), ""]
    for t in tabs:
        header, rows, notes = table_block(probe, t)
        lines += [f"## {md_line(t['group'])} - {md_line(t['metric'])}", "", markdown_table(header, rows)]
        if notes:
            lines += ["", md_text(notes)]
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


ALL_COUNTS = "all object counts"  # a group over every object count (n_objects None): the same row's last panel


def _family(t: dict) -> str:
    """The table's group without its object count: "and, 3 objects, bare-name gallery" -> "and, bare-name gallery"."""
    n = t["n_objects"]
    drop = {ALL_COUNTS} if n is None else {f"{n} objects"}
    return ", ".join(x for x in t["group"].split(", ") if x not in drop)


def _scale(t: dict) -> float:
    return 1.0 if any(s.get("unit") == "x" for by_role in t["rows"].values() for s in by_role.values()) else 100.0


def _panel(ax, probe: str, t: dict, scale: float) -> float:
    """One table as interval bars with its chance level and published markers; returns the highest point drawn."""
    import numpy as np

    roles, models = t["roles"], list(t["rows"])
    x = np.arange(len(roles))
    interval_bars(ax, roles, {m: [(value(s), s["lo"], s["hi"]) if readable(s) else None
                                  for s in map(t["rows"][m].get, roles)] for m in models}, scale=scale)
    width = 0.8 / max(1, len(models))  # interval_bars' layout: mark the bars that have no (readable) data
    for j, m in enumerate(models):
        for i, r in enumerate(roles):
            s = t["rows"][m].get(r)
            if not readable(s):
                v = None if s is None else value(s)
                mark = "n/a" if v is None or math.isnan(v) else f"n={units(s)}<{MIN_TRIALS}"
                ax.text(i + (j - (len(models) - 1) / 2) * width, 0, mark, ha="center", va="bottom", rotation=90,
                        fontsize=6, color="0.45")
    top = [scale * s[k] for m in models for s in t["rows"][m].values() if readable(s) for k in ("hi", "acc", "mean")
           if isinstance(s.get(k), (int, float)) and not math.isnan(s[k])]
    chance = [next((t["rows"][m][r].get("chance") for m in models if r in t["rows"][m]
                    and t["rows"][m][r].get("chance") is not None), None) for r in roles]
    for i, c in enumerate(chance):
        if c is not None:
            ax.hlines(scale * c, i - 0.45, i + 0.45, colors="k", linestyles="dashed", linewidth=1, label="chance")
            top.append(scale * c)
    for k, p in enumerate(published_rows(probe, t["metric"], t["n_objects"])[:7]):
        ys = [p["values"].get(r, np.nan) for r in roles]
        ax.plot(x, ys, linestyle="none", marker="x", markersize=5, color=f"C{(k + len(models)) % 10}",
                label=f"published: {p['label']}")
        top += [y for y in ys if not math.isnan(y)]
    ax.set_xlim(-0.5, len(roles) - 0.5)  # every role's place, bars or not (a panel of marks only included)
    long_labels = sum(len(r) for r in roles) > 6 * len(roles)
    ax.set_xticks(x, roles, rotation=30 if long_labels else 0, ha="right" if long_labels else "center", fontsize=7)
    ax.tick_params(axis="y", labelsize=7)
    return max(top, default=1.0)


MAX_FIGURE_WIDTH = 11.0  # inches: wider rows wrap their panels onto more lines, so a page shows them unshrunk


def _lines(widths: list[float]) -> list[list[int]]:
    """Panel indices split into lines that fit MAX_FIGURE_WIDTH (each line at least one panel)."""
    lines, width = [[]], 1.0
    for i, w in enumerate(widths):
        if lines[-1] and width + w > MAX_FIGURE_WIDTH:
            lines.append([])
            width = 1.0
        lines[-1].append(i)
        width += w
    return lines


FIGURE_DPI = 110


def probe_figure(path: Path, probe: str, tabs: list[dict]) -> Path:
    """One PNG per probe: a row per (group, metric), a panel per object count in it (wrapped onto more
    lines when wide), one y range per row, one legend."""
    fig, rect = draw_probe_figure(probe, tabs)
    return save(fig, path, dpi=FIGURE_DPI, rect=rect)


def draw_probe_figure(probe: str, tabs: list[dict]):
    """The figure of `probe_figure` and the rect its axes keep to (title and legend above them)."""
    import textwrap

    plt = pyplot()
    rows = list(dict.fromkeys((_family(t), t["metric"]) for t in tabs))
    counts = list(dict.fromkeys(t["n_objects"] for t in tabs))
    counts = sorted(c for c in counts if c is not None) + [None] * (None in counts)
    cell = {((_family(t), t["metric"]), t["n_objects"]): t for t in tabs}
    n_models = max(len(t["rows"]) for t in tabs)
    widths = [0.9 + 0.42 * max((len(t["roles"]) for t in tabs if t["n_objects"] == c), default=1)
              * max(1, n_models) ** 0.5 for c in counts]
    chunks = _lines(widths)
    width = 1.0 + max(sum(widths[i] for i in chunk) for chunk in chunks)
    fig = plt.figure(figsize=(width, 2.5 * len(rows) * len(chunks)))
    grid = fig.add_gridspec(len(rows) * len(chunks), 1)
    axes = []
    for i, row in enumerate(rows):
        drawn = []
        for k, chunk in enumerate(chunks):
            line = grid[i * len(chunks) + k].subgridspec(1, len(chunk), width_ratios=[widths[j] for j in chunk])
            for col, j in enumerate(chunk):
                n, t = counts[j], cell.get((row, counts[j]))
                ax = fig.add_subplot(line[0, col])
                axes.append(ax)
                if t is None:
                    ax.axis("off")
                    continue
                scale = _scale(t)
                drawn.append((ax, _panel(ax, probe, t, scale)))
                ax.set_title("all scenes" if n is None else f"{n} objects", fontsize=8)
                if col == 0:
                    name = textwrap.fill(f"{row[0]}: {row[1]}" if row[0] else row[1], 26)
                    ax.set_ylabel(f"{name}\n({'%' if scale == 100 else 'ratio'})", fontsize=8)
        top = max(h for _, h in drawn)
        for ax, _ in drawn:  # one y range per row, so panels of a row compare by eye
            ax.set_ylim(0, 1.08 * top)
    handles = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    # as many legend columns as fit the figure's width (an 8 pt character is about 0.07 in), widening it if need be
    column = 0.5 + 0.07 * max((len(label) for label in handles), default=0)
    width = max(width, min(18.0, column + 0.2))
    ncol = max(1, min(4, len(handles), int((width - 0.2) // column)))
    # Title, then the legend, above the first row of panels: neither is drawn over a panel's
    # title, and the legend sits by the panels it explains however many rows follow.
    title_h, legend_h = 0.4, 0.1 + 0.18 * -(-len(handles) // ncol)  # inches: one 8 pt line per legend row
    height = fig.get_figheight() + title_h + legend_h
    fig.set_size_inches(width, height)
    fig.suptitle(title(probe), fontsize=10, y=1 - 0.08 / height, va="top")
    fig.legend(list(handles.values()), list(handles), loc="upper center", bbox_to_anchor=(0.5, 1 - title_h / height),
               ncol=ncol, fontsize=8, frameon=False)
    return fig, (0, 0, 1, 1 - (title_h + legend_h) / height)


def figure_path(out: Path, probe: str) -> Path:
    """Where a probe's combined figure goes."""
    return Path(out) / "plots" / f"{probe}.png"
