"""Dose-response: TOR, IOR and text sensitivity of the scratch models against the order
bias p, a slope fitted across the passing models, and its verdict."""

from __future__ import annotations

from comco.lab.keys import prior_key, probe_key, scratch_key
from comco.lab.report.context import SetContext
from comco.lab.report.figures import dose_plot
from comco.lab.report.stats import (
    ORD,
    counted,
    metric,
    no_preference,
    num,
    pct,
    slope,
    summarize,
    thin,
    tie_note,
    tie_summary,
)
from comco.lab.report.verdict import DOWN, NEITHER, SLOPE_WIDE, UP, judge, loo_sentence
from comco.report import MIN_TRIALS, Dashes

PRIOR = "*architecture prior* (untrained)"
NO_MODEL = "no model passed its gates at this p"
NOT_PUBLISHED = "the paper publishes the shares only"


def scratch_probes(c: SetContext, passing: set) -> dict:
    """(p, seed) -> the probe results of that scratch model, {} when it failed its gates."""
    out = {}
    for p in c.ps:
        for seed in c.seeds:
            key = probe_key(scratch_key(c.oset, p, seed))
            out[p, seed] = c.run.results(key) if key in passing else {}
    return out


def prior_probes(c: SetContext) -> list[dict]:
    """Each seed's untrained prior (the recipe probes them with the scratch models)."""
    keys = [prior_key(c.oset, seed) for seed in c.seeds]
    return [c.run.results(k) for k in keys if c.run.has(k)]


def per_seed(probes: dict, p: float, seeds: list, family: str, n: str, template: str | None, idx: int,
             field: str = "share") -> list:
    vals = []
    for seed in seeds:
        m = metric(probes.get((p, seed), {}), family, n, template)
        vals.append(None if m is None or idx >= len(m[field]) else m[field][idx])
    return vals


def seed_summary(probes: dict, p: float, seeds: list, family: str, n: str, template: str | None, idx: int,
                 field: str = "share", bounds=(0.0, 1.0)) -> dict:
    """Mean and interval across the seeds' models at p, with the fewest trials a model's figure came
    from and how many of them rest mostly on near-ties (those give no number)."""
    return tie_summary(counted(summarize(per_seed(probes, p, seeds, family, n, template, idx, field), bounds),
                               per_seed(probes, p, seeds, family, n, template, idx, "n")),
                       [metric(probes.get((p, seed), {}), family, n, template) for seed in seeds])


def answerable(probes: dict, ps: list, seeds: list, need: int) -> tuple[bool, str]:
    """Enough passing models for a fit: `need` at the lowest and the highest p, 3 in all."""
    counts = [sum(bool(probes.get((p, seed))) for seed in seeds) for p in ps]
    ok = bool(counts) and counts[0] >= need and counts[-1] >= need and sum(counts) >= 3
    return ok, "; ".join(f"{c} of {len(seeds)} at p = {p:g}" for c, p in zip(counts, ps))


def prior_stat(prior: list, family: str, n: str, template: str | None, idx: int, field: str = "share",
               bounds=(0.0, 1.0)) -> dict:
    vals, trials, models = [], [], []
    for r in prior:
        m = metric(r, family, n, template)
        models.append(m)
        vals.append(None if m is None or idx >= len(m[field]) else m[field][idx])
        trials.append(None if m is None or idx >= len(m["n"]) else m["n"][idx])
    return tie_summary(counted(summarize(vals, bounds), trials), models)


def xy(probes: dict, ps: list, seeds: list, family: str, n: str, template: str | None, idx: int):
    xs, ys = [], []
    for p in ps:
        for v in per_seed(probes, p, seeds, family, n, template, idx):
            if v is not None:
                xs.append(p)
                ys.append(v)
    return xs, ys


def judge_slope(c: SetContext, probes: dict, family: str, n: str, template: str | None, idx: int):
    """The slope's verdict (a claim that p raises the figure), with each seed left out in turn."""
    def estimate(drop: frozenset) -> dict:
        seeds = [s for s in c.seeds if s not in drop]
        if not answerable(probes, c.ps, seeds, c.need)[0]:
            return {"mean": None, "lo": None, "hi": None, "n": 0}
        return slope(*xy(probes, c.ps, seeds, family, n, template, idx))

    return judge(estimate, c.seeds, need=3, claimed=UP, wide=SLOPE_WIDE)


def judge_prior(c: SetContext, prior: list, family: str, n: str, template: str | None, chance: float):
    """Whether the untrained architecture already favours the role above chance (seeds of the prior)."""
    seeds = c.seeds[:len(prior)]

    def estimate(drop: frozenset) -> dict:
        kept = [r for r, seed in zip(prior, seeds) if seed not in drop]
        st = prior_stat(kept, family, n, template, 0)
        if st.get("lo") is None:
            return st
        return {**st, "mean": st["mean"] - chance, "lo": st["lo"] - chance, "hi": st["hi"] - chance}

    return judge(estimate, seeds, need=2, claimed=UP, reference="chance")


