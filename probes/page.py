"""What `comco probe` writes: results.json, the per-probe tables and figures, and one page
(report.md, report.html) that answers the first question first.

The page opens with a headline per model: how first-mention biased (TOR, the share of
the first-mentioned object) and how large-object biased (IOR, the share of the largest
object) it is, each with its interval, chance level and the ComCO paper's row for the
same weights (marked as published, never in place of a measured number); with several
models a leaderboard per bias index; then each probe's combined figure and tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from comco.io import write_json, write_jsonl, write_text
from comco.probes.report import (
    ALL_COUNTS,
    MIN_TRIALS,
    TOO_FEW,
    Dashes,
    base_probe,
    cell,
    cells_note,
    csv_text,
    figure_path,
    markdown,
    probe_figure,
    probe_note,
    readable,
    table_block,
    title,
    units,
)
from comco.probes.report import tables as probe_tables
from comco.probes.retrieval import NO_PREFERENCE, TIE_RULE
from comco.report.document import Doc
from comco.report.published import COMCO, published_biases, published_model

ANSWERS = "answers.jsonl"  # a generative VLM's answers (image, prompt, raw answer, parsed names)
HEADLINE_COUNT = 4  # the published rows' object count: the headline uses it where the data has it
HEADLINE_TEMPLATE = "and"  # ComCO's "X and Y and Z" captions, when the run has them


@dataclass(frozen=True)
class BiasIndex:
    key: str  # "first" / "largest": the published_biases field
    name: str
    probe: str
    role: str
    says: str


INDICES = (
    BiasIndex("first", "first-mention bias", "tor", "1st", "TOR: the first-mentioned object's share"),
    BiasIndex("largest", "large-object bias", "ior", "largest", "IOR: the largest object's share"),
)
# With --text-aggregate: the first-mention bias once more, on per-object phrase means (the mitigation)
AGGREGATED_INDICES = (
    BiasIndex("first per-object", "first-mention bias, per-object texts", "tor-per-object", "1st",
              "TOR on per-object phrase means: the first-mentioned object's share"),
)


def indices(results: dict) -> tuple[BiasIndex, ...]:
    """The bias indices the run's headline shows."""
    return INDICES + (AGGREGATED_INDICES if results.get("options", {}).get("text_aggregate") else ())


def headline_group(groups: list[dict]) -> dict | None:
    """The group a headline is read from: 4 objects when present (else the most), the `and` template when present;
    over the whole dataset (a --by cell's groups are read by the cells' section)."""
    counted = [g for g in groups if g.get("n_objects") and "cell" not in g]
    if not counted:
        return None
    counts = {g["n_objects"] for g in counted}
    n = HEADLINE_COUNT if HEADLINE_COUNT in counts else max(counts)
    at = [g for g in counted if g["n_objects"] == n]
    return next((g for g in at if g.get("template") == HEADLINE_TEMPLATE), at[0])


def _role(group: dict, metric: str, role: str) -> dict | None:
    return next((s for s in group["metrics"].get(metric, []) if s["role"] == role), None)


def headline(results: dict) -> dict[str, dict[str, dict | None]]:
    """model label -> index key -> {"group", "share" (conditional stat), "raw" (unconditional stat)} or None."""
    out = {}
    for m in results["models"]:
        row = {}
        for ix in indices(results):
            g = headline_group(results["probes"].get(ix.probe, {}).get(m["label"], []))
            share = g and _role(g, "conditional", ix.role)
            row[ix.key] = None if not share else {"group": f"{_probe_label(ix.probe)}: {g['key']}", "share": share,
                                                  "raw": _role(g, "unconditional", ix.role)}
        out[m["label"]] = row
    return out


def _probe_label(probe: str) -> str:
    """"tor" -> "TOR", "tor-per-object" -> "TOR (per-object texts)"."""
    base, agg = base_probe(probe)
    return base.upper() + (f" ({agg} texts)" if agg else "")


def _value(stat: dict | None) -> float:
    v = None if stat is None else stat.get("acc")
    return float("nan") if v is None else float(v)


