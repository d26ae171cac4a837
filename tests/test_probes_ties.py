"""Ties are ties: a top-1 decided by float32 rounding is no preference (issue 39).

An untrained image tower maps every image to nearly one embedding, so the best and the second
best single render differ by about 1e-7 and which one "wins" flips with the batch an image
was encoded in. These tests plant such near-ties (scores 1e-7 apart in float32) and check that
IOR, TOR and the lab's findings count them as ties, leave them out of the shares and say
"no preference measurable" where a figure rests mostly on them. No torch.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.probes import SET, FakeEmbedder, planned_data

from comco.lab.report.context import SetContext
from comco.lab.report.dose import judge_prior, prior_stat
from comco.lab.report.stats import metric, no_preference, pct
from comco.lab.report.verdict import CANNOT, SUPPORTED
from comco.probes.ior import ior
from comco.probes.retrieval import NO_PREFERENCE, TIE_ULPS, mostly_ties, near_ties, role_retrieval, tie_tolerance
from comco.probes.tor import tor_dataset
from comco.probes.words import mention_sequence
from comco.record import measured_ranks

BASE = np.float32(0.99995)  # the untrained tower's cosines: 0.99995-1.0
ULP = float(np.spacing(BASE))  # 5.96e-8 at this magnitude


def test_the_tolerance_is_a_few_ulps_of_the_scores_float_type():
    assert tie_tolerance(np.array([0.99995]))[0] == pytest.approx(TIE_ULPS * ULP)
    assert tie_tolerance(np.array([0.3]))[0] < tie_tolerance(np.array([0.99995]))[0]  # relative to magnitude
    assert tie_tolerance(np.array([0.99995]), np.float16)[0] > 100 * tie_tolerance(np.array([0.99995]))[0]
    sim = np.array([[BASE, BASE - 1e-7, 0.2],     # 1e-7 apart: rounding
                    [BASE, BASE - 1e-5, 0.2],     # 1e-5 apart: a preference
                    [0.2, BASE, BASE]])           # exact tie
    assert near_ties(sim).tolist() == [True, False, True]
    # two candidates that count alike (two absent objects) tie harmlessly
    outcome = np.array([[-1, -1, 0], [-1, -1, 0], [-1, 0, 0]])
    assert near_ties(sim, np.float32, outcome).tolist() == [False, False, False]


def test_role_retrieval_leaves_near_ties_out_of_the_shares():
    """Six queries whose "largest" wins by 1e-7 and four that clearly prefer the 2nd largest:
    today's argmax reads 60 % for the largest; the ties are not a preference."""
    sim = np.full((10, 4), 0.2)
    sim[:6, 0], sim[:6, 1] = BASE, BASE - 1e-7
    sim[6:, 1], sim[6:, 0] = BASE, BASE - 1e-3
    targets = np.tile([0, 1, 2], (10, 1))
    res = role_retrieval(sim, targets, ["largest", "2nd largest", "3rd largest"], np.arange(10), n_boot=0, seed=0)
    large, second, _ = res["metrics"]["unconditional"]
    assert res["ties"] == 6 and res["tie_share"] == pytest.approx(0.6) and "near-ties" in res["tie_rule"]
    assert (large["n"], large["acc"], large["ties"]) == (4, 0.0, 6)
    assert (second["n"], second["acc"]) == (4, 1.0)
    assert mostly_ties(large["ties"], large["n"])


def untrained_tower(data, rng) -> FakeEmbedder:
    """Every image and render at nearly one embedding: a shared axis plus noise of 1e-4, where
    the largest object leans by 1e-8 (below float32's resolution: 1e-7 steps in the cosine)."""
    dim = len(SET.names) + 1
    table = {}
    for r in data.records:
        v = np.zeros(dim)
        v[-1] = 1.0
        for o, k in zip(r["objects"], measured_ranks(r)):
            v[SET.names.index(o["name"])] = 1e-4 + (1e-8 if k == 0 else 0.0)
        table[r["image"]] = v / np.linalg.norm(v)
    for s in data.singles:
        v = np.zeros(dim)
        v[-1], v[SET.names.index(s["name"])] = 1.0, 1e-4 * (1 + rng.uniform(-1e-3, 1e-3))
        table[s["image"]] = v / np.linalg.norm(v)
    return FakeEmbedder(lambda t: np.ones(dim) / np.sqrt(dim), lambda p: table[str(p)])