def dose_sections(c: SetContext, probes: dict, counts: list[int], prior: list) -> dict:
    numbers = {}
    gate = answerable(probes, c.ps, c.seeds, c.need)
    ps, seeds = c.ps, c.seeds
    c.h(3, "TOR: which mention position the text encoder retrieves, against the order bias p")
    c.doc.p("For each held-out `and` caption the most similar bare object name (ComCO's gallery) is retrieved; a "
            "position's share is its top-1 hit rate over the sum of the hit rates of all positions (100 % in all, "
            "like the ComCO paper's conditional table, but without dropping captions whose top-n is not exact). "
            "Cells: mean over the training seeds that passed the competence gates with a 95 % t-interval across "
            "seeds; the raw top-1 rate of each position (the share of all captions whose top-1 is that object; "
            "chance 1 / set size) is given beside the shares, since a share of near-zero hits says nothing. The "
            "untrained models of the same seeds show what the architecture (causal text mask, EOT pooling) brings "
            "before any caption.")
    published = _published_tor()
    for n in counts:
        key = str(n)
        table, series, raws, dashes = [], {}, {}, Dashes()
        roles = ORD[:n]
        for idx, role in enumerate(roles):
            series[f"{role} mentioned"] = [seed_summary(probes, p, seeds, "tor", key, "and", idx) for p in ps]
            raws[role] = [seed_summary(probes, p, seeds, "tor", key, "and", idx, "raw") for p in ps]
        for j, p in enumerate(ps):
            table.append([f"{p:g}"] + [pct(series[f"{r} mentioned"][j], dashes=dashes, missing=NO_MODEL) for r in roles]
                         + [pct(raws[r][j], dashes=dashes, missing=NO_MODEL) for r in roles])
        if prior:
            table.append([PRIOR] + [pct(prior_stat(prior, "tor", key, "and", i), dashes=dashes) for i in range(n)]
                         + [pct(prior_stat(prior, "tor", key, "and", i, "raw"), dashes=dashes) for i in range(n)])
        if n == 4:
            for label, vals in published:
                table.append([f"*published:* {label}"] + [f"{v:.1f}" for v in vals] + [dashes.dash(NOT_PUBLISHED)] * n)
        raw_chance = next((m["chance"][0] for r in [*probes.values(), *prior]
                           if (m := metric(r, "tor", key, "and")) and m["chance"][0] is not None), None)
        table.append(["*chance*"] + [f"{100 / n:.1f}"] * n
                     + [dashes.dash("no model measured, so no gallery gave the raw chance") if raw_chance is None
                        else f"{100 * raw_chance:.1f}"] * n)
        c.doc.p(f"**{n} objects** (in %):")
        c.doc.table(["p"] + [f"{r} share" for r in roles] + [f"{r} raw top-1" for r in roles], table)
        footnotes(c, dashes)
        path = dose_plot(c.fig / f"{c.oset}-tor-{n}.png", f"TOR position shares, {n}-object captions ({c.oset})",
                         ps, series, 1 / n, "share of top-1 hits (%)")
        c.doc.img(path, f"TOR dose-response {n} objects")
        sl = slope(*xy(probes, ps, seeds, "tor", key, "and", 0))
        j = judge_slope(c, probes, "tor", key, "and", 0)
        pr = prior_stat(prior, "tor", key, "and", 0) if prior else None
        numbers[f"tor_{n}"] = {"first_share": {f"{p:g}": series["1st mentioned"][i] for i, p in enumerate(ps)},
                               "first_raw": {f"{p:g}": raws["1st"][i] for i, p in enumerate(ps)},
                               "slope": sl, "prior_first_share": pr, "verdict": j.to_dict()}
        c.doc.p(dose_paragraph(f"the first-mentioned object's share of TOR hits ({n}-object captions)", ps,
                               series["1st mentioned"][0], series["1st mentioned"][-1], sl, 1 / n,
                               "ComCO's claim that a first-mention bias in training captions produces the text "
                               "encoder's preference for the first-mentioned object", gate, pr, j))
        c.find(f"Does p (the largest object named first) raise the first mention's share of TOR hits "
               f"({n} objects)?", _per_p(sl), j)
        if prior:
            jp = judge_prior(c, prior, "tor", key, "and", 1 / n)
            numbers[f"tor_{n}"]["prior_verdict"] = jp.to_dict()
            c.find(f"Does the untrained architecture already favour the first mention (TOR, {n} objects)?",
                   no_preference(pr) or f"{pct(pr, unit=' %')} against chance {100 / n:.1f} %{tie_note(pr)}", jp)
    _ior_sections(c, probes, prior, gate, numbers)
    _sensitivity_sections(c, probes, counts, prior, gate, numbers)
    numbers["passing"] = gate[1]
    return numbers