def leaderboard(head: dict, key: str) -> list[tuple[str, dict | None]]:
    """(model, its headline entry) from the most biased down; models without a number (or with too
    few trials to read one) last, in run order."""
    entries = list(head.items())
    ranked = [e for e in entries if e[1][key] and readable(e[1][key]["share"])]
    ranked.sort(key=lambda e: -_value(e[1][key]["share"]))
    return [(m, h[key]) for m, h in ranked] + [(m, h[key]) for m, h in entries if (m, h) not in ranked]


def _chance(stat: dict | None, dashes: Dashes, why: str) -> str:
    c = None if stat is None else stat.get("chance")
    return dashes.dash(why) if c is None else f"{100 * c:.1f}"


def asked(results: dict, probe: str) -> bool:
    """The run measured the probe, or was asked for it (every probe when --probes was not given)."""
    wanted = results.get("options", {}).get("probes")
    return not wanted or probe in wanted or probe in results["probes"]


def _missing(results: dict, ix: BiasIndex) -> str:
    if results.get("options", {}).get("text_only") and not ix.probe.startswith("tor"):
        return "not measured (--text-only: no images)"
    why = results["skipped"].get(ix.probe)
    if why:
        return f"not measured ({ix.probe}: {why})"
    if ix.probe in results["probes"]:
        return f"no {ix.role} share ({ix.probe} kept no query whose top-n are the objects present)"
    return f"not measured ({ix.probe} not run)"


def _headline_section(doc: Doc, results: dict, head: dict) -> None:
    shown = [ix for ix in indices(results) if asked(results, ix.probe)]
    doc.h(2, "Headline")
    if shown:
        _bias_table(doc, results, head, shown)
    if "pairs" in results["probes"]:
        _pairs_headline(doc, results)
    if "mention" in results["probes"]:
        _mention_headline(doc, results)


def _mention_headline(doc: Doc, results: dict) -> None:
    from comco.probes.mention import POOLED_SMALL

    doc.p("**Generative VLMs** (the mention probe, every answer in `answers.jsonl`): how often the largest object "
          "is the first present object an answer names (chance 1 / n), and how often an answer names the largest "
          "object and each small one (recall). % with a bootstrap 95 % interval over images.")
    rows, dashes = [], Dashes()
    for model, groups in results["probes"]["mention"].items():
        for g in groups:
            first = _role(g, "first named", "largest")
            rows.append([model, g["key"], cell(first, dashes, unit="answers naming a present object"),
                         _chance(first, dashes, "no answer named a present object"),
                         cell(_role(g, "recall", "largest"), dashes, unit="images"),
                         cell(_role(g, "recall", POOLED_SMALL), dashes, unit="small objects"), str(g["queries"])])
    doc.table(["model", "prompt, objects", "largest named first % [95 % CI]", "chance",
               "recall: largest % [95 % CI]", "recall: small (pooled) % [95 % CI]", "images"], rows)
    if dashes.reasons:
        doc.p(dashes.note())


