"""The first results table: every probed model's competence gates (comco.probes.gates);
a model below a gate is listed there and counts nowhere after."""

from __future__ import annotations

from comco.lab.keys import StageKey, finetune_key, prior_key, probe_key, scratch_key
from comco.lab.report.context import SetContext
from comco.lab.report.origins import (
    CAPTION_R1,
    is_text_only,
    text_only_thresholds,
    variant_gate_models,
    variant_gate_note,
)
from comco.lab.report.stats import cell
from comco.report import MIN_TRIALS, Dashes

GATE_ABBR = {"R@1": "R@1", "R@5": "R@5", "set R@1": "set R@1", "swap largest": "swap L",
             "swap small": "swap s", "presence TOR": "pres. TOR", "presence IOR": "pres. IOR", "Keep": "Keep",
            "caption R@1": "caption R@1"}
# why a gate figure is missing, by figure (a cell's "–" carries the mark of its reason)
MISSING = {"Keep": "Keep is measured on the fine-tuned models only (the long captions)",
           "presence IOR": "no single-object renders to compare the image with"}
# the caption-dependent figures, shown again on the order-balanced captions (not gated)
BALANCED = ("R@1", "set R@1", "swap largest", "swap small", "presence TOR")


def gate_models(c: SetContext) -> list[tuple[str, StageKey, bool]]:
    """(label, probe stage key, is a trained model) of every model the run probed, in table order."""
    o, seeds = c.oset, c.seeds
    rows = [(f"scratch p = {p:g}, seed {seed}", probe_key(scratch_key(o, p, seed)), True)
            for p in c.ps for seed in seeds]
    rows += [(f"{v['name']}, seed {seed}", probe_key(finetune_key(o, v["name"], seed)), True)
             for v in c.s["finetune"]["variants"] for seed in seeds]
    rows += [(f"architecture prior (untrained), seed {seed}", prior_key(o, seed), False) for seed in seeds]
    rows += variant_gate_models(c)
    return [(label, key, trained) for label, key, trained in rows if c.run.has(key)]


