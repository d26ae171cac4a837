"""The origins of the text-side bias (issue 26): the recipe's [[scratch.variants]] (another
text tower, another objective) beside its own scratch models (the baseline) at the same
p, each tower's untrained prior, and ComCO's published text-encoder rows as reference.

Questions (ComCO 4.2.1 and 4.2.2): does the first-mention prior of the untrained tower
vanish without the causal mask, and does p = 1 still create the text-side bias without
it; does the first-mention bias need the images (a tower trained on the captions alone)?
"""

from __future__ import annotations

from comco.lab.keys import StageKey, prior_key, probe_key, scratch_key
from comco.lab.report.context import SetContext
from comco.lab.report.dose import _per_p, judge_prior, judge_slope, per_seed, prior_stat, xy
from comco.lab.report.figures import findings_plot
from comco.lab.report.stats import ORD, pct, signed, slope, summarize
from comco.lab.report.verdict import UP, judge_paired
from comco.train import OBJECTIVES
from comco.train import is_text_only as objective_is_text_only

CAPTION_R1 = "caption R@1"  # the text-only models' own gate figure (comco.probes.caption_retrieval)
BASELINE = None  # the recipe's own scratch models, as a variant name


# ---------------------------------------------------------------- the variants

def variants(c: SetContext) -> list[dict]:
    """The recipe's [[scratch.variants]] entries (none: an empty list)."""
    return list(c.s["scratch"].get("variants", []))


def settings_of(c: SetContext, name: str | None) -> dict:
    """A variant's origins keys over the recipe's scratch section (the baseline's: name None)."""
    from comco.lab.recipe import variant_settings

    sc = c.s["scratch"]
    if name is None:
        return {k: v for k, v in sc.items() if k in ("text_attention", "text_pool", "objective")}
    return variant_settings(sc, next(v for v in variants(c) if v["name"] == name))


def text_only(c: SetContext, name: str | None) -> bool:
    return objective_is_text_only(settings_of(c, name).get("objective"))


def is_text_only(c: SetContext, key: StageKey) -> bool:
    """Whether a probe stage measures a scratch model trained without images."""
    model = key.model
    return model is not None and model.kind == "scratch" and model.role == "order" and text_only(c, model.variant)


def text_only_thresholds(gates: dict) -> dict:
    """The gates of a text tower trained alone: presence TOR and caption-to-caption R@1."""
    return {"presence TOR": gates["presence_tor"], CAPTION_R1: gates["caption_r1"]}


def describe(c: SetContext, name: str | None) -> str:
    """A variant's name with its text tower and objective ("baseline (causal, contrastive)")."""
    st = settings_of(c, name)
    objective = OBJECTIVES[st.get("objective") or "clip"]
    tower = st.get("text_attention", "causal")
    if tower == "bidirectional":
        tower += f", {st.get('text_pool')} pooling"
    return f"{name or 'baseline'} ({tower}, {objective})"


def prior_tower(c: SetContext, name: str | None) -> str | None:
    """Whose untrained prior a variant has: its own where the run probed one, else the baseline's."""
    return name if name is not None and c.run.has(prior_key(c.oset, c.seeds[0], name)) else None


def variant_gate_models(c: SetContext) -> list[tuple[str, StageKey, bool]]:
    """The gates table's rows of the variants' models and of their towers' untrained priors."""
    o, rows = c.oset, []
    for v in variants(c):
        name = v["name"]
        rows += [(f"{name} p = {p:g}, seed {seed}", probe_key(scratch_key(o, p, seed, name)), True)
                 for p in c.ps for seed in c.seeds]
        if prior_tower(c, name) == name:
            rows += [(f"{name} prior (untrained), seed {seed}", prior_key(o, seed, name), False) for seed in c.seeds]
    return rows


def variant_gate_note(c: SetContext, passing: set) -> None:
    """What the variants' models passed, per variant and p, and the text-only models' own gates."""
    if not variants(c):
        return
    counts = "; ".join(f"{v['name']} at p = {p:g}: "
                       f"{sum(probe_key(scratch_key(c.oset, p, s, v['name'])) in passing for s in c.seeds)} of "
                       f"{len(c.seeds)}" for v in variants(c) for p in c.ps)
    text = f"The variants' scratch models ({counts}) are gated like the baseline's."
    if any(text_only(c, v["name"]) for v in variants(c)):
        t = text_only_thresholds(c.s["gates"])
        text += (" Those trained on the captions alone (SimCSE, paraphrase pairs) have an untrained image tower, "
                 "so only their "
                 f"text-side figures gate them: presence TOR >= {100 * t['presence TOR']:g} % and caption R@1 "
                 f"(caption-to-caption set R@1: the nearest other caption text names the same objects) >= "
                 f"{100 * t[CAPTION_R1]:g} %; their image figures are shown but not gated.")
    c.doc.p(text)


def arm_probes(c: SetContext, name: str | None, passing: set) -> dict:
    """(p, seed) -> a variant's probe results, {} where the model failed its gates."""
    out = {}
    for p in c.ps:
        for seed in c.seeds:
            key = probe_key(scratch_key(c.oset, p, seed, name))
            out[p, seed] = c.run.results(key) if key in passing else {}
    return out


