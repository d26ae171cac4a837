"""LABCLIP: attribute binding of a colour base before and after the text-embedding map,
paired by base, and whether it is restored."""

from __future__ import annotations

from comco.lab.keys import labclip_key
from comco.lab.report.context import SetContext
from comco.lab.report.dose import footnotes
from comco.lab.report.figures import bar_plot
from comco.lab.report.finetune import change_sentence
from comco.lab.report.stats import cell, counted, paired, pct, signed, summarize
from comco.lab.report.verdict import UP, judge_paired, loo_sentence
from comco.report import MIN_TRIALS, Dashes

# LABCLIP's held-out binding on CLEVR (ViT-B/32, REFERENCE.md), and what the lab calls restored
PUBLISHED_LABCLIP_BINDING = 0.95
RESTORED_BINDING = 0.9


def _fewest(counts: list) -> str:
    known = [int(n) for n in counts if n is not None]
    return str(min(known)) if known else "not recorded"


def labclip_section(c: SetContext) -> dict:
    s = c.s
    keys = [(seed, labclip_key(c.oset, seed)) for seed in s["labclip"]["seeds"]]
    runs = [(seed, c.run.summary(k)) for seed, k in keys if c.run.has(k)]
    if not runs:
        return {}
    c.h(3, "LABCLIP: attribute binding before and after the text-embedding map")
    # a base counts only if it learnt the colours: both uni-modal probes at the gate
    lab = s["labclip"]
    p_lab = lab["order_bias"]
    need = s["gates"]["colour_probe"]
    base_rows, kept, dashes = [], [], Dashes()
    for seed, r in runs:
        before_probe = r["binding_probe"]["before"]
        vals = {role: before_probe[role] for role in ("image probe", "text probe")}
        ok = all(v.get("value") is not None and v["value"] >= need for v in vals.values())
        base_rows.append([f"colour base, seed {seed}"] + [cell(v, dashes) for v in vals.values()]
                         + [cell(before_probe["cross-modal"], dashes), "pass" if ok else "**fail**"])
        kept.append(r if ok else None)
    chance_img = runs[0][1]["binding_probe"]["before"]["image probe"].get("chance")
    c.doc.p(f"The LABCLIP base: a scratch CLIP of the same size trained for {lab['base_steps']} steps on the "
            f"`attributes` captions (\"a red X and a blue Y\", largest object named first with p = {p_lab:g}) of "
            f"{lab['base_images']} colour images of its own. Its gate: both uni-modal colour probes (a linear probe "
            f"per object reads the object's colour from the image embedding / from the caption embedding, on "
            f"combinations held out from the probe's training) at >= {100 * need:g} %, against a majority-colour "
            f"baseline of {'–' if chance_img is None else f'{100 * chance_img:.1f}'} %.")
    c.doc.table(["base", "image probe", "text probe", "cross-modal binding", "gate"], base_rows)
    footnotes(c, dashes)
    dashes = Dashes()
    seeds = [seed for seed, _ in runs]
    passed = [r for r in kept if r]
    if not passed:
        c.doc.p("No LABCLIP base passed its colour gate, so this scale cannot answer whether LABCLIP restores "
                "attribute binding.")
        return {"passing": 0}
    before_v = [r["binding_before"].get("test") if r else None for r in kept]
    after_v = [r["binding_after"].get("test") if r else None for r in kept]
    # each base's held-out figure counts its held-out captions: the too-few rule reads the smallest
    held_out = [r.get("n_test") for r in passed]

    def probe_n(role: str) -> list:
        return [r["binding_probe"]["before"][role].get("n") for r in passed]

    before, after = counted(summarize(before_v), held_out), counted(summarize(after_v), held_out)
    probe_rows, series = [], {}
    roles = ["image probe", "text probe", "cross-modal"]
    for when in ("before", "after"):
        stats = [counted(summarize([r["binding_probe"][when][role]["value"] for r in passed]),
                         [r["binding_probe"][when][role].get("n") for r in passed]) for role in roles]
        series[f"{when} LABCLIP"] = stats
        probe_rows.append([f"{when} LABCLIP"] + [pct(x, dashes=dashes) for x in stats])
    no_chance = "the majority-colour baseline was not recorded for this probe"
    probe_rows.append(["*chance*", dashes.dash(no_chance) if chance_img is None
                       else f"{100 * chance_img:.1f} (majority colour)", dashes.dash(no_chance),
                       "50.0"])
    probe_rows.append(["*published:* CLIP ViT-B/32, CLEVR (LABCLIP, secondary)", "96.0", "100.0", "58.0"])
    probe_rows.append(["*published:* LABCLIP ViT-B/32, CLEVR (secondary)"]
                      + [dashes.dash("LABCLIP publishes the cross-modal binding after the map only")] * 2 + [
                       f"{100 * PUBLISHED_LABCLIP_BINDING:.1f}"])
    c.doc.p(f"A linear map on the base's text embeddings (the base frozen), trained for {lab['steps']} steps on "
            f"another `--colors` dataset of {lab['images']} images with attribute-swapped captions as hard "
            f"negatives; {len(passed)} base(s) that passed. Held-out binding accuracy (image closer to its caption "
            f"than to the colour-swapped one; chance 50 %): before {pct(before)}, after {pct(after)}. Cells: the mean "
            f"across the passing bases with its 95 % interval; a figure whose bases measured it on fewer than "
            f"{MIN_TRIALS} trials each shows that count instead (trials per base: held-out binding "
            f"{_fewest(held_out)}, image probe {_fewest(probe_n('image probe'))}, cross-modal "
            f"{_fewest(probe_n('cross-modal'))}).")
    c.doc.table(["model", "image probe (colour per object)", "text probe", "cross-modal (all images)"], probe_rows)
    footnotes(c, dashes)
    path = bar_plot(c.fig / f"{c.oset}-labclip.png", f"LABCLIP binding ({c.oset})", roles, series, "accuracy (%)")
    c.doc.img(path, "LABCLIP binding")
    # the map is trained on each base, so before and after are paired by base
    d = paired(after_v, before_v)
    min_passing = s["gates"]["min_passing"]
    j = judge_paired(after_v, before_v, seeds, need=min_passing, claimed=UP)
    restored_j = judge_paired(after_v, [RESTORED_BINDING] * len(seeds), seeds, need=min_passing, claimed=UP,
                              reference=f"{100 * RESTORED_BINDING:.0f} %")
    text = (f"Held-out cross-modal binding is {pct(after)} after the map against {pct(before)} before. "
            + change_sentence("LABCLIP", "held-out binding", d) + loo_sentence(j))
    if after.get("mean") is not None:
        restored = after.get("lo") is not None and after["lo"] >= RESTORED_BINDING
        text += (" Binding is restored" if restored else " Binding is not restored") + (
            f" (LABCLIP reports {100 * PUBLISHED_LABCLIP_BINDING:.0f} % on CLEVR with ViT-B/32; restored here means "
            f"the interval after the map lies above {100 * RESTORED_BINDING:.0f} %).")
        if not restored:  # where the ceiling comes from is measured outside the lab run
            text += (" `benchmarks/labclip.py` measures what holds it (the map's capacity and steps, the hard "
                     "negatives, each tower's uni-modal probes); the committed runs' diagnoses are "
                     "`docs/lab-small/LABCLIP.md` (small scale) and `docs/lab-medium/LABCLIP.md` (medium).")
    img = series["before LABCLIP"][0]
    if img.get("mean") is not None and chance_img is not None:
        text += (f" Uni-modally, the image probe reads each object's colour at {pct(img)} against a majority-colour "
                 f"baseline of {100 * chance_img:.1f} %")
        text += (", so the image embedding does carry the binding." if img.get("lo") is not None
                 and img["lo"] > chance_img else ", which does not clearly beat the baseline.")
    c.doc.p(text)
    c.find("Does the LABCLIP map raise held-out attribute binding (paired by base)?", f"{signed(d)}", j)
    c.find(f"Does LABCLIP restore binding (after the map above {100 * RESTORED_BINDING:.0f} %)?",
           pct(after, unit=" %"), restored_j)
    return {"before": before, "after": after, "change": d, "verdict": j.to_dict(),
            "restored_verdict": restored_j.to_dict(), "probes": {k: dict(zip(roles, v)) for k, v in series.items()}}
