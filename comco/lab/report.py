"""The lab's report: report.md, report.html (images inline) and results.json.

The first results table is the competence gates (comco.probes.gates) of every probed
model; a model below a gate is listed there and left out of every fit, comparison and
paragraph, and the untrained models of each seed (the architecture's prior) sit beside
the trained ones in every table as a reference.

Numbers come from the finished stages' folders; every paragraph is written from them
by comparing values and their intervals across seeds (mean with a Student-t 95 %
interval over seeds), and says so when the spread is too wide to conclude. Published
figures appear only as labelled reference rows.
"""

from __future__ import annotations

import json
import math
import platform
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from comco import __version__
from comco.io import write_json, write_text
from comco.report import Doc, error_bars, interval_bars, pyplot, save

FIGURES = "figures"
# two-sided 95 % Student t quantiles by degrees of freedom
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}
WIDE = 0.25  # an across-seed interval wider than this (in share units) is "too wide to say"
ORD = ["1st", "2nd", "3rd", "4th", "5th"]


def t95(df: int) -> float:
    if df <= 0:
        return float("nan")
    keys = sorted(_T95)
    for k in keys:
        if df <= k:
            return _T95[k]
    return 1.96


def summarize(values, bounds: tuple[float, float] | None = (0.0, 1.0)) -> dict:
    """Mean and 95 % t-interval across seeds (no interval from a single seed).

    The interval is clipped to `bounds` (shares and accuracies live in [0, 1]); with
    few seeds a t-interval is wide and would otherwise run past them.
    """
    v = np.array([x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))], float)
    if v.size == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0, "values": []}
    m = float(v.mean())
    if v.size < 2:
        return {"mean": m, "lo": None, "hi": None, "n": 1, "values": v.tolist()}
    half = t95(v.size - 1) * float(v.std(ddof=1)) / math.sqrt(v.size)
    lo, hi = m - half, m + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return {"mean": m, "lo": lo, "hi": hi, "n": int(v.size), "values": v.tolist()}


def pct(s: dict | None, digits: int = 1) -> str:
    if not s or s.get("mean") is None:
        return "–"
    if s.get("lo") is None:
        return f"{100 * s['mean']:.{digits}f} (1 seed)"
    return f"{100 * s['mean']:.{digits}f} [{100 * s['lo']:.{digits}f}, {100 * s['hi']:.{digits}f}]"


def num(s: dict | None, digits: int = 3) -> str:
    if not s or s.get("mean") is None:
        return "–"
    if s.get("lo") is None:
        return f"{s['mean']:.{digits}f} (1 seed)"
    return f"{s['mean']:.{digits}f} [{s['lo']:.{digits}f}, {s['hi']:.{digits}f}]"


def width(s: dict) -> float:
    return float("inf") if s.get("lo") is None else s["hi"] - s["lo"]


# LABCLIP's held-out binding on CLEVR (ViT-B/32, REFERENCE.md), and what the lab calls restored
PUBLISHED_LABCLIP_BINDING = 0.95
RESTORED_BINDING = 0.9


def compare(name_a: str, a: dict, name_b: str, b: dict, what: str, scale: float = 100, unit: str = " points") -> str:
    """One sentence comparing two across-seed summaries by their intervals."""
    if a.get("mean") is None or b.get("mean") is None:
        return f"{what}: not measured for both."
    diff = (a["mean"] - b["mean"]) * scale
    if a.get("lo") is None or b.get("lo") is None:
        return (f"{what} is {a['mean'] * scale:.1f} for {name_a} and {b['mean'] * scale:.1f} for {name_b} "
                f"(a difference of {diff:+.1f}{unit}); with one seed there is no interval, so this is not a finding.")
    if max(width(a), width(b)) > WIDE:
        verdict = "the spread across seeds is too wide to say which is larger"
    elif a["lo"] > b["hi"]:
        verdict = f"{name_a} is higher and the intervals do not overlap"
    elif a["hi"] < b["lo"]:
        verdict = f"{name_a} is lower and the intervals do not overlap"
    else:
        verdict = "the intervals overlap, so the difference is within the seed spread"
    return (f"{what} is {pct(a) if scale == 100 else num(a)} for {name_a} against "
            f"{pct(b) if scale == 100 else num(b)} for {name_b} ({diff:+.1f}{unit}): {verdict}.")


def paired(a_vals: list, b_vals: list) -> dict:
    """Across-seed summary of per-seed differences a - b (seeds aligned)."""
    return summarize([x - y for x, y in zip(a_vals, b_vals) if x is not None and y is not None], (-1.0, 1.0))


def slope(xs: list[float], ys: list[float]) -> dict:
    """Least-squares slope with a 95 % t-interval (df = n - 2)."""
    x, y = np.array(xs, float), np.array(ys, float)
    ok = ~np.isnan(y)
    x, y = x[ok], y[ok]
    if x.size < 3 or np.ptp(x) == 0:
        return {"mean": None, "lo": None, "hi": None, "n": int(x.size)}
    xm = x - x.mean()
    b = float((xm * (y - y.mean())).sum() / (xm ** 2).sum())
    resid = y - (y.mean() + b * xm)
    se = math.sqrt(float((resid ** 2).sum()) / (x.size - 2) / float((xm ** 2).sum()))
    half = t95(x.size - 2) * se
    return {"mean": b, "lo": b - half, "hi": b + half, "n": int(x.size)}


# ---------------------------------------------------------------- reading stages

def _load(out: Path, stage_id: str) -> dict:
    path = out / "stages" / stage_id / "stage.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _results(out: Path, stage_id: str) -> dict:
    path = out / "stages" / stage_id / "results.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def shares(stats: list[dict]) -> list[float | None]:
    """Per-role share of the hits: value_k / sum of values (None when nothing was hit)."""
    vals = [s["value"] if s["value"] is not None else float("nan") for s in stats]
    total = float(np.nansum(vals))
    return [None if total <= 0 or math.isnan(v) else v / total for v in vals]


def metric(res: dict, family: str, n: str, template: str | None = None) -> dict | None:
    """Per-role shares and raw values of one probe result for n objects."""
    if family == "tor":
        block = res.get("tor", {}).get(template, {}).get(n)
        stats = block["unconditional"] if block else None
    elif family == "ior":
        block = res.get("ior", {}).get(n)
        stats = block["unconditional"] if block else None
    elif family == "ior_present":
        stats = res.get("ior_present", {}).get(n)
    else:
        stats = res.get("sensitivity", {}).get(n)
    if not stats:
        return None
    return {"share": shares(stats), "raw": [s["value"] for s in stats], "roles": [s["role"] for s in stats],
            "chance": [s.get("chance") for s in stats]}


# ---------------------------------------------------------------- figures