def gates_section(c: SetContext) -> tuple[set[StageKey], dict]:
    """The gates table; returns the keys of the passing probes and the numbers."""
    from comco.lab.recipe import FINETUNE_GATES, GATE_KEYS, SCRATCH_ONLY_GATES
    from comco.probes import GATE_FIGURES, gate_passes

    gates = c.s["gates"]
    thresholds = {GATE_KEYS[k]: gates[k] for k in GATE_KEYS}
    columns = list(GATE_FIGURES) + list(FINETUNE_GATES)
    dashes, balanced_dashes = Dashes(), Dashes()
    models = gate_models(c)
    if any(is_text_only(c, key) for _, key, _ in models):
        columns.append(CAPTION_R1)
    rows, balanced_rows, passing, numbers, chance = [], [], set(), {}, {}
    for label, key, trained in models:
        res = c.run.results(key)
        figs = res["gates"]
        finetuned = key.model is not None and key.model.kind == "finetune"
        own = {f: t for f, t in thresholds.items()
               if (f not in FINETUNE_GATES or finetuned) and (f not in SCRATCH_ONLY_GATES or not finetuned)}
        if is_text_only(c, key):  # a text tower trained without images: its text-side gates only
            own = text_only_thresholds(gates)
        ok, failed = gate_passes(figs, own)
        if ok and trained:
            passing.add(key)
        for k, v in figs.items():
            chance.setdefault(k, v.get("chance"))
        verdict = ("pass" if ok else "**fail**: " + ", ".join(GATE_ABBR[f] for f in failed)) if trained else \
            ("reference" + ("" if not ok else " (passes)"))
        rows.append([label] + [cell(figs.get(f), dashes, MISSING.get(f, "not measured")) for f in columns]
                    + [verdict])
        bal = res.get("gates_balanced") or {}
        if bal and trained:
            balanced_rows.append([label] + [f"{cell(bal.get(f), balanced_dashes)} "
                                            f"({_gap(figs.get(f), bal.get(f), balanced_dashes)})" for f in BALANCED])
        numbers[key.id] = {"figures": figs, "balanced": bal, "passed": ok, "failed": failed, "trained": trained}
    if not rows:
        return passing, {}
    c.h(3, "Competence gates: which models can do the task at all")
    c.doc.p("Before any bias is read, every model is measured on the held-out test images with their own "
            f"`{c.s['probe']['tor_templates'][0]}` captions, written the way the model was taught (the mention "
            "orders of its own order bias p; the untrained models: the order-balanced captions): image-to-text "
            "retrieval among all test captions (R@1, R@5; set R@1 = the top caption names exactly the image's "
            "objects, in any order), swap matching (the image against its caption and the same caption with the "
            "largest (swap L) or a small object (swap s) replaced by one the scene does not hold) and presence "
            "(the share of TOR / IOR queries whose top-1 is an object present in the query); the fine-tuned "
            "models also Keep (text-to-image R@1 of the long captions, as written). Cells: % with a 95 % "
            f"bootstrap interval over images. A figure built from fewer than {MIN_TRIALS} trials (here and in every "
            "table below, where a mean across seeds counts the trials of each model's figure) shows its count "
            "instead (\"12 trials: too few to read\"); results.json keeps every number. Each – carries a mark "
            "whose reason follows its table. Gates: "
            + ", ".join(f"{GATE_ABBR[f]} >= {100 * v:g} %" for f, v in thresholds.items())
            + " (the fine-tuned models: Keep and the presences; their short-caption set R@1 and swaps are shown "
            "but not gated, since what the long captions cost the short ones is a result the samplers are "
            "compared on, and gating on it would select on it). A model below a gate is listed here and left "
            "out of every fit, comparison and paragraph below; the LABCLIP bases are trained on the colour "
            "dataset (their own gates are in the LABCLIP section). The untrained models (the architecture's "
            "prior) are a reference, not a result, and are shown beside the trained ones.")
    rows.append(["*chance*"] + [(dashes.dash("no chance level: not measured for any model") if chance.get(f) is None
                                 else f"{100 * chance[f]:.1f}") for f in columns]
                + [dashes.dash("chance is a reference, not a model")])
    trained = [key for _, key, t in models if t]
    per_p = [f"p = {p:g}: {sum(probe_key(scratch_key(c.oset, p, seed)) in passing for seed in c.seeds)} of "
             f"{len(c.seeds)}" for p in c.ps]
    c.doc.p(f"{len(passing)} of {len(trained)} trained models pass every gate (scratch models per p: "
            f"{'; '.join(per_p)}).")
    c.doc.fold(f"The gates of every model ({len(models)} models)")  # the headline above, the long table on a click
    c.doc.table(["model"] + [GATE_ABBR[f] for f in columns] + ["gates"], rows)
    if dashes.reasons:
        c.doc.p(dashes.note())
    c.doc.end_fold()
    variant_gate_note(c, passing)
    if balanced_rows:
        c.doc.p("The same figures on the order-balanced test captions (every object equally often at every "
                "position), not gated; in brackets the change from the model's own captions, in points. A model "
                "that learnt to read only the first mention loses here what it had on its own captions: this gap "
                "is a first measure of order reliance.")
        c.doc.fold(f"The gate figures on the order-balanced captions ({len(balanced_rows)} trained models)")
        c.doc.table(["model"] + [GATE_ABBR[f] for f in BALANCED], balanced_rows)
        if balanced_dashes.reasons:
            c.doc.p(balanced_dashes.note())
        c.doc.end_fold()
    return passing, {"thresholds": thresholds, "models": numbers}


def _gap(own: dict | None, balanced: dict | None, dashes: Dashes) -> str:
    if not own or not balanced or own.get("value") is None or balanced.get("value") is None:
        return dashes.dash("no change: a figure is missing on one of the two caption sets")
    return f"{100 * (balanced['value'] - own['value']):+.1f}"