def _bias_table(doc: Doc, results: dict, head: dict, indices: list[BiasIndex]) -> None:
    published = {p["label"]: p for p in published_biases()}
    doc.p("**First-mention bias**: among TOR queries whose top-n retrieved names are exactly the n objects the "
          "caption mentions (the ComCO paper's conditional metric), the share whose top-1 is the first-mentioned "
          "object; **large-object bias**: the same for IOR (image against single-object renders) and the largest "
          "object by measured pixels. *Raw top-1* is that object's top-1 rate over all queries. % with a bootstrap "
          "95 % interval over images (over tuples with --text-only); chance is 1 / n for a share and 1 / gallery for a "
          f"raw rate. Ties are ties: {TIE_RULE}; a cell whose queries are mostly such ties reads "
          f"\"{NO_PREFERENCE}\" instead of a number."
          + (" The *per-object texts* row is the same first-mention share with every text embedded as the "
             "mean of its objects' phrase embeddings (--text-aggregate per-object, ComCO's mitigation)."
             if any(ix in AGGREGATED_INDICES for ix in indices) else ""))
    rows, notes, dashes = [], [], Dashes()
    for m in results["models"]:
        match = published_model(m["name"], m.get("pretrained"), m.get("identity", ""))
        for ix in indices:
            h = head[m["label"]][ix.key]
            ref = published.get(match, {}).get(ix.key) if match else None
            ref_cell = (f"*published:* {match} {ref:.2f}" if ref is not None else dashes.dash(
                f"the ComCO paper has no {ix.name} row for {match}" if match else
                "the ComCO paper has no row for these weights"))
            if h is None:
                gone = dashes.dash("not measured: the reason is in 'measured on'")
                rows.append([m["label"], ix.name, _missing(results, ix), gone, gone, gone, gone, gone, ref_cell])
                continue
            share, raw = h["share"], h["raw"]
            queries = raw["n"] if raw else None
            rows.append([m["label"], ix.name, h["group"], cell(share, dashes, of=queries),
                         _chance(share, dashes, "chance is 1 / n over the kept queries, and none was kept"),
                         cell(raw, dashes, missing="no raw top-1 rate in this group", unit="queries"),
                         _chance(raw, dashes, "no raw chance in this group"),
                         f"{share['n']} of {queries if queries is not None else dashes.dash('queries not counted')}",
                         ref_cell])
        if m.get("pretrained") in (None, "", "none") and not m["name"].startswith(("hf:", "ckpt:")):
            notes.append(f"{m['label']} has random weights: its numbers are the architecture's prior, not a "
                         "trained model's bias.")
    doc.table(["model", "bias", "measured on", "share % [95 % CI]", "chance", "raw top-1 % [95 % CI]", "raw chance",
               "n (kept of queries)", "published (ComCO, 4 objects)"], rows)
    doc.p(" ".join(x for x in (dashes.note(), "The published column is the ComCO paper's row for the same weights, "
          "matched by where the weights come "
          "from (the tag `openai` -> CLIP openAI, tags starting `laion` -> CLIP LAION, `datacomp` -> CLIP "
          "Datacomp; Roberta, SigLIP, NegCLIP and SugarCrepe by name); the paper does not state the architecture, "
          "and its IOR rows rest on a few dozen images. It is a reference beside the measured number, never a "
          "measurement.", *notes) if x))
    doc.h(3, "Published models (reference only)")
    doc.p(f"{COMCO}: TOR on 4-object captions, IOR on 1 large + 3 small objects; conditional shares, %.")
    refs = Dashes()
    gone = "the paper reports no number for this bias and model"
    doc.table(["published model", "first-mention share (TOR 1st)", "large-object share (IOR largest)"],
              [[f"*published:* {p['label']}", refs.dash(gone) if p["first"] is None else f"{p['first']:.2f}",
                refs.dash(gone) if p["largest"] is None else f"{p['largest']:.2f}"] for p in published.values()])
    if refs.reasons:
        doc.p(refs.note())


def pair_headline_groups(groups: list[dict]) -> list[dict]:
    """Per factor the group over all its object counts (or its only count), in run order."""
    by_factor: dict[str, list[dict]] = {}
    for g in groups:
        if "cell" in g:
            continue
        by_factor.setdefault(g["factor"], []).append(g)
    return [next((g for g in gs if g["n_objects"] is None), gs[0]) for gs in by_factor.values()]


def _pairs_headline(doc: Doc, results: dict) -> None:
    from comco.probes.pairs import CHANCE, ROLES

    chance = ", ".join(f"{r} {100 * CHANCE[r]:.3g}" for r in ROLES if r in CHANCE)
    doc.p(f"**Counterfactual pairs**: the pair probe's scores ({', '.join(ROLES)}) per factor, over every object "
          f"count (tables per count below): % with a bootstrap 95 % interval over pairs; chance {chance}.")
    rows, dashes = [], Dashes()
    for model, groups in results["probes"]["pairs"].items():
        for g in pair_headline_groups(groups):
            stats = {s["role"]: s for s in g["metrics"]["scores"]}
            where = g["key"].removesuffix(f", {ALL_COUNTS}")
            rows.append([model, where, *(cell(stats.get(r), dashes) for r in ROLES),
                         f"{g['queries']} trials, {g['pairs']} pairs"])
    doc.table(["model", "factor (captions)", *(f"{r} % [95 % CI]" for r in ROLES), "n"], rows)
    if dashes.reasons:
        doc.p(dashes.note())