def sample_grid(path: Path, train_root: Path, variants: dict[float, Path], k: int = 8) -> Path | None:
    """Rendered training images, each with its first caption at the lowest and highest p."""
    from PIL import Image

    scenes = train_root / "scenes.jsonl"
    if not scenes.is_file():
        return None
    recs = [json.loads(line) for line in scenes.read_text(encoding="utf-8").splitlines() if line.strip()]
    picks = [r for r in recs if len(r["objects"]) >= 3][:k] or recs[:k]
    ps = sorted(variants)
    caps = {}
    for p in (ps[0], ps[-1]) if ps else ():
        f = variants[p] / "scenes.jsonl"
        if f.is_file():
            by_id = {json.loads(line)["id"]: json.loads(line)
                     for line in f.read_text(encoding="utf-8").splitlines() if line}
            caps[p] = {i: by_id[i]["captions"].get("and", [""])[0] for i in by_id}
    plt = pyplot()
    cols = min(4, len(picks))
    rows = math.ceil(len(picks) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 4.0 * rows), squeeze=False)  # room for 5 title lines
    for ax in axes.flat:
        ax.axis("off")
    for ax, r in zip(axes.flat, picks):
        with Image.open(train_root / r["image"]) as im:
            ax.imshow(np.asarray(im.convert("RGB")), interpolation="nearest")
        large = next(o["name"] for o in r["objects"] if o["size_rank"] == 0)
        lines = [f"#{r['id']} largest: {large}"] + [f"p={p:g}: {caps[p].get(r['id'], '')}" for p in caps]
        ax.set_title("\n".join(_wrap(x, 38) for x in lines), fontsize=6.5, loc="left")
    return save(fig, path)


def _wrap(text: str, n: int) -> str:
    words, lines, cur = text.split(), [], ""
    for w in words:
        if len(cur) + len(w) + 1 > n and cur:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    lines.append(cur)
    return "\n".join(lines)


def dose_plot(path: Path, title: str, ps: list[float], series: dict[str, list[dict]], chance: float | None,
              ylabel: str) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for j, (label, stats) in enumerate(series.items()):
        y, lo, hi = ([np.nan if s.get(k) is None else 100 * s[k] for s in stats] for k in ("mean", "lo", "hi"))
        ax.errorbar(np.array(ps) + 0.006 * (j - len(series) / 2), y, yerr=error_bars(y, lo, hi), marker="o",
                    capsize=3, label=label)
    if chance is not None:
        ax.axhline(100 * chance, color="k", linestyle="--", linewidth=1, label="chance (uniform)")
    ax.set_xlabel("order bias p of the training captions (P[largest object named first])")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return save(fig, path)


def bar_plot(path: Path, title: str, groups: list[str], series: dict[str, list[dict]], ylabel: str,
             chance: float | None = None) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(groups) * max(1, len(series)) ** 0.5 + 1.5), 3.5))
    x = np.arange(len(groups))
    interval_bars(ax, groups, {label: [(s["mean"], s.get("lo"), s.get("hi")) for s in stats]
                               for label, stats in series.items()})
    if chance is not None:
        ax.axhline(100 * chance, color="k", linestyle="--", linewidth=1, label="chance")
    ax.set_xticks(x, groups, rotation=15, fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6)
    return save(fig, path)


# ---------------------------------------------------------------- the document

# ---------------------------------------------------------------- sections

def write_report(out: Path, report_stage, stages: list) -> dict:
    """The lab report (report.md, report.html, results.json) from every finished stage.

    Args:
        out: the run folder. report_stage: the report stage (its config holds the recipe).
        stages: every stage of the run, in graph order.
    """
    out = Path(out)
    recipe = report_stage.config["recipe"]
    s = recipe["settings"]
    info = {st.id: _load(out, st.id) for st in stages if st.kind != "report"}
    fig = out / FIGURES
    doc = Doc()
    numbers: dict = {"recipe": recipe["name"], "scale": recipe["scale"], "object_sets": {}}
    doc.h(1, f"comco lab: {recipe['name']} ({recipe['scale']} scale)")
    doc.p(recipe["description"])
    ps = s["data"]["order_bias"]
    seeds = s["scratch"]["seeds"]
    for oset in s["data"]["object_sets"]:
        numbers["object_sets"][oset] = _object_set_sections(doc, out, fig, oset, s, ps, seeds, info, recipe["stages"])
    _what_was_run(doc, out, recipe, stages, info)
    md = doc.markdown(out)
    write_text(out / "report.md", md)
    write_text(out / "report.html", doc.html(f"comco lab: {recipe['name']}"))
    write_json(out / "results.json", numbers, indent=1)
    return {"report": "report.md", "html": "report.html", "results": "results.json",
            "figures": sorted(p.name for p in fig.glob("*.png")) if fig.is_dir() else []}


def _object_set_sections(doc: Doc, out: Path, fig: Path, oset: str, s: dict, ps: list, seeds: list, info: dict,
                         stage_names: list) -> dict:
    numbers: dict = {}
    pp = lambda p: f"p{p:g}"  # noqa: E731
    doc.h(2, f"Object set `{oset}`")
    train_root = out / "stages" / f"render-train-{oset}" / "data"
    variants = {p: out / "stages" / f"captions-{oset}-{pp(p)}" / "data" for p in ps}
    grid = sample_grid(fig / f"{oset}-samples.png", train_root, variants)
    doc.h(3, "Sample of the rendered training images")
    doc.p(f"Training scenes hold {', '.join(map(str, s['data']['train_objects']))} objects; the held-out test "
          f"scenes hold {', '.join(map(str, s['data']['test_objects']))} with balanced mention orders (every object "
          f"equally often at every position). Each image below is one file shared by all caption variants; its "
          f"first `and` caption is shown at the lowest and the highest order bias p.")
    doc.img(grid, f"{oset} sample renders")
    cap_rows = []
    for p in ps:
        c = info.get(f"captions-{oset}-{pp(p)}", {}).get("summary", {})
        if c:
            cap_rows.append([f"{p:g}", c["images"], c["captions"], f"{100 * c['largest_first_share']:.1f}"])
    if cap_rows:
        doc.p("Realised caption policy: the share of training captions that name the largest object first "
              "(with p = 0 it is the balanced 1/n of the object counts mixed; a 1-object scene always names it first).")
        doc.table(["p", "images", "captions", "largest named first (%)"], cap_rows)

    passing, numbers["gates"] = _gates_section(doc, out, oset, s, ps, seeds)
    keep = lambda sid: _results(out, sid) if sid in passing else {}  # noqa: E731 - failing models count nowhere
    probes = {(p, seed): keep(f"probe-scratch-{oset}-{pp(p)}-s{seed}") for p in ps for seed in seeds}
    prior = [_results(out, f"probe-prior-{oset}-s{seed}") for seed in seeds]
    counts = sorted({int(n) for r in [*probes.values(), *prior] for n in r.get("tor", {}).get("and", {})})
    if counts:
        numbers["dose_response"] = _dose_sections(doc, fig, oset, ps, seeds, probes, counts, s, prior)
    ft_numbers = _finetune_sections(doc, out, fig, oset, s, seeds, info, passing, prior)
    if ft_numbers:
        numbers["finetune"] = ft_numbers
    lab = _labclip_section(doc, fig, oset, s, info)
    if lab:
        numbers["labclip"] = lab
    return numbers