def arm_priors(c: SetContext, name: str | None) -> list[dict]:
    keys = [prior_key(c.oset, seed, prior_tower(c, name)) for seed in c.seeds]
    return [c.run.results(k) for k in keys if c.run.has(k)]


# ---------------------------------------------------------------- the section

def origins_sections(c: SetContext, passing: set, counts: list[int]) -> dict:
    """The variants beside the baseline: tables per object count, the figure, the findings."""
    if not variants(c) or not counts:
        return {}
    names = [BASELINE] + [v["name"] for v in variants(c)]
    arms = {n: arm_probes(c, n, passing) for n in names}
    priors = {n: arm_priors(c, n) for n in names}
    c.h(3, "The origins: the text tower and the objective beside the baseline")
    c.doc.p("The recipe's own scratch models (the baseline) and each of its variants were trained at every p and "
            "seed on the same renders and captions; each row below is one variant at one p (means over the seeds "
            "that passed their gates, 95 % t-intervals across seeds). A model trained on the captions alone "
            "(SimCSE, paraphrase pairs) has an untrained image tower: it is gated on presence TOR and "
            "caption-to-caption R@1 only, "
            "and its image-side figures are not shown. Each distinct text tower's untrained prior is a row of its "
            "own; the published rows are ComCO's text-encoder comparison on its own data (72 COCO objects), a "
            "reference for the direction, not a measurement of this lab.")
    numbers: dict = {"variants": {describe(c, n): n for n in names}}
    for n in counts:
        numbers[f"tor_{n}"] = _table(c, names, arms, priors, n)
    path = _figure(c, names, arms, priors, counts[-1])
    if path:
        c.doc.img(path, "the variants against p")
        c.figures.append(path)  # the findings open with it too
    numbers["questions"] = _questions(c, names, arms, priors, counts[-1])
    return numbers


def _table(c: SetContext, names: list, arms: dict, priors: dict, n: int) -> dict:
    key, roles, out, rows = str(n), ORD[:n], {}, []
    for name in names:
        probes, image = arms[name], not text_only(c, name)
        for p in c.ps:
            tor = [summarize(per_seed(probes, p, c.seeds, "tor", key, "and", i)) for i in range(n)]
            sens = summarize(per_seed(probes, p, c.seeds, "sens", key, None, 0))
            ior = summarize(per_seed(probes, p, c.seeds, "ior", key, None, 0)) if image else None
            passed = sum(bool(probes.get((p, s))) for s in c.seeds)
            rows.append([describe(c, name), f"{p:g}", f"{passed} of {len(c.seeds)}"] + [pct(t) for t in tor]
                        + [pct(sens), pct(ior) if image else "–"])
            out[f"{name or 'baseline'} p{p:g}"] = {"tor_shares": tor, "sensitivity_first_share": sens,
                                                    "ior_largest_share": ior, "passing": passed}
    for name in dict.fromkeys(prior_tower(c, n_) for n_ in names):
        prior = priors[name]
        if not prior:
            continue
        rows.append([f"*untrained prior* of the {describe(c, name)} tower", "–", f"{len(prior)} seeds"]
                    + [pct(prior_stat(prior, "tor", key, "and", i)) for i in range(n)]
                    + [pct(prior_stat(prior, "sens", key, None, 0)), pct(prior_stat(prior, "ior", key, None, 0))])
    if n == 4:
        for label, vals in published_encoders():
            rows.append([f"*published:* {label}", "–", "–"] + [f"{v:.1f}" for v in vals] + ["–", "–"])
    rows.append(["*chance*", "", ""] + [f"{100 / n:.1f}"] * n + [f"{100 / n:.1f}", f"{100 / n:.1f}"])
    c.doc.p(f"**{n} objects** (in %): TOR position shares of the hits, the first position's share of the text "
            "sensitivity, and the IOR largest-object share:")
    c.doc.table(["model", "p", "passing"] + [f"TOR {r}" for r in roles] + ["sens. 1st", "IOR largest"], rows)
    return out


def published_encoders() -> list:
    """ComCO's TOR rows of the text-encoder comparison (CLIP's text encoder, SBERT, SimCSE)."""
    from comco.report import published_rows

    rows = [r for r in published_rows("tor", "conditional", 4) if "text-encoder" in r["source"]]
    return [(f"{r['label']} ({r['source']})", [r["values"][k] for k in ORD[:4]]) for r in rows]