def _cells_section(doc: Doc, results: dict) -> None:
    """--by: each bias index per cell of the factor, with its interval (the too-few rule per cell)."""
    by = results["by"]
    doc.h(2, f"By {by['factor']}")
    doc.p(f"Every probe ran on each cell's scenes as well as on all of them (the tables below carry the cell in "
          f"their names). Here the headline's indices per cell: share % [95 % CI] over the cell's images; a cell "
          f"with fewer than {MIN_TRIALS} kept queries shows its count. Cells (scenes): "
          + ", ".join(f"{label} ({n})" for label, n in by["cells"].items()) + ".")
    rows, dashes = [], Dashes()
    for m in results["models"]:
        for ix in INDICES:
            if not asked(results, ix.probe):
                continue
            groups = results["probes"].get(ix.probe, {}).get(m["label"], [])
            for label in by["cells"]:
                g = headline_group([{k: v for k, v in g.items() if k != "cell"} for g in groups
                                    if g.get("cell") == label])
                share = g and _role(g, "conditional", ix.role)
                raw = g and _role(g, "unconditional", ix.role)
                if not share:
                    gone = dashes.dash(f"{ix.probe} measured nothing in this cell")
                    rows.append([m["label"], ix.name, label, gone, gone, gone])
                    continue
                queries = raw["n"] if raw else None
                rows.append([m["label"], ix.name, label, cell(share, dashes, of=queries),
                             cell(raw, dashes, missing="no raw top-1 rate in this cell", unit="queries"),
                             f"{share['n']} of {queries}"])
    doc.table(["model", "bias", by["factor"], "share % [95 % CI]", "raw top-1 % [95 % CI]", "n (kept of queries)"],
              rows)
    if dashes.reasons:
        doc.p(dashes.note())


def _leaderboard_section(doc: Doc, head: dict) -> None:
    doc.h(2, "Leaderboard")
    doc.p("The models of this run ranked by each bias index (most biased first; a model without the number comes "
          "last). Overlapping intervals mean the order between those models is not settled.")
    for ix in INDICES:
        doc.h(3, f"By {ix.name} ({ix.says})")
        rows, board, dashes = [], leaderboard(head, ix.key), Dashes()
        values = [_value(h["share"]) if h and readable(h["share"]) else math.nan for _, h in board]
        for (model, h), v in zip(board, values):
            rank = "–" if math.isnan(v) else 1 + sum(w > v for w in values if not math.isnan(w))  # ties share a rank
            if h is None:
                gone = dashes.dash("not measured (see the headline)")
                rows.append([gone, model, gone, gone, gone])
                continue
            queries = h["raw"]["n"] if h["raw"] else None
            if rank == "–":
                rank = dashes.dash("not ranked: no share, or too few kept queries to read one")
            rows.append([rank, model, cell(h["share"], dashes, of=queries),
                         cell(h["raw"], dashes, missing="no raw top-1 rate in this group", unit="queries"),
                         h["group"]])
        doc.table(["rank", "model", "share % [95 % CI]", "raw top-1 % [95 % CI]", "measured on"], rows)
        if dashes.reasons:
            doc.p(dashes.note())


def page(results: dict, tabs: dict[str, list[dict]], figures: dict[str, Path]) -> Doc:
    """The page as a document: headline, leaderboard (several models), each probe's figure and tables."""
    ds = results["dataset"]
    doc = Doc()
    doc.h(1, f"comco probe: {ds.get('root') or 'text-only ' + str(ds.get('object_set'))}")
    doc.p(f"Dataset `{ds.get('root') or '-'}` (hash {ds.get('hash') or '-'}, {_counted(ds)}, "
          f"gallery of {ds.get('gallery', '-')} names); seed {results['seed']}, {results['n_boot']} bootstrap "
          f"resamples; models: " + ", ".join(f"`{m['label']}`" for m in results["models"]) + ".")
    doc.p(TOO_FEW)  # the minimum, stated once for the page
    doc.toc()
    head = headline(results)
    _headline_section(doc, results, head)
    if results.get("by"):
        _cells_section(doc, results)
    if len(results["models"]) > 1:
        _leaderboard_section(doc, head)
    for probe, probe_tabs in tabs.items():
        doc.h(2, title(probe))
        doc.p(f"{cells_note(probe)} Tables as CSV: `{probe}.csv`.")
        if probe_note(probe):
            doc.p(probe_note(probe))
        doc.img(figures.get(probe), f"{probe}: every table of the probe, object counts as panels")
        # the figure shows them all; the tables themselves unfold on a click (and stay in PROBE.md)
        doc.fold(f"{len(probe_tabs)} {'table' if len(probe_tabs) == 1 else 'tables'}, one per group and metric "
                 f"(also in {probe}.md and {probe}.csv)")
        for t in probe_tabs:
            header, rows, notes = table_block(probe, t)
            doc.h(3, f"{t['group']} - {t['metric']}")
            doc.table(header, rows)
            if notes:
                doc.p(notes)
        doc.end_fold()
    if results["skipped"]:
        doc.h(2, "Skipped")
        doc.p("; ".join(f"{k}: {why}" for k, why in results["skipped"].items()) + ".")
    if advice := size_advice(results, tabs):
        doc.p(advice)  # the page's last line
    return doc


