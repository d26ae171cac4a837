"""benchmarks/labclip.py, the LABCLIP ceiling diagnosis: its rows, its (object, colour)
pair oracle and its maps, on synthetic embeddings whose answer is known."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_labclip", ROOT / "benchmarks" / "labclip.py")
lab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lab)

NAMES = [f"n{i}" for i in range(6)]
COLOURS = ["red", "blue", "green", "gray"]


@pytest.fixture(autouse=True)
def one_thread():
    """Small matrices on a loaded machine: more threads only wait on each other."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def scenes(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        names = rng.choice(NAMES, 2, replace=False)
        colours = rng.choice(COLOURS, 2, replace=False)
        objs = [{"name": str(a), "color": str(c), "size_rank": k} for k, (a, c) in enumerate(zip(names, colours))]
        cap = f"a {objs[0]['color']} {objs[0]['name']} and a {objs[1]['color']} {objs[1]['name']}"
        swapped = f"a {objs[1]['color']} {objs[0]['name']} and a {objs[0]['color']} {objs[1]['name']}"
        out.append({"id": f"{i:06d}", "objects": objs, "mention_orders": [[0, 1]],
                    "captions": {"attributes": [cap], "attributes_swapped": [swapped]}})
    return out


def embeddings(records, rows, conjunctive: bool, dim: int = 32, seed: int = 0):
    """Image-like features of each scene: a random projection of its (object, colour) pairs
    (conjunctive) or of its objects and its colours apart (a bag of words: binding lost)."""
    rng = np.random.default_rng(seed)
    vocab = {(n, c): k for k, (n, c) in enumerate((n, c) for n in NAMES for c in COLOURS)}
    if conjunctive:
        proj = rng.normal(size=(len(vocab), dim))
        x = lab.codes([[(o["name"], o["color"]) for o in r["objects"]] for r in records], vocab) @ proj
    else:
        p_name, p_col = rng.normal(size=(len(NAMES), dim)), rng.normal(size=(len(COLOURS), dim))
        x = np.stack([sum(p_name[NAMES.index(o["name"])] + p_col[COLOURS.index(o["color"])]
                          for o in r["objects"]) for r in records])
    x = x + 0.05 * rng.normal(size=x.shape)
    return x.astype(np.float32), vocab


def test_rows_skip_captions_whose_swap_changes_nothing():
    recs = scenes(3)
    recs[1]["objects"][1]["color"] = recs[1]["objects"][0]["color"]
    rows = lab.binding_rows(recs)
    assert [r["scene"] for r in rows] == [0, 2]
    a, b = recs[0]["objects"]
    assert rows[0]["swap_pairs"] == [(a["name"], b["color"]), (b["name"], a["color"])]


@pytest.mark.parametrize("conjunctive, lo, hi", [(True, 0.95, 1.0), (False, 0.0, 0.7)])
def test_the_pair_oracle_reads_binding_only_where_the_features_hold_it(conjunctive, lo, hi):
    recs = scenes(600)
    rows = lab.binding_rows(recs)
    x, vocab = embeddings(recs, rows, conjunctive)
    good = lab.codes([r["pairs"] for r in rows], vocab)
    swap = lab.codes([r["swap_pairs"] for r in rows], vocab)
    xr = x[[r["scene"] for r in rows]]
    train, test = np.arange(len(rows)) < 450, np.arange(len(rows)) >= 450
    acc = lab.binding_of_scores(lab.pair_scores(xr[train], good[train], xr[test]), good[test], swap[test])
    assert lo <= acc <= hi


def test_the_colour_probe_reads_colours_that_the_features_hold():
    recs = scenes(600)
    x, _ = embeddings(recs, lab.binding_rows(recs), conjunctive=True)
    test = np.arange(len(recs)) >= 450
    assert lab.colour_probe(x, recs, test) > 0.9
    assert lab.colour_probe(np.random.default_rng(1).normal(size=x.shape), recs, test) < 0.5


@pytest.mark.parametrize("negatives", ["hard", "only"])
def test_a_trained_map_binds_where_the_base_does_not(negatives):
    recs = scenes(400)
    rows = lab.binding_rows(recs)
    image, vocab = embeddings(recs, rows, conjunctive=True, seed=0)
    # the text side holds the binding too, in another basis: the identity map is at chance
    rot = np.linalg.qr(np.random.default_rng(5).normal(size=(32, 32)))[0]
    proj = np.random.default_rng(0).normal(size=(len(vocab), 32))
    text = (lab.codes([r["pairs"] for r in rows], vocab) @ proj @ rot).astype(np.float32)
    negative = (lab.codes([r["swap_pairs"] for r in rows], vocab) @ proj @ rot).astype(np.float32)
    image_of = np.array([r["scene"] for r in rows])
    train, test = np.arange(300), np.arange(300, len(rows))
    before = lab.binding_of_map(None, image, text, negative, image_of, test)
    apply = lab.train_map(image, text, negative, image_of, train, steps=300, batch_size=64, lr=1e-2,
                          negatives=negatives)
    after = lab.binding_of_map(apply, image, text, negative, image_of, test)
    assert before < 0.7 < 0.9 < after


def test_the_mlp_map_starts_as_the_linear_one():
    recs = scenes(50)
    rows = lab.binding_rows(recs)
    x, _ = embeddings(recs, rows, conjunctive=True)
    t = x[[r["scene"] for r in rows]]
    apply = lab.train_map(x, t, t, np.array([r["scene"] for r in rows]), np.arange(len(rows)), steps=0,
                          batch_size=8, lr=1e-3, kind="mlp")
    np.testing.assert_allclose(apply(t), t / np.linalg.norm(t, axis=1, keepdims=True), atol=1e-5)
