"""Competence gates on planted embeddings, where the right answer is known (no torch)."""

from __future__ import annotations

import numpy as np
import pytest
from support.probes import SET, FakeEmbedder, one_hot, planned_data, random_vec

from comco.probes.gates import GATE_FIGURES, gate_figures, gate_passes, ior_present_only
from comco.probes.words import mention_sequence
from comco.record import measured_ranks

THRESHOLDS = {"set R@1": 0.8, "swap largest": 0.9, "swap small": 0.9, "presence TOR": 0.9, "presence IOR": 0.9}


def image_table(data, weight) -> dict[str, np.ndarray]:
    """Image path -> planted embedding: weight(size rank) per present object; singles name theirs."""
    table = {}
    for r in data.records:
        ranks = measured_ranks(r)
        table[r["image"]] = one_hot({o["name"]: weight(k) for o, k in zip(r["objects"], ranks, strict=True)})
    for s in data.singles:
        table[s["image"]] = one_hot({s["name"]: 1.0})
    return table


def competent(data):
    """Images and captions both embed the set of objects they hold: a model that learned."""
    table = image_table(data, lambda k: 1.0)
    return FakeEmbedder(lambda t: one_hot({n: 1.0 for n in mention_sequence(t, SET.names)}),
                        lambda p: table[str(p)])


def value(f: dict) -> float:
    return f["acc"]


def test_a_model_that_learned_the_sets_passes_every_gate():
    data = planned_data(n=40, objects=(3, 4))
    figs = gate_figures(data, competent(data), "and", n_boot=50, seed=0)
    assert set(figs) == set(GATE_FIGURES)
    for name in ("set R@1", "swap largest", "swap small", "presence TOR", "presence IOR"):
        assert value(figs[name]) == 1.0, name
        assert figs[name]["lo"] <= figs[name]["acc"] <= figs[name]["hi"]
    assert figs["R@5"]["acc"] >= figs["R@1"]["acc"]
    assert gate_passes(figs, THRESHOLDS) == (True, [])


def test_chance_levels():
    data = planned_data(n=40, objects=(3, 4))
    figs = gate_figures(data, competent(data), "and", n_boot=0, seed=0)
    n_caps = sum(len(r["mention_orders"]) for r in data.records)
    own = [len(r["mention_orders"]) for r in data.records]
    assert figs["R@1"]["chance"] == pytest.approx(np.mean(own) / n_caps)
    assert figs["R@1"]["chance"] < figs["R@5"]["chance"] < 5 * figs["R@1"]["chance"] + 1e-9
    assert figs["set R@1"]["chance"] >= figs["R@1"]["chance"]
    assert figs["swap largest"]["chance"] == figs["swap small"]["chance"] == 0.5
    sizes = [len(r["objects"]) for r in data.records]
    per_caption = [len(r["objects"]) / 18 for r in data.records for _ in r["mention_orders"]]
    assert figs["presence TOR"]["chance"] == pytest.approx(np.mean(per_caption))
    assert figs["presence IOR"]["chance"] == pytest.approx(np.mean(sizes) / 18)


def test_an_untrained_model_fails_and_sits_near_chance():
    data = planned_data(n=60, objects=(3, 4))
    emb = FakeEmbedder(random_vec, lambda p: random_vec(str(p)))
    figs = gate_figures(data, emb, "and", n_boot=50, seed=0)
    ok, failed = gate_passes(figs, THRESHOLDS)
    assert not ok and set(failed) == set(THRESHOLDS)
    assert abs(figs["swap largest"]["acc"] - 0.5) < 0.15
    assert abs(figs["presence TOR"]["acc"] - figs["presence TOR"]["chance"]) < 0.1


def test_a_first_word_reader_passes_presence_but_not_set_retrieval():
    """Presence alone is not competence: a text encoder that reads only the first name
    retrieves a present object every time, yet cannot tell one set from another."""
    data = planned_data(n=40, objects=(4,))
    table = image_table(data, lambda k: 1.0)
    emb = FakeEmbedder(lambda t: one_hot({mention_sequence(t, SET.names)[0]: 1.0}), lambda p: table[str(p)])
    figs = gate_figures(data, emb, "and", n_boot=0, seed=0)
    assert figs["presence TOR"]["acc"] == 1.0
    assert figs["set R@1"]["acc"] < 0.5
    ok, failed = gate_passes(figs, THRESHOLDS)
    assert not ok and "set R@1" in failed and "presence TOR" not in failed


def test_swaps_of_the_largest_and_a_small_object_are_told_apart():
    """An image embedding that holds only its largest object catches a swapped largest
    object and misses every swapped small one (they leave the similarity unchanged)."""
    data = planned_data(n=40, objects=(3, 4))
    table = image_table(data, lambda k: 1.0 if k == 0 else 0.0)
    emb = FakeEmbedder(lambda t: one_hot({n: 1.0 for n in mention_sequence(t, SET.names)}), lambda p: table[str(p)])
    figs = gate_figures(data, emb, "and", n_boot=0, seed=0)
    assert figs["swap largest"]["acc"] == 1.0
    assert figs["swap small"]["acc"] == 0.0  # a tie is not a win
    assert gate_passes(figs, {"swap largest": 0.9}) == (True, [])
    assert gate_passes(figs, {"swap small": 0.9}) == (False, ["swap small"])


