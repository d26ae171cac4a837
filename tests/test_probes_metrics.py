"""Probe logic on planted embeddings, where the right answer is known (no torch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.probes import SET, FakeEmbedder, one_hot, planned_data, random_vec

from comco.plan import PlanConfig, Planner
from comco.probes import texts
from comco.probes.ior import i2tor, ior
from comco.probes.matching import matching, scenario_captions
from comco.probes.probe_data import ProbeData
from comco.probes.report import csv_text, markdown, tables
from comco.probes.retrieval import role_retrieval
from comco.probes.stats import accuracy
from comco.probes.tor import tor_dataset, tor_text_only
from comco.probes.words import contains_word, mention_sequence
from comco.record import measured_ranks
from comco.report.published import published_rows


def first_mention_wins(text: str) -> np.ndarray:
    found = mention_sequence(text, SET.names)
    return one_hot({n: 0.5 ** k for k, n in enumerate(found)})


# ---------------------------------------------------------------- words


def test_whole_word_matching():
    assert not contains_word("a carrot and a cube", "car")
    assert contains_word("a car and a carrot", "car")
    assert contains_word("A Cube.", "cube")
    assert mention_sequence("a hot dog, a carrot and a dog", ["dog", "hot dog", "car", "carrot"]) == \
        ["hot dog", "carrot", "dog"]
    assert mention_sequence("two cubes and a cone", ["cone", "cube"], {"cube": ["cubes"]}) == ["cube", "cone"]


# ---------------------------------------------------------------- TOR


def test_tor_first_mentioned_always_wins():
    data = planned_data()
    groups = tor_dataset(data, FakeEmbedder(first_mention_wins), ["and", "photo"], n_boot=50, seed=0)
    assert {g["template"] for g in groups} == {"and", "photo"}
    for g in groups:
        assert g["skipped"] == 0
        cond = {s["role"]: s["acc"] for s in g["metrics"]["conditional"]}
        uncond = {s["role"]: s["acc"] for s in g["metrics"]["unconditional"]}
        assert cond == {"1st": 1.0, "2nd": 0.0, "3rd": 0.0, "4th": 0.0}
        assert uncond["1st"] == 1.0
        n_orders = sum(len(r["mention_orders"]) for r in data.records)
        assert g["metrics"]["unconditional"][0]["n"] == g["queries"] == n_orders


def test_tor_last_mentioned_wins_is_seen_as_last():
    """The probe reports what the encoder does, not what CLIP usually does."""
    data = planned_data(n=20)
    emb = FakeEmbedder(lambda t: one_hot({n: 2.0 ** k for k, n in enumerate(mention_sequence(t, SET.names))}))
    (g,) = tor_dataset(data, emb, ["and"], n_boot=0, seed=0)
    assert [s["acc"] for s in g["metrics"]["conditional"]] == [0.0, 0.0, 0.0, 1.0]


def test_tor_random_encoder_is_near_chance():
    data = planned_data(n=150)
    (g,) = tor_dataset(data, FakeEmbedder(random_vec), ["and"], n_boot=200, seed=0)
    for s in g["metrics"]["unconditional"]:
        assert s["chance"] == pytest.approx(1 / 18)
        assert abs(s["acc"] - 1 / 18) < 0.05
        assert s["lo"] <= s["acc"] <= s["hi"]


def test_conditional_accuracies_sum_to_one():
    data = planned_data(n=60)

    def noisy(text):  # present objects get random positive weights: top-4 are always the present ones
        found = mention_sequence(text, SET.names)
        return one_hot({n: 1 + random_vec(text)[k] for k, n in enumerate(found)})

    (g,) = tor_dataset(data, FakeEmbedder(noisy), ["and"], n_boot=0, seed=0)
    cond = [s["acc"] for s in g["metrics"]["conditional"]]
    assert g["kept_conditional"] == g["queries"]
    assert sum(cond) == pytest.approx(1.0)
    assert all(0 < c < 1 for c in cond)


def test_caption_not_matching_its_order_is_skipped():
    data = planned_data(n=5)
    rec = data.records[0]
    rec["captions"]["and"][0] = " and ".join(reversed(rec["captions"]["and"][0].split(" and ")))
    (g,) = tor_dataset(data, FakeEmbedder(first_mention_wins), ["and"], n_boot=0, seed=0)
    assert g["skipped"] == 1
    assert g["queries"] == sum(len(r["mention_orders"]) for r in data.records) - 1


def test_text_only_tuples_are_balanced_and_first_wins():
    rng = np.random.default_rng(0)
    tup = texts.balanced_tuples(18, 4, 100, rng)
    assert len(tup) == 108  # rounded up to whole rounds of 18
    for pos in range(4):
        assert set(np.bincount(tup[:, pos], minlength=18)) == {6}
    assert all(len(set(t)) == 4 for t in tup)
    book = texts.template_book()
    groups = tor_text_only(SET.names, SET, FakeEmbedder(first_mention_wins), book.templates["photo"], [2, 4],
                           tuples=36, n_boot=0, seed=0)
    assert [g["n_objects"] for g in groups] == [2, 4]
    assert all(g["metrics"]["conditional"][0]["acc"] == 1.0 for g in groups)


# ---------------------------------------------------------------- IOR, I2TOR, matching


def _image_largest_wins(data):
    by_image = {}
    for r in data.records:
        w = {o["name"]: 0.5 ** rank for o, rank in zip(r["objects"], measured_ranks(r))}
        by_image[r["image"]] = one_hot(w)
    for s in data.singles:
        by_image[s["image"]] = one_hot({s["name"]: 1.0})
    return lambda p: by_image[str(p)]


def test_ior_largest_always_wins():
    data = planned_data(n=30, objects=(3, 4))
    by_size, by_slot = ior(data, FakeEmbedder(random_vec, _image_largest_wins(data)), n_boot=50, seed=0)
    assert [g["n_objects"] for g in by_size] == [3, 4]
    for g in by_size:
        assert g["metrics"]["conditional"][0]["role"] == "largest"
        assert g["metrics"]["conditional"][0]["acc"] == 1.0
        assert g["metrics"]["unconditional"][0]["acc"] == 1.0
        assert all(s["acc"] == 0.0 for s in g["metrics"]["conditional"][1:])
    for g in by_slot:  # every slot: the large object there always wins, small ones never
        for s in g["metrics"]["unconditional"]:
            if s["n"]:
                assert s["acc"] == (1.0 if s["role"].endswith("/large") else 0.0)


def test_ior_ranks_come_from_measured_pixels_not_the_plan():
    data = planned_data(n=10, objects=(3,))
    for r in data.records:  # the smallest planned object turns out largest once rendered
        small = max(r["objects"], key=lambda o: o["size_rank"])
        small["measured"]["pixels"] = 10 ** 6
    by_size, _ = ior(data, FakeEmbedder(random_vec, _image_largest_wins(data)), n_boot=0, seed=0)
    assert by_size[0]["metrics"]["conditional"][0]["acc"] == 1.0
    assert measured_ranks(data.records[0])[data.records[0]["objects"].index(
        max(data.records[0]["objects"], key=lambda o: o["size_rank"]))] == 0


def test_i2tor_and_matching_with_a_size_biased_image_encoder():
    data = planned_data(n=20, objects=(3,))
    images = _image_largest_wins(data)
    emb = FakeEmbedder(first_mention_wins, images)
    book = texts.template_book()
    (g,) = i2tor(data, emb, book.templates["photo"], n_boot=0, seed=0)
    assert g["metrics"]["conditional"][0]["acc"] == 1.0
    (m,) = matching(data, emb, book.templates["and"], max_distractors=None, n_boot=0, seed=0)
    acc = {s["role"]: s for s in m["metrics"]["accuracy"]}
    assert acc["scenario 1"]["n"] == 20 * (18 - 3)  # every absent object is a distractor
    assert acc["scenario 1"]["acc"] == 1.0  # the wrong caption opens with an absent object
    assert acc["scenario 2"]["acc"] == 0.0  # the wrong caption opens with the large object
    good, bad = scenario_captions(["a", "b", "c"], "x")["scenario 2"]
    assert good == ["b", "c", "a"] and bad == ["a", "b", "x"]


# ---------------------------------------------------------------- statistics


def test_bootstrap_interval_covers_the_truth():
    """Clustered trials (4 correlated captions per image): the cluster bootstrap keeps ~95 % coverage."""
    rng = np.random.default_rng(123)
    p, covered, sims = 0.3, 0, 200
    for s in range(sims):
        img_p = np.clip(p + rng.normal(0, 0.15, size=80), 0, 1)
        hits = rng.random((80, 4)) < img_p[:, None]
        clusters = np.repeat(np.arange(80), 4)
        r = accuracy(hits.ravel(), clusters, n_boot=300, seed=s)
        covered += r["lo"] <= p <= r["hi"]
    assert covered / sims >= 0.9


def test_accuracy_counts_and_empty():
    r = accuracy([1, 0, 1, 1], ["a", "a", "b", "c"], chance=0.25, n_boot=100)
    assert (r["acc"], r["n"], r["clusters"], r["chance"]) == (0.75, 4, 3, 0.25)
    e = accuracy([], chance=0.5)
    assert e["n"] == 0 and np.isnan(e["acc"])


def test_role_retrieval_missing_roles_are_not_counted():
    sim = np.array([[0.9, 0.1, 0.0], [0.1, 0.9, 0.0]])
    res = role_retrieval(sim, np.array([[0, 1], [-1, 1]]), ["A", "B"], n_boot=0, seed=0)
    a, b = res["metrics"]["unconditional"]
    assert (a["n"], a["acc"]) == (1, 1.0)
    assert (b["n"], b["acc"]) == (2, 0.5)


# ---------------------------------------------------------------- reports


def test_report_shows_published_rows_labelled_and_after_measured():
    data = planned_data(n=30)  # 30 images: enough resampled units to read
    groups = tor_dataset(data, FakeEmbedder(first_mention_wins), ["and"], n_boot=20, seed=0)
    results = {"seed": 0, "dataset": {"root": "x", "hash": "h"}, "probes": {"tor": {"m1": groups, "m2": groups}}}
    tabs = tables(results)["tor"]
    md = markdown("tor", tabs, results)
    section = md.split("## and, 4 objects, bare-name gallery - conditional")[1].split("## ")[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ")]
    measured = [i for i, ln in enumerate(lines) if ln.startswith("| m1 ") or ln.startswith("| m2 ")]
    published = [i for i, ln in enumerate(lines) if "*published:*" in ln]
    assert published and measured and max(measured) < min(published)
    assert "| m1 | 100.0 [100.0, 100.0] | 0.0 [0.0, 0.0]" in md
    assert published_rows("tor", "conditional", 4)[4]["values"]["1st"] == 50.31
    csv = csv_text("tor", tabs)
    assert "published: ComCO paper" in csv and ",measured,m2,1st,1.0," in csv


# ---------------------------------------------------------------- binding


def test_binding_with_encoders_that_bind_colours():
    import re

    from comco.probes.binding import binding

    planner = Planner(PlanConfig(object_set="simco", objects=(2, 3), n=300, resolution=(64, 64), seed=5,
                                 colors=True), SET)
    recs = list(planner.records())
    data = ProbeData(root=Path("/x"), info={"object_set": "simco"}, records=recs, singles=[],
                     names=list(SET.names), object_set=SET, image_path=lambda r: Path(r["image"]))
    colors = sorted(SET.palette)
    pairs = [(n, c) for n in SET.names for c in colors]

    def vec(found):
        v = np.zeros(len(pairs))
        for k, pair in enumerate(found):
            v[pairs.index(pair)] += 0.8 ** k
        return v / np.linalg.norm(v)

    def text_fn(text):  # the colour word right before each name binds to it
        low = text.lower()
        names = mention_sequence(low, SET.names)
        return vec([(n, re.search(r"(\w+) " + re.escape(n) + r"\b", low).group(1)) for n in names])

    images = {r["image"]: vec([(o["name"], o["color"]) for o in r["objects"]]) for r in recs}
    (g,) = binding(data, FakeEmbedder(text_fn, lambda p: images[str(p)]), test_fraction=0.3, n_boot=50, seed=0)
    acc = {s["role"]: s for s in g["metrics"]["accuracy"]}
    assert acc["cross-modal"]["acc"] == 1.0 and acc["cross-modal"]["n"] > 50
    for role in ("image probe", "text probe"):
        assert acc[role]["n"] > 0 and acc[role]["acc"] > acc[role]["chance"] + 0.2
