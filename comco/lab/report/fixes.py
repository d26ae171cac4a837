"""The field's training fixes against the two biases (issue 39): each fix beside the plain
contrastive model of its seed, the table the report opens with.

A fix is an arm: a [[scratch.variants]] entry with a fix objective (SigLIP, NegCLIP, its
reorderings-as-positives variant, order-augmented positives), trained at every p on the same
renders, captions, seeds and steps as the recipe's own contrastive models; or a fine-tune
of the p = 1 contrastive model (Long-CLIP, free stretched positions, DeBias), against that
model. One more pairing asks what freeing Long-CLIP's first positions changes: the free
fine-tune against the frozen one of the same seed.

Each figure is paired by seed (fix - plain) and read by the one rule (`verdict`): the
direction only where the paired 95 % t-interval excludes zero and still does with any one
seed left out. A model below its gates counts nowhere; its seed drops from the pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from comco.lab.keys import StageKey, finetune_key, probe_key, scratch_key
from comco.lab.report.context import SetContext
from comco.lab.report.dose import footnotes
from comco.lab.report.figures import forest_plot
from comco.lab.report.stats import metric, paired, pct, signed, summarize
from comco.lab.report.verdict import CANNOT, DOWN, FRAGILE, NEITHER, UP, Judgement, judge_paired
from comco.report import Dashes, Doc

FIX_OBJECTIVES = ("siglip", "negclip", "negclip-orderpos", "orderaug")
PLAIN = "plain contrastive"
ALL_KINDS = "all"  # the half-truth probe's group over every object count


@dataclass(frozen=True)
class Arm:
    """One fix against its plain counterpart, paired by seed."""

    name: str
    what: str  # what the fix changes, in a few words
    p: float
    against: str  # the label of what it is compared with
    keys: tuple[StageKey, ...]  # the fix's probe stages, one per seed
    base: tuple[StageKey, ...]  # the counterpart's, the same seeds


@dataclass(frozen=True)
class Figure:
    """A per-model figure the table compares: its column, how to read it from a probe's results."""

    column: str
    read: Callable[[dict, str], float | None]  # (results, object count) -> value in [0, 1]
    bias: bool  # a bias figure (lower is the fix working) rather than a competence one


def _share(family: str, template: str | None = None) -> Callable[[dict, str], float | None]:
    def read(res: dict, n: str) -> float | None:
        m = metric(res, family, n, template)
        return None if m is None else m["share"][0]
    return read


def half_truths(res: dict, n: str | None = None) -> float | None:
    """The share of images preferring their correct caption to it plus one wrong detail, the
    mean over the kinds of wrong detail the data allows (each kind one share, all counts)."""
    groups = res.get("half_truths") or {}
    stats = groups.get(ALL_KINDS) or (groups.get(n) if n else None) or next(iter(groups.values()), None)
    vals = [s["value"] for s in stats or [] if s.get("value") is not None and s.get("n")]
    return sum(vals) / len(vals) if vals else None


def set_r1(res: dict, n: str | None = None) -> float | None:
    return (res.get("gates", {}).get("set R@1") or {}).get("value")


FIGURES = (Figure("TOR first share", _share("tor", "and"), True),
           Figure("IOR largest share", _share("ior"), True),
           Figure("set R@1", set_r1, False),
           Figure("half-truths", half_truths, False),
           Figure("text sensitivity 1st share", _share("sens"), True))
HEADLINE = FIGURES[:3]  # the findings: the two biases and what the fix costs in retrieval


