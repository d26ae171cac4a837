"""The half-truth probe: each kind of wrong detail is written as said (and only that detail is
wrong), planted encoders give known shares per kind and object count, and the command runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.probes import SET, FakeEmbedder, make_dataset, random_vec

from comco.plan import PlanConfig, Planner
from comco.plan.captions import factor_captions
from comco.probes import texts
from comco.probes.half_truth import KINDS, METRIC, OPPOSITE, half_truth, half_truths
from comco.probes.probe_data import ProbeData
from comco.probes.words import mention_sequence

COMCO = [sys.executable, "-m", "comco.cli"]
BOOK = texts.template_book(None)
AND = texts.get_template(BOOK, "and")


def colour_data(n=60, objects=(1, 2, 3, 4)) -> ProbeData:
    planner = Planner(PlanConfig(object_set="simco", objects=objects, n=n, resolution=(64, 64), seed=5, colors=True),
                      SET)
    recs = list(planner.records())
    return ProbeData(root=Path("/nonexistent"), info={"object_set": "simco"}, records=recs, singles=[],
                     names=list(SET.names), object_set=SET, image_path=lambda r: Path(r["image"]))


def test_each_half_truth_is_the_correct_caption_plus_one_wrong_detail():
    data = colour_data()
    seen = set()
    for rec in data.records:
        names = [rec["objects"][i]["name"] for i in rec["mention_orders"][0]]
        colour = {o["name"]: o["color"] for o in rec["objects"]}
        correct, wrong = half_truths(rec, AND, BOOK, SET, data.names, np.random.default_rng(0), colors=True)
        assert correct == " and ".join(names)
        absent = wrong["absent object"].removeprefix(correct + " and ")
        assert absent in SET.names and absent not in names
        said = wrong["wrong colour"].split(" and ")
        changed = [k for k, (a, b) in enumerate(zip(said, names)) if a != b]
        assert len(said) == len(names) and len(changed) == 1
        word, name = said[changed[0]].split(" ")
        assert name == names[changed[0]] and word in SET.palette and word != colour[name]
        counted = wrong["wrong count"].split(" and ")
        (k,) = [k for k, (a, b) in enumerate(zip(counted, names)) if a != b]
        assert counted[k] == f"two {SET.get(names[k]).plural}"
        seen |= set(wrong)
        if len(names) == 1:
            assert "wrong relation" not in wrong
            continue
        true = factor_captions(BOOK.templates["relations_depth"], rec, BOOK, SET)[0]  # the dataset's own clause
        clause = wrong["wrong relation"].removeprefix(correct + ", ")
        true_word = next(k for k, w in BOOK.relation_words.items() if f" {w} " in true)
        assert clause == true.replace(f" {BOOK.relation_words[true_word]} ",
                                      f" {BOOK.relation_words[OPPOSITE[true_word]]} ") and clause != true
        assert clause.startswith(f"the {names[0]} is ") and clause.endswith(f" the {names[1]}")
    assert seen == set(KINDS)


def _shares(groups):
    return {g["n_objects"]: {s["role"]: s for s in g["metrics"][METRIC]} for g in groups}


def test_planted_encoders_give_the_known_shares():
    data = colour_data(n=80)
    by_path = {Path(r["image"]): r for r in data.records}

    def correct(rec):  # written here, not by the probe: the record's first mention order, "and"-joined
        return " and ".join(rec["objects"][i]["name"] for i in rec["mention_orders"][0])

    # The image is its correct caption's vector on records whose index is a multiple of 3, its opposite on the others:
    # every kind of half-truth loses on the first and wins on the others.
    text = FakeEmbedder(lambda t: random_vec(t))
    emb = FakeEmbedder(text.text_fn, lambda p: (1 if by_path[p]["index"] % 3 == 0 else -1)
                       * random_vec(correct(by_path[p])))
    groups = half_truth(data, emb, AND, n_boot=100, seed=0)
    shares = _shares(groups)
    assert set(shares) == {1, 2, 3, 4, None}
    for n, by_kind in shares.items():
        recs = [r for r in data.records if n is None or len(r["objects"]) == n]
        expect = np.mean([r["index"] % 3 == 0 for r in recs])
        kinds = set(KINDS) - ({"wrong relation"} if n == 1 else set())
        assert set(by_kind) == kinds
        for kind in kinds:
            with_kind = [r for r in recs if kind != "wrong relation" or len(r["objects"]) > 1]
            s = by_kind[kind]
            assert s["n"] == s["clusters"] == len(with_kind) and s["chance"] == 0.5
            assert s["acc"] == pytest.approx(np.mean([r["index"] % 3 == 0 for r in with_kind]))
            assert s["lo"] <= s["acc"] <= s["hi"] and s["hi"] - s["lo"] > 0.05
        if n is not None:
            assert by_kind["absent object"]["acc"] == pytest.approx(expect)

    # A bag of names: an extra (absent) name always loses; colour, relation and count change no name: ties, lost.
    plurals = {o.name: [o.plural] for o in SET.objects}

    def bag(t):
        v = np.zeros(len(SET.names))
        for name in mention_sequence(t, SET.names, plurals):
            v[SET.names.index(name)] = 1
        return v / np.linalg.norm(v)

    def image(p):
        return bag(" ".join(o["name"] for o in by_path[p]["objects"]))

    groups = half_truth(data, FakeEmbedder(bag, image), AND, n_boot=50, seed=0)
    for by_kind in _shares(groups).values():
        assert by_kind["absent object"]["acc"] == 1.0
        assert all(by_kind[k]["acc"] == 0.0 for k in ("wrong colour", "wrong count") if k in by_kind)
    whole = next(g for g in groups if g["n_objects"] is None)
    assert whole["ties"] == sum(s["n"] for s in whole["metrics"][METRIC] if s["role"] != "absent object")


def test_a_dataset_without_colours_has_no_colour_column_and_repeated_objects_are_skipped():
    data = colour_data(n=20, objects=(3,))
    for r in data.records:
        for o in r["objects"]:
            o["color"] = None
    data.records[0]["objects"][1]["name"] = data.records[0]["objects"][0]["name"]
    assert not data.has_colors
    emb = FakeEmbedder(random_vec, lambda p: random_vec(str(p)))
    (g,) = half_truth(data, emb, AND, n_boot=0, seed=0)
    assert [s["role"] for s in g["metrics"][METRIC]] == ["absent object", "wrong relation", "wrong count"]
    assert g["skipped"] == 1 and g["queries"] == 19


@pytest.mark.torch
def test_the_command_writes_the_table_and_needs_images(tmp_path):
    ds = make_dataset(tmp_path / "ds", n=24, objects=(2, 3), colors=True, singles=False)
    out = tmp_path / "out"
    base = [*COMCO, "probe", "--probes", "half-truth", "--model", "ViT-S-32", "--pretrained", "none",
            "--bootstrap", "20", "--no-cache", "--no-plots", "--quiet"]
    r = subprocess.run([*base, ds, "--out", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    (groups,) = json.loads((out / "results.json").read_text())["probes"]["half-truth"].values()
    assert [g["n_objects"] for g in groups] == [2, 3, None]
    assert [s["role"] for s in groups[0]["metrics"][METRIC]] == list(KINDS)
    page = (out / "report.md").read_text()
    assert "Half-truths" in page and "wrong relation" in page and "chance" in page
    per_count = groups[0]["metrics"][METRIC][0]["n"]
    assert per_count < 20 and f"{per_count} trials: too few to read" in page  # the page's MIN_TRIALS rule
    assert "wrong colour" in (out / "half-truth.csv").read_text()
    plan_only = make_dataset(tmp_path / "plan", n=4, render=False)
    r = subprocess.run([*base, plan_only, "--out", tmp_path / "no"], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "no").exists()