def test_a_figure_that_was_not_measured_fails_its_gate():
    data = planned_data(n=10, objects=(3,))
    data.singles = []
    figs = gate_figures(data, competent(data), "and", n_boot=0, seed=0)
    assert "presence IOR" not in figs
    assert gate_passes(figs, THRESHOLDS) == (False, ["presence IOR"])


def test_ior_present_only_restricts_to_the_objects_in_the_image():
    data = planned_data(n=30, objects=(3, 4))
    # the largest object dominates the image, and the restriction never looks at absent objects
    table = image_table(data, lambda k: 3.0 if k == 0 else 1.0)
    emb = FakeEmbedder(random_vec, lambda p: table[str(p)])
    groups = ior_present_only(data, emb, n_boot=20, seed=0)
    assert [g["n_objects"] for g in groups] == [3, 4]
    for g in groups:
        stats = g["metrics"]["present_only"]
        assert stats[0]["role"] == "largest" and stats[0]["acc"] == 1.0
        assert sum(s["acc"] for s in stats) == pytest.approx(1.0)
        assert stats[0]["chance"] == pytest.approx(1 / g["n_objects"])
        assert g["queries"] == sum(len(r["objects"]) == g["n_objects"] for r in data.records)
    # a smallest-first image encoder is seen as such
    table = image_table(data, lambda k: float(k + 1))
    groups = ior_present_only(data, FakeEmbedder(random_vec, lambda p: table[str(p)]), n_boot=0, seed=0)
    for g in groups:
        assert g["metrics"]["present_only"][-1]["acc"] == 1.0



def near_tie(names: dict[str, float]) -> np.ndarray:
    """A shared axis of 1 plus 2^-15 on each named object's axis: two such vectors differ in their
    product by multiples of 2^-30, exact in float64 and lost in float32 (1 + 2^-30 rounds to 1)."""
    v = np.zeros(len(SET.names) + 1)
    v[-1] = 1.0
    for name, w in names.items():
        v[SET.names.index(name)] = 2.0 ** -15 * w
    return v


def planted_near_ties(data, lean: float):
    """Images, captions, names and renders embedded as near_tie: the right candidate scores above
    the wrong ones by `lean` x 2^-30 (float32 cannot hold that) or by more."""
    table, largest = {}, {}
    for r in data.records:
        table[r["image"]] = near_tie({o["name"]: lean for o in r["objects"]})
        largest[r["image"]] = near_tie({o["name"]: lean for o, k in zip(r["objects"], measured_ranks(r)) if k == 0})
    for s in data.singles:
        table[s["image"]] = largest[s["image"]] = near_tie({s["name"]: 1.0})
    embedder = FakeEmbedder(lambda t: near_tie({n: lean for n in mention_sequence(t, SET.names)}),
                            lambda p: table[str(p)])
    return embedder, FakeEmbedder(embedder.text_fn, lambda p: largest[str(p)])


def test_a_gate_decided_below_float32_resolution_is_a_tie_and_counts_as_a_miss():
    """Similarities that differ only past float32's precision (2^-30, where the embeddings are
    float32) are near-ties: no gate may read them as a decision. Each figure counts them in
    `ties` and as misses, so the gates fail; the present-only IOR leaves them out."""
    data = planned_data(n=24, objects=(3, 4))
    embedder, leaning = planted_near_ties(data, 1.0)
    figs = gate_figures(data, embedder, "and", n_boot=20, seed=0)
    for name in ("set R@1", "swap largest", "swap small", "presence TOR", "presence IOR"):
        assert value(figs[name]) == 0.0 and figs[name]["ties"] == figs[name]["n"] > 0, name
    ok, failed = gate_passes(figs, THRESHOLDS)
    assert not ok and {"set R@1", "presence TOR", "presence IOR"} <= set(failed)
    # present only: each image leans to its largest object by 2^-30 alone: all ties, none counted
    groups = ior_present_only(data, leaning, n_boot=20, seed=0)
    assert groups and all(g["ties"] == g["queries"] and g["metrics"]["present_only"][0]["n"] == 0 for g in groups)


def test_a_gate_decided_well_above_float32_resolution_is_read():
    """The same planted embeddings with the right candidate ahead by at least 2^13 x 2^-30 (about
    7.6e-6, 64 float32 ulps near 1): decisions, read as before, with no ties."""
    data = planned_data(n=24, objects=(3, 4))
    embedder, leaning = planted_near_ties(data, 2.0 ** 13)
    figs = gate_figures(data, embedder, "and", n_boot=20, seed=0)
    for name in ("set R@1", "swap largest", "swap small", "presence TOR", "presence IOR"):
        assert value(figs[name]) == 1.0 and figs[name]["ties"] == 0, name
    groups = ior_present_only(data, leaning, n_boot=20, seed=0)
    assert groups and all(g["metrics"]["present_only"][0]["acc"] == 1.0 and g["ties"] == 0 for g in groups)