def arms(c: SetContext) -> list[Arm]:
    """The fixes of the recipe that its graph holds, at every p (fine-tunes at theirs)."""
    from comco.train import OBJECTIVES

    o, seeds, out = c.oset, c.seeds, []
    for v in c.s["scratch"].get("variants", []):
        objective = v.get("objective")
        if objective not in FIX_OBJECTIVES:
            continue
        what = OBJECTIVES[objective]
        if v.get("siglip_bias") is not None:
            what += f", b from {v['siglip_bias']:g} (SigLIP's code: -10)"
        for p in reversed(c.ps):  # the biased captions first, the control after
            out.append(Arm(v["name"], what, p, f"{PLAIN}, p = {p:g}",
                           tuple(probe_key(scratch_key(o, p, s, v["name"])) for s in seeds),
                           tuple(probe_key(scratch_key(o, p, s)) for s in seeds)))
    ft = c.s["finetune"]
    p1 = ft["order_bias"]
    tuned = {v["name"]: v for v in ft["variants"]}
    for name, v in tuned.items():
        what = (f"fine-tuned with {'DeBias' if v['kind'] == 'debias' else 'Long-CLIP'}'s sampler on the long "
                f"captions{', first positions free' if v.get('freeze') is False else ''}")
        out.append(Arm(name, what, p1, f"{PLAIN}, p = {p1:g} (its base)",
                       tuple(probe_key(finetune_key(o, name, s)) for s in seeds),
                       tuple(probe_key(scratch_key(o, p1, s)) for s in seeds)))
    free = [n for n, v in tuned.items() if v["kind"] == "longclip" and v.get("freeze") is False]
    frozen = [n for n, v in tuned.items() if v["kind"] == "longclip" and v.get("freeze", True) is not False]
    if free and frozen:
        out.append(Arm(f"{free[0]} vs {frozen[0]}", "the first stretched positions trained (Long-CLIP freezes them)",
                       p1, frozen[0], tuple(probe_key(finetune_key(o, free[0], s)) for s in seeds),
                       tuple(probe_key(finetune_key(o, frozen[0], s)) for s in seeds)))
    return [a for a in out if all(c.run.has(k) for k in a.keys + a.base)]


def has_fixes(c: SetContext) -> bool:
    return any(v.get("objective") in FIX_OBJECTIVES for v in c.s["scratch"].get("variants", []))


def _values(c: SetContext, keys: tuple, passing: set, fig: Figure, n: str) -> list:
    return [fig.read(c.run.results(k), n) if k in passing else None for k in keys]


def reading(j: Judgement, bias: bool) -> str:
    """The rule's verdict on a paired change, in words for a table cell."""
    if j.verdict == CANNOT:
        return "no change measurable" if j.way == NEITHER else f"cannot answer: {j.reason}"
    word = {UP: "raises" if bias else "higher", DOWN: "lowers" if bias else "lower"}[j.way]
    if j.verdict == FRAGILE:
        return f"{word}, fragile (not without seed {', '.join(map(str, j.left_out))})"
    return word


def change_cell(d: dict, j: Judgement, bias: bool, passed: tuple[int, int] | None = None) -> str:
    if d.get("mean") is None:
        if passed is not None:
            return f"no pair to compare: {passed[0]} fix and {passed[1]} plain model(s) passed their gates"
        return "no pair to compare"
    return f"{signed(d, unit='')}: {reading(j, bias)}"