GATE_ABBR = {"R@1": "R@1", "R@5": "R@5", "set R@1": "set R@1", "swap largest": "swap L",
             "swap small": "swap s", "presence TOR": "pres. TOR", "presence IOR": "pres. IOR", "Keep": "Keep"}
# the caption-dependent figures, shown again on the order-balanced captions (not gated)
BALANCED = ("R@1", "set R@1", "swap largest", "swap small", "presence TOR")


def _gate_models(oset: str, s: dict, ps: list, seeds: list) -> list[tuple[str, str, bool]]:
    """(label, probe stage id, is a trained model) of every model the lab probes, in table order."""
    rows = [(f"scratch p = {p:g}, seed {seed}", f"probe-scratch-{oset}-p{p:g}-s{seed}", True) for p in ps
            for seed in seeds]
    rows += [(f"{v['name']}, seed {seed}", f"probe-finetune-{oset}-{v['name']}-s{seed}", True)
             for v in s["finetune"]["variants"] for seed in seeds]
    rows += [(f"architecture prior (untrained), seed {seed}", f"probe-prior-{oset}-s{seed}", False)
             for seed in seeds]
    return rows


def _gates_section(doc, out: Path, oset: str, s: dict, ps: list, seeds: list) -> tuple[set, dict]:
    """The first results table: every probed model's gate figures; returns the passing stage ids."""
    from comco.lab.recipe import FINETUNE_GATES, GATE_KEYS, SCRATCH_ONLY_GATES
    from comco.probes import GATE_FIGURES, gate_passes

    gates = s["gates"]
    thresholds = {GATE_KEYS[k]: gates[k] for k in GATE_KEYS}
    columns = list(GATE_FIGURES) + list(FINETUNE_GATES)
    rows, balanced_rows, passing, numbers, chance = [], [], set(), {}, {}
    for label, sid, trained in _gate_models(oset, s, ps, seeds):
        res = _results(out, sid)
        figs = res.get("gates")
        if figs is None:
            continue
        finetuned = sid.startswith("probe-finetune-")
        own = {f: t for f, t in thresholds.items()
               if (f not in FINETUNE_GATES or finetuned) and (f not in SCRATCH_ONLY_GATES or not finetuned)}
        ok, failed = gate_passes(figs, own)
        if ok and trained:
            passing.add(sid)
        for k, v in figs.items():
            chance.setdefault(k, v.get("chance"))
        verdict = ("pass" if ok else "**fail**: " + ", ".join(GATE_ABBR[f] for f in failed)) if trained else \
            ("reference" + ("" if not ok else " (passes)"))
        rows.append([label] + [_cell(figs.get(f)) for f in columns] + [verdict])
        bal = res.get("gates_balanced") or {}
        if bal and trained:
            balanced_rows.append([label] + [f"{_cell(bal.get(f))} ({_gap(figs.get(f), bal.get(f))})"
                                            for f in BALANCED])
        numbers[sid] = {"figures": figs, "balanced": bal, "passed": ok, "failed": failed, "trained": trained}
    if not rows:
        return passing, {}
    doc.h(3, "Competence gates: which models can do the task at all")
    doc.p("Before any bias is read, every model is measured on the held-out test images with their own "
          f"`{s['probe']['tor_templates'][0]}` captions, written the way the model was taught (the mention orders "
          "of its own order bias p; the untrained models: the order-balanced captions): image-to-text retrieval "
          "among all test captions (R@1, R@5; set R@1 = the top caption names exactly the image's objects, in any "
          "order), swap matching (the image against its caption and the same caption with the largest (swap L) or "
          "a small object (swap s) replaced by one the scene does not hold) and presence (the share of TOR / IOR "
          "queries whose top-1 is an object present in the query); the fine-tuned models also Keep (text-to-image "
          "R@1 of the long captions, as written). Cells: % with a 95 % bootstrap interval over images. Gates: "
          + ", ".join(f"{GATE_ABBR[f]} >= {100 * v:g} %" for f, v in thresholds.items())
          + " (the fine-tuned models: Keep and the presences; their short-caption set R@1 and swaps are shown "
          "but not gated, since what the long captions cost the short ones is a result the samplers are compared "
          "on, and gating on it would select on it). "
          "A model below a gate is listed here and left out of every fit, "
          "comparison and paragraph below; the "
          "LABCLIP bases are trained on the colour dataset (their own gates are in the LABCLIP section). The "
          "untrained models (the architecture's prior) are a reference, not a result, and are shown beside the "
          "trained ones.")
    rows.append(["*chance*"] + [("–" if chance.get(f) is None else f"{100 * chance[f]:.1f}") for f in columns]
                + ["–"])
    doc.table(["model"] + [GATE_ABBR[f] for f in columns] + ["gates"], rows)
    trained = [sid for _, sid, t in _gate_models(oset, s, ps, seeds) if t and sid in numbers]
    per_p = [f"p = {p:g}: {sum(f'probe-scratch-{oset}-p{p:g}-s{seed}' in passing for seed in seeds)} of "
             f"{len(seeds)}" for p in ps]
    doc.p(f"{len(passing)} of {len(trained)} trained models pass every gate (scratch models per p: "
          f"{'; '.join(per_p)}).")
    if balanced_rows:
        doc.p("The same figures on the order-balanced test captions (every object equally often at every "
              "position), not gated; in brackets the change from the model's own captions, in points. A model "
              "that learnt to read only the first mention loses here what it had on its own captions: this gap "
              "is a first measure of order reliance.")
        doc.table(["model"] + [GATE_ABBR[f] for f in BALANCED], balanced_rows)
    return passing, {"thresholds": thresholds, "models": numbers}


def _gap(own: dict | None, balanced: dict | None) -> str:
    if not own or not balanced or own.get("value") is None or balanced.get("value") is None:
        return "–"
    return f"{100 * (balanced['value'] - own['value']):+.1f}"


def _cell(f: dict | None) -> str:
    if not f or f.get("value") is None or (isinstance(f["value"], float) and math.isnan(f["value"])):
        return "–"
    if f.get("lo") is None:
        return f"{100 * f['value']:.1f}"
    return f"{100 * f['value']:.1f} [{100 * f['lo']:.0f}, {100 * f['hi']:.0f}]"


def _per_seed(probes: dict, p: float, seeds: list, family: str, n: str, template: str | None, idx: int,
              field: str = "share") -> list:
    vals = []
    for seed in seeds:
        m = metric(probes.get((p, seed), {}), family, n, template)
        vals.append(None if m is None or idx >= len(m[field]) else m[field][idx])
    return vals


def _answerable(probes: dict, ps: list, seeds: list, need: int) -> tuple[bool, str]:
    """Enough passing models for a fit: `need` at the lowest and the highest p, 3 in all."""
    counts = [sum(bool(probes.get((p, seed))) for seed in seeds) for p in ps]
    ok = bool(counts) and counts[0] >= need and counts[-1] >= need and sum(counts) >= 3
    return ok, "; ".join(f"{c} of {len(seeds)} at p = {p:g}" for c, p in zip(counts, ps))


