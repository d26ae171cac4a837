"""The lab report's one verdict rule (comco.lab.report.verdict) on synthetic numbers: a
direction is read before any width, paired where the design pairs, and a verdict that
does not survive leaving one seed out is fragile (pure Python: numpy only)."""

from __future__ import annotations

import json

import pytest

from comco.lab.report.dose import dose_paragraph, judge_slope
from comco.lab.report.stats import cell
from comco.lab.report.verdict import (
    CANNOT,
    CONTRADICTED,
    DOWN,
    FRAGILE,
    NEITHER,
    SUPPORTED,
    UP,
    compare,
    direction,
    judge,
    judge_paired,
    separation,
)


def iv(mean, lo, hi, n=3):
    """An across-seed summary in share units, from points."""
    return {"mean": mean / 100, "lo": lo / 100, "hi": hi / 100, "n": n}


def test_disjoint_intervals_are_read_before_their_width():
    """The small report's Long-CLIP First-2 57.2 [53.9, 60.5] against Swap-2 34.7 [21.9, 47.5]:
    25.6 points wide, yet they do not overlap (the old rule said "too wide to say")."""
    first2, swap2 = iv(57.2, 53.9, 60.5), iv(34.7, 21.9, 47.5)
    assert separation(first2, swap2) == UP and separation(swap2, first2) == DOWN
    text = compare("first-2", first2, "swap-2", swap2, "R@1")
    assert "first-2 is higher and the intervals do not overlap" in text and "too wide" not in text


def test_overlapping_intervals_say_so_and_wide_ones_say_too_wide():
    narrow = compare("a", iv(50, 45, 55), "b", iv(48, 44, 52), "R@1")
    assert "within the seed spread" in narrow
    wide = compare("a", iv(50, 20, 80), "b", iv(45, 30, 60), "R@1")
    assert "overlap and are too wide to say" in wide


def test_a_paired_design_is_judged_by_its_paired_interval():
    """Long-CLIP Keep - Remove: the unpaired intervals overlap, the paired one excludes zero."""
    keep, remove = iv(60.0, 30.0, 90.0), iv(35.4, 10.0, 60.8)
    assert separation(keep, remove) == NEITHER
    text = compare("keep", keep, "remove", remove, "R@1", d=iv(24.6, 1.6, 47.6))
    assert "keep is higher, and the paired interval excludes zero" in text
    assert "+24.6 points [+1.6, +47.6]" in text
    text = compare("keep", keep, "remove", remove, "R@1", d=iv(10.0, -20.0, 40.0))
    assert "includes zero, and it is too wide" in text


def test_the_slope_sentence_reads_the_direction_first():
    """The TOR 4-object slope +59.0 [+33.5, +84.4] excludes zero though it is 51 points wide."""
    assert direction(0.335, 0.844) == UP and direction(-0.2, 0.1) == NEITHER and direction(-0.3, -0.1) == DOWN
    ps = [0.0, 0.5, 1.0]
    sl = {"mean": 0.59, "lo": 0.335, "hi": 0.844, "n": 9}
    j = judge(lambda drop: sl, [0, 1, 2], need=3, claimed=UP, wide=0.5)
    text = dose_paragraph("the share", ps, iv(30, 25, 35), iv(85, 80, 90), sl, 0.25, "the claim", prior=None, j=j)
    assert "The interval excludes zero: the data support the claim." in text and "too wide" not in text
    wide = {"mean": 0.1, "lo": -0.3, "hi": 0.5, "n": 9}
    j = judge(lambda drop: wide, [0, 1, 2], need=3, claimed=UP, wide=0.5)
    assert j.verdict == CANNOT and j.reason == "too wide to tell"
    text = dose_paragraph("the share", ps, iv(30, 25, 35), iv(40, 30, 50), wide, 0.25, "the claim", j=j)
    assert "includes zero and is too wide" in text