def _ior_sections(c: SetContext, probes: dict, prior: list, gate, numbers: dict) -> None:
    ps, seeds = c.ps, c.seeds
    c.h(3, "IOR: which object the image encoder retrieves, against p")
    c.doc.p("Each held-out image is compared with the single-object renders; shares by measured size rank. The "
            "captions' order bias only reaches the image encoder through contrastive training, so a change in the "
            "largest object's share with p would be the text-to-image leak the ComCO paper proposes. The "
            "present-only form (as the ComCO scripts also report) asks, among the n objects the image holds only, "
            "which single render is most similar (chance 1 / n).")
    ior_counts = sorted({int(n) for r in [*probes.values(), *prior] for n in r.get("ior", {})})
    for n in ior_counts:
        key = str(n)
        roles = ["largest"] + [f"{ORD[k]} largest" for k in range(1, n)]
        large = [seed_summary(probes, p, seeds, "ior", key, None, 0) for p in ps]
        raw = [seed_summary(probes, p, seeds, "ior", key, None, 0, "raw") for p in ps]
        present = [seed_summary(probes, p, seeds, "ior_present", key, None, 0, "raw") for p in ps]
        dashes = Dashes()
        rows = [[f"{p:g}"] + [pct(x[j], dashes=dashes, missing=NO_MODEL) for x in (large, raw, present)]
                for j, p in enumerate(ps)]
        pr = None
        if prior:
            pr = prior_stat(prior, "ior", key, None, 0)
            rows.append([PRIOR, pct(pr, dashes=dashes),
                         pct(prior_stat(prior, "ior", key, None, 0, "raw"), dashes=dashes),
                         pct(prior_stat(prior, "ior_present", key, None, 0, "raw"), dashes=dashes)])
        if n == 4:
            for label, vals in _published_ior():
                rows.append([f"*published:* {label}", f"{vals[0]:.1f}"] + [dashes.dash(NOT_PUBLISHED)] * 2)
        rows.append(["*chance*", f"{100 / n:.1f}", dashes.dash("the raw top-1's chance is 1 / the number of single "
                                                               "renders (the gallery)"), f"{100 / n:.1f}"])
        c.doc.p(f"**{n} objects**:")
        c.doc.table(["p", "largest object's share (%)", "largest raw top-1 (%)",
                     "largest among the present only (%)"], rows)
        footnotes(c, dashes)
        path = dose_plot(c.fig / f"{c.oset}-ior-{n}.png", f"IOR largest-object share, {n} objects ({c.oset})", ps,
                         {"largest object": large, "raw top-1 of largest": raw, "largest, present only": present},
                         1 / n, "%")
        c.doc.img(path, f"IOR dose-response {n} objects")
        sl = slope(*xy(probes, ps, seeds, "ior", key, None, 0))
        j = judge_slope(c, probes, "ior", key, None, 0)
        numbers[f"ior_{n}"] = {"largest_share": {f"{p:g}": large[i] for i, p in enumerate(ps)},
                               "largest_raw": {f"{p:g}": raw[i] for i, p in enumerate(ps)},
                               "largest_present_only": {f"{p:g}": present[i] for i, p in enumerate(ps)},
                               "slope": sl, "roles": roles, "prior_largest_share": pr, "verdict": j.to_dict()}
        c.doc.p(dose_paragraph(f"the largest object's share of IOR hits ({n} objects)", ps, large[0], large[-1], sl,
                               1 / n, "the proposal that a caption-order bias leaks into the image encoder", gate,
                               pr, j))
        c.find(f"Does p raise the largest object's share of IOR hits, the leak into the image encoder "
               f"({n} objects)?", _per_p(sl), j)
        if prior:
            jp = judge_prior(c, prior, "ior", key, None, 1 / n)
            numbers[f"ior_{n}"]["prior_verdict"] = jp.to_dict()
            c.find(f"Does the untrained image tower already favour the largest object (IOR, {n} objects)?",
                   no_preference(pr) or f"{pct(pr, unit=' %')} against chance {100 / n:.1f} %{tie_note(pr)}", jp)