def _prior_stat(prior: list, family: str, n: str, template: str | None, idx: int, field: str = "share",
                bounds=(0.0, 1.0)) -> dict:
    vals = []
    for r in prior:
        m = metric(r, family, n, template)
        vals.append(None if m is None or idx >= len(m[field]) else m[field][idx])
    return summarize(vals, bounds)


PRIOR = "*architecture prior* (untrained)"


def _dose_sections(doc, fig, oset, ps, seeds, probes, counts, s, prior=()) -> dict:
    numbers = {}
    gate = _answerable(probes, ps, seeds, s["gates"]["min_passing"])
    doc.h(3, "TOR: which mention position the text encoder retrieves, against the order bias p")
    doc.p("For each held-out `and` caption the most similar bare object name (ComCO's gallery) is retrieved; "
          "a position's share "
          "is its top-1 hit rate over the sum of the hit rates of all positions (100 % in all, like the ComCO "
          "paper's conditional table, but without dropping captions whose top-n is not exact). Cells: mean over "
          "the training seeds that passed the competence gates with a 95 % t-interval across seeds; the raw top-1 "
          "rate of each position (the share of all captions whose top-1 is that object; chance 1 / set size) is "
          "given beside the shares, since a share of near-zero hits says nothing. The untrained models of the "
          "same seeds show what the architecture (causal text mask, EOT pooling) brings before any caption.")
    published = _published_tor()
    for n in counts:
        key = str(n)
        table, series, raws = [], {}, {}
        roles = ORD[:n]
        for idx, role in enumerate(roles):
            series[f"{role} mentioned"] = [summarize(_per_seed(probes, p, seeds, "tor", key, "and", idx)) for p in ps]
            raws[role] = [summarize(_per_seed(probes, p, seeds, "tor", key, "and", idx, "raw")) for p in ps]
        for j, p in enumerate(ps):
            table.append([f"{p:g}"] + [pct(series[f"{r} mentioned"][j]) for r in roles]
                         + [pct(raws[r][j]) for r in roles])
        if prior:
            table.append([PRIOR] + [pct(_prior_stat(prior, "tor", key, "and", i)) for i in range(n)]
                         + [pct(_prior_stat(prior, "tor", key, "and", i, "raw")) for i in range(n)])
        if n == 4:
            for label, vals in published:
                table.append([f"*published:* {label}"] + [f"{v:.1f}" for v in vals] + ["–"] * n)
        raw_chance = next((m["chance"][0] for r in [*probes.values(), *prior]
                           if (m := metric(r, "tor", key, "and")) and m["chance"][0] is not None), None)
        table.append(["*chance*"] + [f"{100 / n:.1f}"] * n
                     + ["–" if raw_chance is None else f"{100 * raw_chance:.1f}"] * n)
        doc.p(f"**{n} objects** (in %):")
        doc.table(["p"] + [f"{r} share" for r in roles] + [f"{r} raw top-1" for r in roles], table)
        path = dose_plot(fig / f"{oset}-tor-{n}.png", f"TOR position shares, {n}-object captions ({oset})", ps,
                         series, 1 / n, "share of top-1 hits (%)")
        doc.img(path, f"TOR dose-response {n} objects")
        xs, ys = _xy(probes, ps, seeds, "tor", key, "and", 0)
        sl = slope(xs, ys)
        first0, first1 = series["1st mentioned"][0], series["1st mentioned"][-1]
        pr = _prior_stat(prior, "tor", key, "and", 0) if prior else None
        numbers[f"tor_{n}"] = {"first_share": {f"{p:g}": series["1st mentioned"][j] for j, p in enumerate(ps)},
                               "first_raw": {f"{p:g}": raws["1st"][j] for j, p in enumerate(ps)},
                               "slope": sl, "prior_first_share": pr}
        doc.p(_dose_paragraph(f"the first-mentioned object's share of TOR hits ({n}-object captions)", ps, first0,
                              first1, sl, 1 / n, "ComCO's claim that a first-mention bias in training captions "
                              "produces the text encoder's preference for the first-mentioned object", gate, pr))
    doc.h(3, "IOR: which object the image encoder retrieves, against p")
    doc.p("Each held-out image is compared with the single-object renders; shares by measured size rank. The "
          "captions' order bias only reaches the image encoder through contrastive training, so a change in the "
          "largest object's share with p would be the text-to-image leak the ComCO paper proposes. The "
          "present-only form (as the ComCO scripts also report) asks, among the n objects the image holds only, "
          "which single render is most similar (chance 1 / n).")
    ior_counts = sorted({int(n) for r in [*probes.values(), *prior] for n in r.get("ior", {})})
    for n in ior_counts:
        key = str(n)
        roles = ["largest"] + [f"{ORD[k]} largest" for k in range(1, n)]
        large = [summarize(_per_seed(probes, p, seeds, "ior", key, None, 0)) for p in ps]
        raw = [summarize(_per_seed(probes, p, seeds, "ior", key, None, 0, "raw")) for p in ps]
        present = [summarize(_per_seed(probes, p, seeds, "ior_present", key, None, 0, "raw")) for p in ps]
        rows = [[f"{p:g}", pct(large[j]), pct(raw[j]), pct(present[j])] for j, p in enumerate(ps)]
        pr = None
        if prior:
            pr = _prior_stat(prior, "ior", key, None, 0)
            rows.append([PRIOR, pct(pr), pct(_prior_stat(prior, "ior", key, None, 0, "raw")),
                         pct(_prior_stat(prior, "ior_present", key, None, 0, "raw"))])
        if n == 4:
            for label, vals in _published_ior():
                rows.append([f"*published:* {label}", f"{vals[0]:.1f}", "–", "–"])
        rows.append(["*chance*", f"{100 / n:.1f}", "–", f"{100 / n:.1f}"])
        doc.p(f"**{n} objects**:")
        doc.table(["p", "largest object's share (%)", "largest raw top-1 (%)",
                   "largest among the present only (%)"], rows)
        path = dose_plot(fig / f"{oset}-ior-{n}.png", f"IOR largest-object share, {n} objects ({oset})", ps,
                         {"largest object": large, "raw top-1 of largest": raw, "largest, present only": present},
                         1 / n, "%")
        doc.img(path, f"IOR dose-response {n} objects")
        sl = slope(*_xy(probes, ps, seeds, "ior", key, None, 0))
        numbers[f"ior_{n}"] = {"largest_share": {f"{p:g}": large[j] for j, p in enumerate(ps)},
                               "largest_raw": {f"{p:g}": raw[j] for j, p in enumerate(ps)},
                               "largest_present_only": {f"{p:g}": present[j] for j, p in enumerate(ps)},
                               "slope": sl, "roles": roles, "prior_largest_share": pr}
        doc.p(_dose_paragraph(f"the largest object's share of IOR hits ({n} objects)", ps, large[0], large[-1], sl,
                              1 / n, "the proposal that a caption-order bias leaks into the image encoder", gate, pr))
    doc.h(3, "Text sensitivity: how far the caption embedding moves when one object name is replaced")
    doc.p("For each held-out `and` caption the object at mention position k is replaced by an object the scene "
          "does not hold; the table gives the first position's share of the summed distance (1 - cosine) over "
          "positions, and the mean distance at the first and the last position (the raw figures).")
    for n in counts:
        key = str(n)
        share = [summarize(_per_seed(probes, p, seeds, "sens", key, None, 0)) for p in ps]
        d1 = [summarize(_per_seed(probes, p, seeds, "sens", key, None, 0, "raw"), (0.0, 2.0)) for p in ps]
        dl = [summarize(_per_seed(probes, p, seeds, "sens", key, None, n - 1, "raw"), (0.0, 2.0)) for p in ps]
        rows = [[f"{p:g}", pct(share[j]), num(d1[j]), num(dl[j])] for j, p in enumerate(ps)]
        pr = None
        if prior:
            pr = _prior_stat(prior, "sens", key, None, 0)
            rows.append([PRIOR, pct(pr), num(_prior_stat(prior, "sens", key, None, 0, "raw", (0.0, 2.0))),
                         num(_prior_stat(prior, "sens", key, None, n - 1, "raw", (0.0, 2.0)))])
        rows.append(["*uniform*", f"{100 / n:.1f}", "–", "–"])
        doc.p(f"**{n} objects**:")
        doc.table(["p", "1st position's share of the change (%)", "distance, 1st", f"distance, {ORD[n - 1]}"], rows)
        sl = slope(*_xy(probes, ps, seeds, "sens", key, None, 0))
        numbers[f"sensitivity_{n}"] = {"first_share": {f"{p:g}": share[j] for j, p in enumerate(ps)}, "slope": sl,
                                       "prior_first_share": pr}
        doc.p(_dose_paragraph(f"the first position's share of the text-embedding change ({n} objects)", ps, share[0],
                              share[-1], sl, 1 / n, "the view that a first-mention bias makes the text encoder "
                              "weigh the first words most", gate, pr))
    numbers["passing"] = gate[1]
    return numbers