def test_ior_of_an_untrained_tower_is_mostly_ties_and_the_finding_says_so():
    """IOR with float32 embeddings 1e-7 apart: the probe counts the ties, the lab's metric gives
    no number for such a model, and the finding reads "no preference measurable"."""
    data = planned_data(n=40, objects=(3, 4))
    priors = []
    for seed in range(3):
        by_size, _ = ior(data, untrained_tower(data, np.random.default_rng(seed)), n_boot=0, seed=0)
        for g in by_size:
            assert g["ties"] > 0.5 * g["queries"], g["key"]
            assert g["metrics"]["unconditional"][0]["ties"] == g["ties"]
        priors.append({"ior": {str(g["n_objects"]): {"unconditional": [
            {"role": s["role"], "value": s["acc"], "n": s["n"], "ties": s["ties"], "chance": s["chance"]}
            for s in g["metrics"]["unconditional"]]} for g in by_size}})
    m = metric(priors[0], "ior", "4")
    assert m["no_preference"] and m["share"][0] is None and m["tie_share"] > 0.5
    pr = prior_stat(priors, "ior", "4", None, 0)
    assert pr["mean"] is None and pr["no_preference"] and pr["tied_models"] == 3
    assert pct(pr).startswith(NO_PREFERENCE) and no_preference(pr).startswith(NO_PREFERENCE)
    c = SetContext(doc=None, run=None, fig=None, oset="simco",
                   s={"data": {"order_bias": [0.0, 1.0]}, "scratch": {"seeds": [0, 1, 2]}, "gates": {"min_passing": 2}})
    j = judge_prior(c, priors, "ior", "4", None, 0.25)
    assert j.verdict == CANNOT and j.reason.startswith(NO_PREFERENCE)


def test_a_clear_preference_is_still_read():
    """The same shapes with the largest object ahead by 1e-3 (thousands of ulps): no ties, and
    the untrained tower's preference for the largest is supported."""
    data = planned_data(n=40, objects=(4,))
    priors = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        emb = untrained_tower(data, rng)
        table = {}
        for r in data.records:
            v = np.zeros(len(SET.names) + 1)
            v[-1] = 1.0
            for o, k in zip(r["objects"], measured_ranks(r)):
                v[SET.names.index(o["name"])] = 0.05 if k == 0 else 0.01 * (1 + rng.uniform())
            table[r["image"]] = v / np.linalg.norm(v)
        for s in data.singles:
            table[s["image"]] = emb.image_fn(s["image"])
        by_size, _ = ior(data, FakeEmbedder(emb.text_fn, lambda p, t=table: t[str(p)]), n_boot=0, seed=0)
        assert all(g["ties"] == 0 for g in by_size)
        priors.append({"ior": {str(g["n_objects"]): {"unconditional": [
            {"role": s["role"], "value": s["acc"], "n": s["n"], "ties": s["ties"]}
            for s in g["metrics"]["unconditional"]]} for g in by_size}})
    c = SetContext(doc=None, run=None, fig=None, oset="simco",
                   s={"data": {"order_bias": [0.0, 1.0]}, "scratch": {"seeds": [0, 1, 2]}, "gates": {"min_passing": 2}})
    assert judge_prior(c, priors, "ior", "4", None, 0.25).verdict == SUPPORTED


def test_tor_captions_that_embed_alike_for_every_mention_are_ties():
    """A text tower that gives a caption the same cosine (to 1e-7) with each name it mentions:
    every TOR query is a tie, none reads as a first-mention preference."""
    data = planned_data(n=20, objects=(3,))
    dim = len(SET.names) + 1

    def text(t: str) -> np.ndarray:
        v = np.zeros(dim)
        v[-1] = 1.0
        mentioned = mention_sequence(t, SET.names)
        if len(mentioned) == 1:  # a gallery name
            v[SET.names.index(mentioned[0])] = 1e-4
        else:
            for i, name in enumerate(mentioned):
                v[SET.names.index(name)] = 1e-4 + (1e-9 if i == 0 else 0.0)
        return v / np.linalg.norm(v)

    groups = tor_dataset(data, FakeEmbedder(text), ["and"], n_boot=0, seed=0)
    assert groups
    for g in groups:
        first = g["metrics"]["unconditional"][0]
        assert g["ties"] == g["queries"] and first["n"] == 0 and first["ties"] == g["queries"]


def _prior(largest: float, ties: int, queries: int = 100) -> dict:
    n = queries - ties
    return {"ior": {"3": {"unconditional": [{"role": "largest", "value": largest, "n": n, "ties": ties},
                                            {"role": "2nd largest", "value": 0.1, "n": n, "ties": ties},
                                            {"role": "3rd largest", "value": 0.1, "n": n, "ties": ties}]}}}


def test_a_finding_rests_on_ties_when_most_of_its_models_or_queries_do():
    """One model of three mostly ties: the other two give the number, and the ties are named
    beside it. Two of three: "no preference measurable", whatever the third says."""
    one = prior_stat([_prior(0.6, 80), _prior(0.6, 10), _prior(0.6, 20)], "ior", "3", None, 0)
    assert one["mean"] == pytest.approx(0.75) and one["n"] == 2 and not one["no_preference"]
    assert one["tied_models"] == 1 and one["tie_share"] == pytest.approx(1.1 / 3)
    assert not pct(one).startswith(NO_PREFERENCE)
    two = prior_stat([_prior(0.6, 80), _prior(0.6, 60), _prior(0.6, 0)], "ior", "3", None, 0)
    assert two["no_preference"] and pct(two).startswith(NO_PREFERENCE)
    c = SetContext(doc=None, run=None, fig=None, oset="simco",
                   s={"data": {"order_bias": [0.0, 1.0]}, "scratch": {"seeds": [0, 1, 2]}, "gates": {"min_passing": 2}})
    assert judge_prior(c, [_prior(0.6, 80), _prior(0.6, 60), _prior(0.6, 0)], "ior", "3", None, 1 / 3).reason \
        .startswith(NO_PREFERENCE)