def test_verdicts_for_a_claim():
    up = [0.10, 0.12, 0.11, 0.09, 0.13]
    base = [0.0] * 5
    seeds = [0, 1, 2, 3, 4]
    assert judge_paired(up, base, seeds, need=2, claimed=UP).verdict == SUPPORTED
    assert judge_paired(up, base, seeds, need=2, claimed=DOWN).verdict == CONTRADICTED
    noise = [0.05, -0.04, 0.02, -0.03, 0.01]
    j = judge_paired(noise, base, seeds, need=2)
    assert j.verdict == CANNOT and j.reason == "the interval includes zero"
    few = [0.1, None, None, None, None]
    assert judge_paired(few, base, seeds, need=2).verdict == CANNOT


def test_a_verdict_that_rests_on_one_seed_is_fragile():
    """Leave-one-seed-out: five seeds at +10..13 points hold without any one of them. Four
    where one sits near zero: with all four the interval just excludes zero, without any
    one of the three high ones it does not (without the low one it does)."""
    robust = judge_paired([0.10, 0.11, 0.12, 0.10, 0.13], [0.0] * 5, [0, 1, 2, 3, 4], need=2)
    assert robust.verdict == SUPPORTED and robust.checked and robust.left_out == ()
    fragile = judge_paired([0.20, 0.22, 0.21, 0.01], [0.0] * 4, [0, 1, 2, 3], need=2)
    assert fragile.way == UP and fragile.estimate["lo"] > 0
    assert fragile.verdict == FRAGILE and fragile.left_out == (0, 1, 2)
    # two passing models only: leaving one out leaves too few for an interval
    two = judge_paired([0.20, 0.21, None], [0.0] * 3, [0, 1, 2], need=2)
    assert two.verdict == FRAGILE and set(two.left_out) == {0, 1}
    assert json.loads(json.dumps(fragile.to_dict()))["verdict"] == "fragile"


def test_a_slope_is_checked_with_each_seed_left_out():
    """Per-seed synthetic TOR shares at p = 0, 0.5, 1: a clean rise is supported; a rise
    carried by seed 2 alone is fragile."""
    from comco.lab.report.context import SetContext

    def probes(rows: dict) -> dict:
        # rows: seed -> first-mention share at each p; the other of two positions takes the rest
        return {(p, seed): {"tor": {"and": {"2": {"unconditional": [
            {"role": "1st", "value": v}, {"role": "2nd", "value": 1 - v}]}}}}
            for seed, vals in rows.items() for p, v in zip([0.0, 0.5, 1.0], vals)}

    c = SetContext(doc=None, run=None, fig=None, oset="simco",
                   s={"data": {"order_bias": [0.0, 0.5, 1.0]}, "scratch": {"seeds": [0, 1, 2]},
                      "gates": {"min_passing": 2}})
    clean = probes({0: [0.30, 0.50, 0.70], 1: [0.32, 0.52, 0.69], 2: [0.31, 0.49, 0.72]})
    assert judge_slope(c, clean, "tor", "2", "and", 0).verdict == SUPPORTED
    # seeds 0 and 1 rise by 20 points, seed 2 does not: the fit over all nine models
    # excludes zero, but without seed 0 or seed 1 it does not
    carried = probes({0: [0.30, 0.40, 0.50], 1: [0.31, 0.41, 0.50], 2: [0.45, 0.38, 0.42]})
    j = judge_slope(c, carried, "tor", "2", "and", 0)
    assert j.way == UP and j.estimate["lo"] > 0
    assert j.verdict == FRAGILE and j.left_out == (0, 1)
    # too few passing models at one end: cannot answer, whatever the slope
    del carried[1.0, 0], carried[1.0, 1]
    assert judge_slope(c, carried, "tor", "2", "and", 0).verdict == CANNOT


@pytest.mark.parametrize("figure,text", [
    ({"value": 0.998, "lo": 0.995, "hi": 1.0}, "99.8 [99.5, 100.0]"),
    ({"value": 0.5, "lo": 0.4567, "hi": 0.5433}, "50.0 [45.7, 54.3]"),
    ({"value": 0.9, "lo": None, "hi": None}, "90.0"),
    (None, "–"),
])
def test_gate_cells_print_bounds_with_the_values_precision(figure, text):
    assert cell(figure) == text