def _xy(probes, ps, seeds, family, n, template, idx):
    xs, ys = [], []
    for p in ps:
        for v in _per_seed(probes, p, seeds, family, n, template, idx):
            if v is not None:
                xs.append(p)
                ys.append(v)
    return xs, ys


def _dose_paragraph(what: str, ps: list, first: dict, last: dict, sl: dict, chance: float, claim: str,
                    gate: tuple[bool, str] = (True, ""), prior: dict | None = None) -> str:
    if not gate[0]:
        return (f"{what[0].upper()}{what[1:]}: too few models passed the competence gates ({gate[1]}), so this "
                f"scale cannot answer the question; it cannot test {claim}.")
    if first.get("mean") is None or last.get("mean") is None:
        return f"{what.capitalize()}: not measured at both ends of p."
    text = (f"From p = {ps[0]:g} to p = {ps[-1]:g}, {what} goes from {pct(first)} to {pct(last)} "
            f"(uniform would be {100 * chance:.1f} %).")
    if prior and prior.get("mean") is not None:
        text += f" The untrained architecture already gives {pct(prior)}."
    if sl.get("mean") is None:
        return text + " Too few models to fit a slope."
    text += (f" A line fitted through all {sl['n']} models gives a slope of {100 * sl['mean']:+.1f} points per unit "
             f"of p, 95 % interval [{100 * sl['lo']:+.1f}, {100 * sl['hi']:+.1f}].")
    if sl["hi"] - sl["lo"] > 2 * WIDE:
        text += " That interval is too wide to say whether p moves it at all at this scale."
    elif sl["lo"] > 0:
        text += f" The interval excludes zero: the data support {claim}."
    elif sl["hi"] < 0:
        text += f" The interval excludes zero but the effect runs against {claim}."
    else:
        text += f" The interval includes zero: at this scale the data do not show {claim}."
    return text


def _published_tor() -> list:
    from comco.report import published_rows

    rows = published_rows("tor", "conditional", 4)
    keep = [r for r in rows if r["label"] in ("CLIP openAI", "CLIP LAION")]
    return [(f"{r['label']} ({r['source']})", [r["values"][k] for k in ("1st", "2nd", "3rd", "4th")]) for r in keep]


def _published_ior() -> list:
    from comco.report import published_rows

    rows = published_rows("ior", "conditional", 4)
    keep = [r for r in rows if r["label"] in ("CLIP openAI", "CLIP LAION")]
    return [(f"{r['label']} ({r['source']})", [r["values"]["largest"]]) for r in keep]