def _sensitivity_sections(c: SetContext, probes: dict, counts: list, prior: list, gate, numbers: dict) -> None:
    ps, seeds = c.ps, c.seeds
    c.h(3, "Text sensitivity: how far the caption embedding moves when one object name is replaced")
    c.doc.p("For each held-out `and` caption the object at mention position k is replaced by an object the scene "
            "does not hold; the table gives the first position's share of the summed distance (1 - cosine) over "
            "positions, and the mean distance at the first and the last position (the raw figures).")
    for n in counts:
        key = str(n)
        share = [seed_summary(probes, p, seeds, "sens", key, None, 0) for p in ps]
        d1 = [seed_summary(probes, p, seeds, "sens", key, None, 0, "raw", bounds=(0.0, 2.0)) for p in ps]
        dl = [seed_summary(probes, p, seeds, "sens", key, None, n - 1, "raw", bounds=(0.0, 2.0)) for p in ps]
        dashes = Dashes()
        rows = [[f"{p:g}", pct(share[j], dashes=dashes, missing=NO_MODEL), num(d1[j], dashes=dashes, missing=NO_MODEL),
                 num(dl[j], dashes=dashes, missing=NO_MODEL)] for j, p in enumerate(ps)]
        pr = None
        if prior:
            pr = prior_stat(prior, "sens", key, None, 0)
            rows.append([PRIOR, pct(pr, dashes=dashes),
                         num(prior_stat(prior, "sens", key, None, 0, "raw", (0.0, 2.0)), dashes=dashes),
                         num(prior_stat(prior, "sens", key, None, n - 1, "raw", (0.0, 2.0)), dashes=dashes)])
        rows.append(["*uniform*", f"{100 / n:.1f}"] + [dashes.dash("a distance has no uniform level")] * 2)
        c.doc.p(f"**{n} objects**:")
        c.doc.table(["p", "1st position's share of the change (%)", "distance, 1st", f"distance, {ORD[n - 1]}"],
                    rows)
        footnotes(c, dashes)
        sl = slope(*xy(probes, ps, seeds, "sens", key, None, 0))
        j = judge_slope(c, probes, "sens", key, None, 0)
        numbers[f"sensitivity_{n}"] = {"first_share": {f"{p:g}": share[i] for i, p in enumerate(ps)}, "slope": sl,
                                       "prior_first_share": pr, "verdict": j.to_dict()}
        c.doc.p(dose_paragraph(f"the first position's share of the text-embedding change ({n} objects)", ps,
                               share[0], share[-1], sl, 1 / n, "the view that a first-mention bias makes the text "
                               "encoder weigh the first words most", gate, pr, j))
        c.find(f"Does p make the text embedding move most when the first name changes ({n} objects)?", _per_p(sl), j)


def footnotes(c: SetContext, dashes: Dashes) -> None:
    """The reason of every marked "–" of the table above."""
    if dashes.reasons:
        c.doc.p(dashes.note())


def _per_p(sl: dict) -> str:
    if sl.get("lo") is None:
        return "no slope (too few models)"
    return f"{100 * sl['mean']:+.1f} points per unit of p [{100 * sl['lo']:+.1f}, {100 * sl['hi']:+.1f}]"


def dose_paragraph(what: str, ps: list, first: dict, last: dict, sl: dict, chance: float, claim: str,
                   gate: tuple[bool, str] = (True, ""), prior: dict | None = None, j=None) -> str:
    if not gate[0]:
        return (f"{what[0].upper()}{what[1:]}: too few models passed the competence gates ({gate[1]}), so this "
                f"scale cannot answer the question; it cannot test {claim}.")
    if first.get("mean") is None or last.get("mean") is None:
        return f"{what.capitalize()}: not measured at both ends of p."
    few = [s["trials"] for s in (first, last) if thin(s)]
    if few:
        return (f"{what[0].upper()}{what[1:]}: each model's figure comes from {min(few)} trials, fewer than "
                f"{MIN_TRIALS}, too few to read; it cannot test {claim} at this scale.")
    text = (f"From p = {ps[0]:g} to p = {ps[-1]:g}, {what} goes from {pct(first)} to {pct(last)} "
            f"(uniform would be {100 * chance:.1f} %).")
    if prior and prior.get("mean") is not None:
        text += f" The untrained architecture already gives {pct(prior)}."
    if sl.get("mean") is None:
        return text + " Too few models to fit a slope."
    text += (f" A line fitted through all {sl['n']} models gives a slope of {100 * sl['mean']:+.1f} points per unit "
             f"of p, 95 % interval [{100 * sl['lo']:+.1f}, {100 * sl['hi']:+.1f}].")
    way = j.way if j is not None else NEITHER
    if way == UP:
        text += f" The interval excludes zero: the data support {claim}."
    elif way == DOWN:
        text += f" The interval excludes zero but the effect runs against {claim}."
    elif sl["hi"] - sl["lo"] > SLOPE_WIDE:
        text += " The interval includes zero and is too wide to say whether p moves it at all at this scale."
    else:
        text += f" The interval includes zero: at this scale the data do not show {claim}."
    return text + (loo_sentence(j) if j is not None else "")


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