def _figure(c: SetContext, names: list, arms: dict, priors: dict, n: int):
    key = str(n)
    tor, ior = f"TOR: the first mention's share ({n} objects)", f"IOR: the largest object's share ({n} objects)"
    panels: dict = {tor: {}, ior: {}}
    prior_pts: dict = {tor: {}, ior: {}}
    chances: dict = {tor: {}, ior: {}}
    for name in names:
        label = describe(c, name)
        panels[tor][label] = [summarize(per_seed(arms[name], p, c.seeds, "tor", key, "and", 0)) for p in c.ps]
        prior_pts[tor][label] = prior_stat(priors[name], "tor", key, "and", 0) if priors[name] else None
        chances[tor][label] = 1 / n
        if not text_only(c, name):
            panels[ior][label] = [summarize(per_seed(arms[name], p, c.seeds, "ior", key, None, 0)) for p in c.ps]
            prior_pts[ior][label] = prior_stat(priors[name], "ior", key, None, 0) if priors[name] else None
            chances[ior][label] = 1 / n
    if not any(s.get("mean") is not None for series in panels[tor].values() for s in series):
        return None
    return findings_plot(c.fig / f"{c.oset}-origins.png", f"The text tower and the objective ({c.oset})", c.ps,
                         panels, prior_pts, chances)


# ---------------------------------------------------------------- the questions

def _questions(c: SetContext, names: list, arms: dict, priors: dict, n: int) -> dict:
    key, chance, out = str(n), 1 / n, {}
    base = arms[BASELINE]
    p1 = c.ps[-1]
    for name in names[1:]:
        st, probes, prior = settings_of(c, name), arms[name], priors[name]
        if st.get("text_attention") == "bidirectional" and not text_only(c, name):
            label = f"the `{name}` tower, {st.get('text_pool')} pooling"
            if prior_tower(c, name) == name and prior:
                pr = prior_stat(prior, "tor", key, "and", 0)
                j = judge_prior(c, prior, "tor", key, "and", chance)
                c.find(f"Without the causal mask ({label}), does the untrained text tower still favour the first "
                       f"mention (TOR, {n} objects)?", f"{pct(pr)} % against chance {100 * chance:.1f} %", j)
                out[f"{name}: prior above chance"] = j.to_dict()
                causal = _prior_values(c, priors[BASELINE], key)
                own = _prior_values(c, prior, key)
                j = judge_paired(causal, own, c.seeds, need=2)
                c.find(f"Does the causal mask add to the untrained first-mention prior (causal - {name}, paired by "
                       f"seed, TOR {n} objects)?", signed(j.estimate), j)
                out[f"{name}: causal mask adds to the prior"] = j.to_dict()
            _slope_finding(c, probes, key, n, f"Without the causal mask ({label}), does p still raise the first "
                           f"mention's share of TOR hits ({n} objects)?", out, f"{name}: p raises TOR first")
            j = _paired_at(c, base, probes, p1, key)
            c.find(f"At p = {p1:g}, is the causal tower's first-mention share above the {name} tower's (paired by "
                   f"seed, TOR {n} objects)?", signed(j.estimate), j)
            out[f"{name}: causal above at p = {p1:g}"] = j.to_dict()
        if text_only(c, name):
            label = f"the `{name}` tower"
            _slope_finding(c, probes, key, n, f"Trained on the captions alone ({label}), does p still raise the "
                           f"first mention's share of TOR hits ({n} objects), i.e. does the bias not need the "
                           "images?", out, f"{name}: p raises TOR first")
            j = _paired_at(c, base, probes, p1, key)
            c.find(f"At p = {p1:g}, is the contrastive tower's first-mention share above the {name} tower's "
                   f"(paired by seed, TOR {n} objects)?", signed(j.estimate), j)
            out[f"{name}: contrastive above at p = {p1:g}"] = j.to_dict()
            p0 = c.ps[0]
            last = per_seed(probes, p0, c.seeds, "tor", key, "and", n - 1)
            first = per_seed(probes, p0, c.seeds, "tor", key, "and", 0)
            j = judge_paired(last, first, c.seeds, need=c.need)
            ref = "; ".join(f"{lab.split(' (')[0]} {v[-1]:.1f} vs {v[0]:.1f}" for lab, v in published_encoders()
                            if not lab.startswith("CLIP"))
            c.find(f"At p = {p0:g}, does the {name} tower lean to the last mention, as ComCO's text-only encoders do "
                   f"(last - first share, TOR {n} objects; published last vs first: {ref})?", signed(j.estimate), j)
            out[f"{name}: leans last at p = {p0:g}"] = j.to_dict()
    return out


def _prior_values(c: SetContext, prior: list, key: str) -> list:
    from comco.lab.report.stats import metric

    vals = []
    for r in prior:
        m = metric(r, "tor", key, "and")
        vals.append(None if m is None else m["share"][0])
    return vals + [None] * (len(c.seeds) - len(vals))


def _paired_at(c: SetContext, a: dict, b: dict, p: float, key: str):
    return judge_paired(per_seed(a, p, c.seeds, "tor", key, "and", 0), per_seed(b, p, c.seeds, "tor", key, "and", 0),
                        c.seeds, need=c.need, claimed=UP)


def _slope_finding(c: SetContext, probes: dict, key: str, n: int, question: str, out: dict, name: str) -> None:
    sl = slope(*xy(probes, c.ps, c.seeds, "tor", key, "and", 0))
    j = judge_slope(c, probes, "tor", key, "and", 0)
    c.find(question, _per_p(sl), j)
    out[name] = j.to_dict()


__all__ = ["CAPTION_R1", "origins_sections", "variant_gate_models", "is_text_only", "text_only_thresholds"]