def _finetune_sections(doc, out, fig, oset, s, seeds, info, passing=None, prior=()) -> dict:
    from comco.lab.recipe import SCRATCH_ONLY_GATES

    variants = s["finetune"]["variants"]
    p1 = s["finetune"]["order_bias"]
    base_id = lambda seed: f"probe-scratch-{oset}-p{p1:g}-s{seed}"  # noqa: E731
    models = [("base (scratch, p = %g)" % p1, base_id)] + [
        (v["name"], (lambda name: lambda seed: f"probe-finetune-{oset}-{name}-s{seed}")(v["name"])) for v in variants]
    ran = {label: [_results(out, f(seed)) for seed in seeds] for label, f in models}
    if not any(r for label, rs in ran.items() if label != models[0][0] for r in rs):
        return {}
    # a model below its gates counts nowhere (passing None: no gates, as before them)
    res = {label: [r if passing is None or f(seed) in passing else {} for r, seed in zip(ran[label], seeds)]
           for label, f in models}
    need = s["gates"]["min_passing"]
    numbers: dict = {}
    doc.h(3, "Before and after Long-CLIP and DeBias fine-tuning")
    rows = []
    for v in variants:
        weights = f"{v.get('short_weight', 0.1):g} short : {1 - v.get('short_weight', 0.1):g} long"
        extra = "" if v["kind"] == "longclip" else ", ".join(
            f"{k} {'on' if v.get(k, True) else 'off'}" for k in ("remove_summary", "sample", "pad"))
        rows.append([v["name"], v["kind"], weights, extra or "short caption = summary sentence"])
    doc.p(f"The p = {p1:g} models (one per seed) are fine-tuned on the same images' `long` captions with the same "
          f"steps and seeds ({s['finetune']['steps']} steps, batch {s['finetune']['batch_size']}, lr "
          f"{s['finetune']['lr']:g}, text positions stretched with the first {s['finetune']['keep']} kept):")
    doc.table(["variant", "sampler", "loss weights", "short caption"], rows)
    counts = sorted({n for rs in ran.values() for r in rs for n in r.get("tor", {}).get("and", {})}, key=int)
    n = counts[-1] if counts else None
    cols = [("TOR `and`: 1st share", "tor", "and", 0), ("TOR summary: 1st share", "tor", "summary", 0),
            ("IOR: largest share", "ior", None, 0), ("sensitivity: 1st share", "sens", None, 0)]
    table, per_metric = [], {c[0]: {} for c in cols}
    raw_cols = cols[:3]  # raw top-1 beside the retrieval shares (sensitivity's raw is a distance)
    for label, _ in models:
        row = [label, sum(bool(r) for r in res[label])]
        for cname, fam, tpl, idx in cols:
            vals = [None if metric(r, fam, n, tpl) is None else metric(r, fam, n, tpl)["share"][idx]
                    for r in res[label]]
            per_metric[cname][label] = vals
            row.append(pct(summarize(vals)))
        for _, fam, tpl, idx in raw_cols:
            row.append(pct(summarize([None if metric(r, fam, n, tpl) is None else metric(r, fam, n, tpl)["raw"][idx]
                                      for r in res[label]])))
        table.append(row)
    if prior:
        table.append([PRIOR, "–"] + [pct(_prior_stat(prior, fam, n, tpl, idx)) for _, fam, tpl, idx in cols]
                     + [pct(_prior_stat(prior, fam, n, tpl, idx, "raw")) for _, fam, tpl, idx in raw_cols])
    doc.p(f"**{n}-object test scenes**, in % (mean over the seeds whose model passed the competence gates, 95 % "
          f"t-interval); chance {100 / int(n):.1f} % for a share:")
    doc.table(["model", "seeds passing"] + [c[0] for c in cols] + [c[0].replace("share", "raw top-1")
                                                                   for c in raw_cols], table)
    base_label = models[0][0]
    series = {label: [summarize(per_metric[c[0]][label]) for c in cols] for label, _ in models}
    path = bar_plot(fig / f"{oset}-finetune.png", f"Before / after fine-tuning ({oset}, {n} objects)",
                    [c[0] for c in cols], series, "share (%)", chance=1 / int(n))
    doc.img(path, "before and after fine-tuning")
    sentences = []
    for label, _ in models[1:]:
        for cname, *_ in cols[:2]:
            d = paired(per_metric[cname][label], per_metric[cname][base_label])
            numbers.setdefault(label, {})[cname] = {"value": summarize(per_metric[cname][label]), "change": d}
            if d["n"] < need:
                sentences.append(f"{label}, {cname}: {d['n']} seed(s) where both it and the base passed the gates "
                                 f"(fewer than {need}), so this scale cannot answer whether fine-tuning moves it.")
            else:
                sentences.append(_change_sentence(label, cname, d))
    doc.p("Paired by seed against the base model: " + " ".join(sentences))
    costs, numbers["short_costs"] = [], {}
    for figure in SCRATCH_ONLY_GATES:  # the short-caption gates, not gated for fine-tunes: their change is a result
        short = {label: [r.get("gates", {}).get(figure, {}).get("value") if r else None for r in res[label]]
                 for label, _ in models}
        kept = [f"{label} {pct(summarize(short[label]))} (paired change "
                f"{_signed(paired(short[label], short[base_label]))})" for label, _ in models[1:]]
        costs.append(f"{figure} is {pct(summarize(short[base_label]))} for the base and " + "; ".join(kept))
        numbers["short_costs"][figure] = {label: summarize(v) for label, v in short.items()}
    doc.p("What the long captions cost the short ones (the short `and` captions, gated for the base only): "
          + ". ".join(costs) + ".")
    doc.p(_sampler_paragraph(per_metric, [v["name"] for v in variants], variants, cols, need))
    an = _analyses_section(doc, fig, oset, res, models, s)
    if an:
        numbers["analyses"] = an
    return numbers


def _signed(d: dict) -> str:
    if d.get("mean") is None:
        return "not measured"
    if d.get("lo") is None:
        return f"{100 * d['mean']:+.1f} points, one seed"
    return f"{100 * d['mean']:+.1f} points [{100 * d['lo']:+.1f}, {100 * d['hi']:+.1f}]"


def _change_sentence(label: str, cname: str, d: dict) -> str:
    if d.get("mean") is None:
        return f"{label}, {cname}: not measured."
    if d.get("lo") is None:
        return f"{label} changes {cname} by {100 * d['mean']:+.1f} points (one seed, no interval)."
    if d["lo"] > 0:
        how = "up, and the paired interval excludes zero"
    elif d["hi"] < 0:
        how = "down, and the paired interval excludes zero"
    else:
        how = "the paired interval includes zero"
    return (f"{label} changes {cname} by {100 * d['mean']:+.1f} points [{100 * d['lo']:+.1f}, "
            f"{100 * d['hi']:+.1f}] ({how}).")


def _sampler_paragraph(per_metric, names, variants, cols, need: int = 2) -> str:
    by_name = {v["name"]: v for v in variants}
    lc = [n for n in names if by_name[n]["kind"] == "longclip"]
    db = [n for n in names if by_name[n]["kind"] == "debias"]
    if not lc or not db:
        return "Only one sampler was run, so samplers cannot be compared."
    a, b = lc[0], db[0]
    few = [x for x in (a, b) if sum(v is not None for v in per_metric[cols[0][0]][x]) < need]
    if few:
        return (f"Long-CLIP ({a}) against DeBias ({b}): fewer than {need} models of {', '.join(few)} passed the "
                "competence gates, so this scale cannot answer which sampler moves the biases more.")
    parts = [f"Long-CLIP ({a}) against DeBias ({b}):"]
    for cname, *_ in cols[:2]:
        parts.append(compare(b, summarize(per_metric[cname][b]), a, summarize(per_metric[cname][a]), cname))
    nopad = [n for n in db if by_name[n].get("pad", True) is False]
    if nopad:
        parts.append("Padding: " + compare(b, summarize(per_metric[cols[1][0]][b]), nopad[0],
                                           summarize(per_metric[cols[1][0]][nopad[0]]), cols[1][0]))
    weights = [n for n in db if n != b and by_name[n].get("short_weight", 0.1) != by_name[b].get("short_weight", 0.1)
               and by_name[n].get("pad", True) == by_name[b].get("pad", True)]
    if weights:
        parts.append("Loss weights: " + compare(b, summarize(per_metric[cols[1][0]][b]), weights[0],
                                                summarize(per_metric[cols[1][0]][weights[0]]), cols[1][0]))
    return " ".join(parts)


ANALYSIS_TITLES = {"padding": ('"This is a photo." prepended k times (text-to-image R@1)', "t2i"),
                   "order": ("First-2 / Swap-2 / First-only (image-to-text R@1)", "i2t"),
                   "summary": ("Summary Keep / Move-to-4th / Remove (text-to-image R@1)", "t2i")}


