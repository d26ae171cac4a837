"""The one rule every sentence and every finding of the lab report comes from.

An estimate is an interval: a paired difference across seeds (the report's designs are
paired: two caption variants of one model, two fine-tunes of one base, a map and its
base), a fitted slope, or, where nothing pairs, two intervals side by side. The rule, in
this order:

1. too few passing models, or no interval: **cannot answer**;
2. the interval excludes zero (two intervals: they do not overlap): the direction is
   read, and a claim in that direction is **supported**, one in the other **contradicted**;
3. otherwise: **cannot answer**, worded "too wide to tell" when the interval is wider than
   `wide`, "includes zero" when it is not. Width never hides a direction.

Then every verdict that reads a direction is computed again with each seed left out in
turn; if one such verdict differs, the finding rests on that seed: **fragile**, not a finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from comco.lab.report.stats import SHARE_DIFFERENCE, paired, pct, signed
from comco.probes import NO_PREFERENCE

SUPPORTED, CONTRADICTED, CANNOT, FRAGILE = "supported", "contradicted", "cannot answer", "fragile"
UP, DOWN, NEITHER, UNKNOWN = "up", "down", "neither", "unknown"
WIDE = 0.25  # an across-seed interval wider than this (share units) that includes zero is "too wide to tell"
SLOPE_WIDE = 2 * WIDE  # a slope is per unit of p: twice the width of a difference


def direction(lo: float | None, hi: float | None) -> str:
    """Where an interval lies against zero: UP (above), DOWN (below), NEITHER, UNKNOWN (none)."""
    if lo is None or hi is None:
        return UNKNOWN
    if lo > 0:
        return UP
    if hi < 0:
        return DOWN
    return NEITHER


def separation(a: dict, b: dict) -> str:
    """Two unpaired intervals: UP when a lies above b (no overlap), DOWN below, NEITHER overlapping."""
    if a.get("lo") is None or b.get("lo") is None:
        return UNKNOWN
    if a["lo"] > b["hi"]:
        return UP
    if a["hi"] < b["lo"]:
        return DOWN
    return NEITHER


def claim_verdict(way: str, claimed: str = UP) -> str:
    """supported / contradicted / cannot answer, for a claim that the estimate goes `claimed`."""
    if way in (UP, DOWN):
        return SUPPORTED if way == claimed else CONTRADICTED
    return CANNOT


@dataclass(frozen=True)
class Judgement:
    """A verdict with what it rests on: the estimate, its direction, and the leave-one-seed-out check."""

    verdict: str  # SUPPORTED, CONTRADICTED, CANNOT or FRAGILE
    way: str  # UP, DOWN, NEITHER or UNKNOWN, on all seeds
    estimate: dict
    reason: str  # why, in a few words
    left_out: tuple = ()  # the seeds whose leaving out changes the direction (FRAGILE)
    checked: bool = False  # True when the leave-one-seed-out check ran

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "direction": self.way, "estimate": self.estimate, "reason": self.reason,
                "fragile_without_seeds": list(self.left_out), "leave_one_seed_out_checked": self.checked}


def judge(estimate_for: Callable[[frozenset], dict], seeds: Iterable, *, need: int, claimed: str = UP,
          wide: float = WIDE, reference: str = "zero") -> Judgement:
    """The rule on an estimate computed from seeds, with each seed left out in turn.

    Args:
        estimate_for: the estimate ({"mean", "lo", "hi", "n"}) without the given seeds.
        seeds: the seeds the design has. need: the least number of models (or pairs) it
            takes. claimed: the direction a claim predicts (UP or DOWN). wide: see module.
            reference: what the estimate's zero stands for ("chance" when it is a share
            minus its chance level), for the reason given.
    """
    seeds = list(seeds)
    est = estimate_for(frozenset())
    if est.get("no_preference"):
        # the models' figures rest mostly on near-ties (comco.probes.retrieval): rounding, not a preference
        return Judgement(CANNOT, UNKNOWN, est, f"{NO_PREFERENCE}: {100 * est['tie_share']:.0f} % of the queries "
                         f"near-ties, {est['tied_models']} of {est['models']} model(s) mostly ties")
    way = _way(est, need)
    if way == UNKNOWN:
        return Judgement(CANNOT, way, est, f"{est.get('n', 0)} passing model(s), fewer than {need}")
    if way == NEITHER:
        what = "too wide to tell" if est["hi"] - est["lo"] > wide else f"the interval includes {reference}"
        return Judgement(CANNOT, way, est, what)
    flips = tuple(s for s in seeds if _way(estimate_for(frozenset([s])), need) != way)
    verdict = claim_verdict(way, claimed)
    if flips:
        return Judgement(FRAGILE, way, est, f"{verdict} with every seed, not without seed "
                         f"{', '.join(map(str, flips))}", flips, True)
    return Judgement(verdict, way, est, "holds with any one seed left out", (), True)


def _way(est: dict, need: int) -> str:
    if est.get("mean") is None or est.get("lo") is None or est.get("n", 0) < need:
        return UNKNOWN
    return direction(est["lo"], est["hi"])


def loo_sentence(j: Judgement) -> str:
    """What leaving one seed out does to a verdict that reads a direction."""
    if not j.checked:
        return ""
    if j.verdict == FRAGILE:
        return (f" Without seed {', '.join(map(str, j.left_out))} the interval no longer excludes zero (or "
                "too few models remain): the result is fragile, not a finding.")
    return " It holds with any one seed left out."


def compare(name_a: str, a: dict, name_b: str, b: dict, what: str, d: dict | None = None,
            unit: str = " points") -> str:
    """One sentence comparing two across-seed summaries: by their paired difference `d`
    where the design pairs them (the same seeds on both sides), else by whether the two
    intervals overlap. Either way a direction is read before any width is."""
    if a.get("mean") is None or b.get("mean") is None:
        return f"{what}: not measured for both."
    diff = 100 * (a["mean"] - b["mean"])
    if a.get("lo") is None or b.get("lo") is None:
        return (f"{what} is {100 * a['mean']:.1f} for {name_a} and {100 * b['mean']:.1f} for {name_b} "
                f"(a difference of {diff:+.1f}{unit}); with one seed there is no interval, so this is not a finding.")
    head = f"{what} is {pct(a)} for {name_a} against {pct(b)} for {name_b}"
    if d is not None:
        way = direction(d.get("lo"), d.get("hi"))
        tail = {UP: f"{name_a} is higher, and the paired interval excludes zero",
                DOWN: f"{name_a} is lower, and the paired interval excludes zero",
                NEITHER: ("the paired interval includes zero, and it is too wide to tell which is larger"
                          if d["hi"] - d["lo"] > WIDE else "the paired interval includes zero"),
                UNKNOWN: "too few seeds pair up to tell"}[way]
        return f"{head} (paired difference {signed(d, unit)}): {tail}."
    way = separation(a, b)
    tail = {UP: f"{name_a} is higher and the intervals do not overlap",
            DOWN: f"{name_a} is lower and the intervals do not overlap",
            NEITHER: ("the intervals overlap and are too wide to say which is larger"
                      if max(a["hi"] - a["lo"], b["hi"] - b["lo"]) > WIDE
                      else "the intervals overlap, so the difference is within the seed spread"),
            UNKNOWN: ""}[way]
    return f"{head} ({diff:+.1f}{unit}): {tail}."


def judge_paired(a: list, b: list, seeds: list, *, need: int, claimed: str = UP, wide: float = WIDE,
                 reference: str = "zero", bounds: tuple[float, float] | None = SHARE_DIFFERENCE) -> Judgement:
    """The rule on per-seed differences a - b (lists aligned with `seeds`, None where a
    model is missing or below its gates), each seed left out in turn; `bounds` as paired()'s."""
    def estimate(drop: frozenset) -> dict:
        keep = [i for i, s in enumerate(seeds) if s not in drop]
        return paired([a[i] for i in keep], [b[i] for i in keep], bounds)

    return judge(estimate, seeds, need=need, claimed=claimed, wide=wide, reference=reference)