def size_advice(results: dict, tabs: dict[str, list[dict]]) -> str | None:
    """One line when most measured cells are too few to read: how large a dataset (or how many
    --tuples for --text-only) would bring the typical too-few cell to MIN_TRIALS resampled units,
    assuming a cell's units grow with the dataset. None when most cells can be read."""
    counts = [units(s) for ts in tabs.values() for t in ts for by_role in t["rows"].values()
              for s in by_role.values() if s is not None and not math.isnan(_value(s))]
    few = sorted(c for c in counts if c is not None and c < MIN_TRIALS)
    if not counts or 2 * len(few) <= len(counts):
        return None
    factor = MIN_TRIALS / max(1, few[len(few) // 2])  # the median too-few cell reaches the minimum
    ds, opts = results["dataset"], results.get("options") or {}
    if ds.get("root") is None and opts.get("tuples"):
        want = math.ceil(opts["tuples"] * factor / 10) * 10
        how = f"run with about --tuples {want} (this run: {opts['tuples']})"
    else:
        scenes = ds.get("scenes", ds.get("records", 0)) or 0
        want = math.ceil(max(scenes, 1) * factor / 50) * 50
        how = f"render about {want} scenes (`comco render --n {want}`; this dataset has {scenes})"
    return (f"{len(few)} of {len(counts)} cells are too few to read (under {MIN_TRIALS} resampled units); to read "
            f"most of them, {how}.")


def _counted(ds: dict) -> str:
    """Scenes and pair variants named as such ("8 scenes, 48 variants"), not one count of records."""
    if "scenes" not in ds:  # results.json from before the split: only the records are known
        return f"{ds.get('records', 0)} records"
    variants = f", {ds['variants']} pair variants" if ds.get("variants") else ""
    return f"{ds['scenes']} scenes{variants}"


def write_reports(out: Path, results: dict, plots: bool = True) -> list[Path]:
    """results.json, a Markdown and a CSV table per probe, one PNG figure per probe (unless `plots`
    is False) and the page, report.md and report.html.

    Args:
        out: the output folder.
        results: what run_probes returned.
        plots: draw the figures.
    Returns the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "results.json"]
    answers = results.get("answers")
    if answers is not None:  # a VLM's every answer, one JSON line each, beside the tables
        written.append(out / ANSWERS)
        write_jsonl(written[-1], answers)
        results = {**{k: v for k, v in results.items() if k != "answers"}, "answers": ANSWERS}
    write_json(written[0], results, indent=1, sort_keys=False, default=_jsonable, allow_nan=True)
    tabs, figures = probe_tables(results), {}
    for probe, probe_tabs in tabs.items():
        for ext, text in (("md", markdown(probe, probe_tabs, results)), ("csv", csv_text(probe, probe_tabs))):
            written.append(write_text(out / f"{probe}.{ext}", text))
        if plots:
            figures[probe] = probe_figure(figure_path(out, probe), probe, probe_tabs)
            written.append(figures[probe])
    doc = page(results, tabs, figures)
    written.append(write_text(out / "report.md", doc.markdown(out)))
    title = "comco probe: " + ", ".join(m["label"] for m in results["models"])
    written.append(write_text(out / "report.html", doc.html(title)))
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