def _analyses_section(doc, fig, oset, res, models, s) -> dict:
    from comco.report import published_analysis

    names = [n for n in s["probe"]["analyses"] if any(r.get("analyses", {}).get(n) for rs in res.values() for r in rs)]
    if not names:
        if s["probe"]["analyses"]:  # asked for, but every model that ran them is below its gates
            doc.h(3, "DeBias analyses on held-out synthetic long captions")
            doc.p("No fine-tuned model passed the competence gates, so this scale cannot answer what the DeBias "
                  "analyses (summary Keep / Move / Remove, sentence order, prefix padding) show.")
        return {}
    numbers: dict = {}
    doc.h(3, "DeBias analyses on held-out synthetic long captions")
    doc.p("Retrieval among the held-out test images with their `long` captions (a summary sentence naming every "
          "object, then one sentence per object), rewritten as the DeBias-CLIP paper does. R@1 in %, mean over "
          "seeds with a 95 % t-interval. Published rows are DOCCI figures of ViT-B/16 models, for orientation only.")
    for name in names:
        title, direction = ANALYSIS_TITLES[name]
        variants = None
        rows, series = [], {}
        for label, _ in models:
            entries = [r.get("analyses", {}).get(name) for r in res[label]]
            entries = [e for e in entries if e]
            if not entries:
                continue
            variants = variants or list(entries[0]["variants"])
            stats = [summarize([e["variants"][v][direction]["value"] for e in entries]) for v in variants]
            series[label] = stats
            rows.append([label] + [pct(x) for x in stats])
            numbers.setdefault(name, {})[label] = {v: st for v, st in zip(variants, stats)}
        for ref in published_analysis("docci", name):
            rows.append([f"*published:* {ref['model']} (DeBias-CLIP paper, DOCCI)"] +
                        [f"{100 * ref['r1'][v]:.1f}" if v in ref["r1"] else "–" for v in variants])
        doc.p(f"**{title}**")
        doc.table(["model"] + variants, rows)
        path = bar_plot(fig / f"{oset}-analysis-{name}.png", f"{title} ({oset})", variants, series, "R@1 (%)")
        doc.img(path, f"analysis {name}")
        doc.p(_analysis_paragraph(name, variants, series))
    claims = _claims_table(doc, res, models, s)
    if claims:
        numbers["claims"] = claims
    return numbers


# The DeBias-CLIP paper's claims as gaps between caption variants of one model: each gap
# is a cost a robust model does not pay (analysis, direction, variant a, variant b).
CLAIMS = (("less reliance on the summary sentence", "summary", "t2i", "keep", "remove",
           "Keep - Remove"),
          ("robustness to sentence order", "order", "i2t", "first-2", "swap-2", "First-2 - Swap-2"),
          ("robustness to early filler tokens", "padding", "t2i", "k=0", "k=5", "k = 0 - k = 5"))


def _claims_table(doc, res, models, s) -> dict:
    """Which of the DeBias paper's claims the lab reproduces: each claim's gap per seed,
    paired DeBias - Long-CLIP (the claim holds where the interval lies below zero)."""
    by_name = {v["name"]: v for v in s["finetune"]["variants"]}
    labels = [label for label, _ in models]
    lc = next((n for n in labels if by_name.get(n, {}).get("kind") == "longclip"), None)
    db = next((n for n in labels if by_name.get(n, {}).get("kind") == "debias"), None)
    if lc is None or db is None:
        return {}
    need = s["gates"]["min_passing"]

    def gap(label, name, direction, a, b):
        out = []
        for r in res[label]:
            v = r.get("analyses", {}).get(name, {}).get("variants", {})
            out.append(v[a][direction]["value"] - v[b][direction]["value"] if a in v and b in v else None)
        return out

    rows, numbers, verdicts = [], {}, []
    for claim, name, direction, a, b, what in CLAIMS:
        gaps = {label: gap(label, name, direction, a, b) for label in labels}
        if not any(x is not None for x in gaps[db]):
            continue
        d = paired(gaps[db], gaps[lc])
        if d["n"] < need or d.get("lo") is None:
            verdict = f"cannot answer ({d['n']} seed(s) where both passed)"
        elif d["hi"] < 0:
            verdict = "reproduced"
        elif d["lo"] > 0:
            verdict = "**opposite**"
        else:
            verdict = "not resolved (interval includes 0)"
        band = "–" if d.get("lo") is None else f"{100 * d['mean']:+.1f} [{100 * d['lo']:+.1f}, {100 * d['hi']:+.1f}]"
        rows.append([claim, f"{what} ({direction} R@1)"] + [pct(summarize(gaps[label], (-1.0, 1.0)))
                                                          for label in labels] + [band, verdict])
        numbers[claim] = {"gaps": {label: summarize(gaps[label], (-1.0, 1.0)) for label in labels},
                          "debias_minus_longclip": d, "verdict": verdict.strip("*")}
        verdicts.append(f"{claim}: {verdict.strip('*')}")
    if not rows:
        return {}
    doc.p("**The DeBias-CLIP paper's claims.** Each claim is a gap between two caption variants of one model, in "
          "points of R@1 (a model that does not lean on the summary, the sentence order or the first tokens pays "
          "no gap); means over passing seeds with a 95 % t-interval, and the gap of DeBias minus that of "
          "Long-CLIP paired by seed. A claim is reproduced where that paired interval lies below zero.")
    doc.table(["claim", "gap"] + labels + [f"{db} - {lc}, paired", "verdict"], rows)
    doc.p("In short: " + "; ".join(verdicts) + ".")
    return numbers


def _analysis_paragraph(name: str, variants: list, series: dict) -> str:
    parts = []
    for label, stats in series.items():
        if name == "padding":
            parts.append(compare("k = 0", stats[0], f"k = {len(stats) - 1}", stats[-1],
                                 f"for {label}, R@1"))
        elif name == "order":
            parts.append(compare("first-2", stats[0], "swap-2", stats[1], f"for {label}, R@1"))
        else:
            parts.append(compare("keep", stats[0], "remove", stats[-1], f"for {label}, R@1"))
    lead = {"padding": "Does filler text in front of the caption cost retrieval (the paper's early-token bias)?",
            "order": "Does swapping the first two sentences cost retrieval?",
            "summary": "How much of retrieval rests on the summary sentence?"}[name]
    return lead + " " + " ".join(parts)