def fixes_sections(c: SetContext, passing: set, counts: list[int]) -> dict:
    """The per-model table of the fixes and their plain counterparts (a section of the report),
    the findings, and the lead table the report opens with (c.leads)."""
    if not has_fixes(c) or not counts:
        return {}
    todo = arms(c)
    if not todo:
        return {}
    n, seeds = str(counts[-1]), c.seeds
    numbers: dict = {"object_count": int(n), "arms": {}}
    anchor = c.h(3, "The field's fixes against the two biases")
    c.doc.p(f"Each fix beside the plain contrastive model it changes, per seed: the scratch fixes are trained at "
            f"every p with the same renders, captions, seeds and steps as the recipe's own contrastive models; the "
            f"fine-tunes start from the p = {c.s['finetune']['order_bias']:g} contrastive model of their seed. "
            f"Figures on the {n}-object test scenes in % (mean over the seeds whose model passed its gates, 95 % "
            "t-interval across seeds): TOR first share and IOR largest share are the two biases (chance "
            f"{100 / int(n):.1f} %), set R@1 is retrieval on the captions the model was taught, half-truths the "
            "share of images preferring their correct caption to it plus one wrong detail (chance 50 %, the mean "
            "over the kinds of wrong detail), text sensitivity the first mention's share of the caption "
            "embedding's sensitivity (chance as TOR's).")
    rows, plain_rows, judged, counts, dashes = [], {}, {}, {}, Dashes()
    none = "no model of this row passed its gates"
    for a in todo:
        per_fig = {f.column: (_values(c, a.keys, passing, f, n), _values(c, a.base, passing, f, n))
                   for f in FIGURES}
        passed = (sum(k in passing for k in a.keys), sum(k in passing for k in a.base))
        counts[a] = passed
        if a.against.startswith(PLAIN):  # a pairing of two fixes (free vs frozen) has both rows already
            rows.append([a.name, f"{a.p:g}", f"{passed[0]} of {len(seeds)}"]
                        + [pct(summarize(per_fig[f.column][0]), dashes=dashes, missing=none) for f in FIGURES])
            plain_rows.setdefault(a.p, [PLAIN, f"{a.p:g}", f"{passed[1]} of {len(seeds)}"]
                                  + [pct(summarize(per_fig[f.column][1]), dashes=dashes, missing=none)
                                     for f in FIGURES])
        entry = {"p": a.p, "what": a.what, "against": a.against, "passing": list(passed), "figures": {}}
        for f in FIGURES:
            mine, base = per_fig[f.column]
            j = judge_paired(mine, base, seeds, need=c.need, claimed=DOWN)
            judged[a, f.column] = (paired(mine, base), j)
            entry["figures"][f.column] = {"fix": summarize(mine), "plain": summarize(base),
                                          "change": paired(mine, base), "verdict": j.to_dict(),
                                          "reading": reading(j, f.bias)}
        numbers["arms"][f"{a.name} p{a.p:g}"] = entry
    c.doc.table(["model", "p", "passing"] + [f.column for f in FIGURES], list(plain_rows.values()) + rows)
    footnotes(c, dashes)
    c.doc.p("Each fix minus its counterpart of the same seed (the plain contrastive model at the same p; a "
            "fine-tune's base; the frozen Long-CLIP fine-tune for the free one), in points with the paired 95 % "
            "t-interval, and the rule's reading:")
    c.doc.table(["fix", "p", "against"] + [f"Δ {f.column} (points)" for f in FIGURES],
                [[a.name, f"{a.p:g}", a.against]
                 + [change_cell(*judged[a, f.column], f.bias, counts[a]) for f in FIGURES] for a in todo])
    _lead(c, todo, judged, counts, anchor, n)
    for a in todo:
        if a.p != max(c.ps):
            continue
        for f in HEADLINE:
            d, j = judged[a, f.column]
            if f.bias:
                q = f"Does {a.name} ({a.what}) lower the {f.column} against {a.against} (paired by seed, {n} objects)?"
            else:
                q = f"Does {a.name} ({a.what}) cost {f.column} against {a.against} (paired by seed)?"
            c.find(q, signed(d), j)
    return numbers


def _lead(c: SetContext, todo: list[Arm], judged: dict, counts: dict, anchor: str, n: str) -> None:
    """The table the report opens with: which fix moves which bias, by how much, at what cost."""
    lead = Doc()
    lead.p(f"**Which fix moves which bias, by how much, at what cost in retrieval** (`{c.oset}`, {n}-object test "
           "scenes). Each cell is the fix minus the plain model of the same seed, in points, with its 95 % "
           "t-interval across seeds, and what the one rule reads from it: *lowers* or *raises* (*higher*, *lower* "
           "for retrieval) only where the interval excludes zero with every seed and with any one left out; "
           "*fragile* where it does so only with every seed; *no change measurable* where it includes zero. "
           f"Rows at p = {max(c.ps):g} are the biased captions (the largest object named first), rows at "
           f"p = {min(c.ps):g} the control; a scratch fix is paired with the plain model of its p, a fine-tune "
           "with its base, the free Long-CLIP fine-tune with the frozen one. Set R@1 is retrieval on the "
           f"captions the model was taught. [Every figure, half-truths and text sensitivity too](#{anchor}).")
    rows = []
    for a in todo:
        rows.append([f"{a.name}: {a.what}", f"{a.p:g}"]
                    + [change_cell(*judged[a, f.column], f.bias, counts[a]) for f in HEADLINE])
    lead.table(["fix", "p"] + [f"Δ {f.column} (points)" for f in HEADLINE], rows)
    path = forest_plot(c.fig / f"{c.oset}-fixes.png", f"The fixes against the plain model ({c.oset}, {n} objects)",
                       [f"{a.name}, p = {a.p:g}" for a in todo],
                       {f"Δ {f.column}": [judged[a, f.column][0] for a in todo] for f in HEADLINE})
    lead.img(path, "each fix's paired change in the two biases and in retrieval")
    c.leads.append(lead)


__all__ = ["FIX_OBJECTIVES", "arms", "fixes_sections", "half_truths"]