def _labclip_section(doc, fig, oset, s, info) -> dict:
    p_lab = s["labclip"]["order_bias"]
    runs = [(seed, info.get(f"labclip-{oset}-s{seed}", {}).get("summary")) for seed in s["labclip"]["seeds"]]
    runs = [(seed, r) for seed, r in runs if r]
    if not runs:
        return {}
    doc.h(3, "LABCLIP: attribute binding before and after the text-embedding map")
    # a base counts only if it learnt the colours: both uni-modal probes at the gate
    lab = s["labclip"]
    need = s["gates"]["colour_probe"]
    base_rows, kept = [], []
    for seed, r in runs:
        before_probe = r["binding_probe"]["before"]
        vals = {role: before_probe[role] for role in ("image probe", "text probe")}
        ok = all(v.get("value") is not None and v["value"] >= need for v in vals.values())
        base_rows.append([f"colour base, seed {seed}"] + [_cell(v) for v in vals.values()]
                         + [_cell(before_probe["cross-modal"]), "pass" if ok else "**fail**"])
        if ok:
            kept.append(r)
    chance_img = runs[0][1]["binding_probe"]["before"]["image probe"].get("chance")
    doc.p(f"The LABCLIP base: a scratch CLIP of the same size trained for {lab['base_steps']} steps on the "
          f"`attributes` captions (\"a red X and a blue Y\", largest object named first with p = {p_lab:g}) of "
          f"{lab['base_images']} colour images of its own. Its gate: both uni-modal colour probes (a linear probe "
          f"per object reads the object's colour from the image embedding / from the caption embedding, on "
          f"combinations held out from the probe's training) at >= {100 * need:g} %, against a majority-colour "
          f"baseline of {'–' if chance_img is None else f'{100 * chance_img:.1f}'} %.")
    doc.table(["base", "image probe", "text probe", "cross-modal binding", "gate"], base_rows)
    runs = kept
    if not runs:
        doc.p("No LABCLIP base passed its colour gate, so this scale cannot answer whether LABCLIP restores "
              "attribute binding.")
        return {"passing": 0}
    before = summarize([r["binding_before"].get("test") for r in runs])
    after = summarize([r["binding_after"].get("test") for r in runs])
    probe_rows, series = [], {}
    roles = ["image probe", "text probe", "cross-modal"]
    for when in ("before", "after"):
        stats = [summarize([r["binding_probe"][when][role]["value"] for r in runs]) for role in roles]
        series[f"{when} LABCLIP"] = stats
        probe_rows.append([f"{when} LABCLIP"] + [pct(x) for x in stats])
    probe_rows.append(["*chance*", "–" if chance_img is None else f"{100 * chance_img:.1f} (majority colour)", "–",
                       "50.0"])
    probe_rows.append(["*published:* CLIP ViT-B/32, CLEVR (LABCLIP, secondary)", "96.0", "100.0", "58.0"])
    probe_rows.append(["*published:* LABCLIP ViT-B/32, CLEVR (secondary)", "–", "–",
                       f"{100 * PUBLISHED_LABCLIP_BINDING:.1f}"])
    doc.p(f"A linear map on the base's text embeddings (the base frozen), trained for {lab['steps']} steps on "
          f"another `--colors` dataset of {lab['images']} images with attribute-swapped captions as hard "
          f"negatives; {len(runs)} base(s) that passed. Held-out binding accuracy (image "
          f"closer to its caption than to the colour-swapped one; chance 50 %): before {pct(before)}, after "
          f"{pct(after)}.")
    doc.table(["model", "image probe (colour per object)", "text probe", "cross-modal (all images)"], probe_rows)
    path = bar_plot(fig / f"{oset}-labclip.png", f"LABCLIP binding ({oset})", roles, series, "accuracy (%)")
    doc.img(path, "LABCLIP binding")
    d = paired([r["binding_after"].get("test") for r in runs], [r["binding_before"].get("test") for r in runs])
    # the map is trained on each base, so before and after are paired by base
    text = (f"Held-out cross-modal binding is {pct(after)} after the map against {pct(before)} before. "
            + _change_sentence("LABCLIP", "held-out binding", d))
    if after.get("mean") is not None:
        restored = after.get("lo") is not None and after["lo"] >= RESTORED_BINDING
        text += (" Binding is restored" if restored else " Binding is not restored") + (
            f" (LABCLIP reports {100 * PUBLISHED_LABCLIP_BINDING:.0f} % on CLEVR with ViT-B/32; restored here means "
            f"the interval after the map lies above {100 * RESTORED_BINDING:.0f} %).")
    img = series["before LABCLIP"][0]
    if img.get("mean") is not None and chance_img is not None:
        text += (f" Uni-modally, the image probe reads each object's colour at {pct(img)} against a majority-colour "
                 f"baseline of {100 * chance_img:.1f} %")
        text += (", so the image embedding does carry the binding." if img.get("lo") is not None
                 and img["lo"] > chance_img else ", which does not clearly beat the baseline.")
    doc.p(text)
    return {"before": before, "after": after, "change": d,
            "probes": {k: dict(zip(roles, v)) for k, v in series.items()}}


def _what_was_run(doc, out: Path, recipe: dict, stages: list, info: dict) -> None:
    from importlib import metadata

    doc.h(2, "What was run")
    s = recipe["settings"]
    versions = {}
    for dist in ("bpy", "torch", "open_clip_torch", "numpy", "matplotlib"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    doc.p(f"Recipe `{recipe['name']}` at scale `{recipe['scale']}` (the file is copied to `recipe.toml`); "
          f"comco {__version__}, Python {platform.python_version()}, "
          + ", ".join(f"{k} {v}" for k, v in versions.items()) + f"; {platform.platform()}.")
    doc.p(f"Stages: {', '.join(recipe['stages'])}. "
          f"Order bias p: {', '.join(f'{p:g}' for p in s['data']['order_bias'])}. "
          f"Training seeds: {', '.join(map(str, s['scratch']['seeds']))}; data seed {s['data']['seed']}, test seed "
          f"{s['data']['test_seed']}; probe/bootstrap seed {s['probe']['seed']} ({s['probe']['bootstrap']} resamples). "
          f"Renders: preset `{s['render']['preset']}`, {s['render']['resolution']} px. Scratch CLIP: "
          f"{'conv' if s['scratch'].get('tower') == 'conv' else 'ViT'} image tower, width "
          f"{s['scratch']['width']}, {s['scratch']['layers']} layers, patch {s['scratch']['patch_size']}, context "
          f"{s['scratch']['context_length']}, {s['scratch']['steps']} steps of batch {s['scratch']['batch_size']} "
          f"(lr {s['scratch']['lr']:g}) on captions {', '.join(s['scratch']['captions'])}.")
    rows = []
    for st in stages:
        if st.kind in ("render", "captions"):
            sm = info.get(st.id, {}).get("summary", {})
            if sm:
                rows.append([st.id, sm.get("images"), sm.get("singles", "–"), sm.get("config_hash"),
                             sm.get("scenes_sha256")])
    doc.p("Datasets (`config_hash` as in each dataset.json; `scenes sha256` of scenes.jsonl, first 16 hex digits):")
    doc.table(["dataset", "images", "singles", "config_hash", "scenes sha256"], rows)
    by_kind = defaultdict(lambda: [0, 0.0])
    rows = []
    for st in stages:
        i = info.get(st.id)
        if not i:
            continue
        by_kind[st.kind][0] += 1
        by_kind[st.kind][1] += i["seconds"]
        rows.append([st.id, st.kind, f"{i['seconds']:.1f}", i.get("threads", "–"),
                     time.strftime("%Y-%m-%d %H:%M", time.gmtime(i.get("finished", 0)))])
    done = [i for i in info.values() if i]
    span = (max(i["finished"] for i in done) - min(i["finished"] - i["seconds"] for i in done)) if done else 0.0
    doc.p("Wall time per kind of stage (seconds of each stage summed; stages of one kind ran side by side where the "
          "cores allowed, so the sum exceeds the elapsed time):")
    doc.table(["kind", "stages", "seconds (sum)"],
              [[k, v[0], f"{v[1]:.1f}"] for k, v in by_kind.items()])
    doc.p(f"From the start of the first stage to the end of the last one before the report: {span / 60:.1f} minutes "
          "(elapsed; if the stages were computed over several runs this includes the time between them; "
          "`runs.jsonl` logs every run).")
    doc.p("Every stage (seconds, torch threads, when it finished, UTC):")
    doc.table(["stage", "kind", "seconds", "threads", "finished"], rows)
