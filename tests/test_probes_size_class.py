"""The size-class probe (ComCO's claim 1): its two caption constructions, a planted encoder
that favours a large opening object, and the command line's refusals."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from support.probes import FakeEmbedder

from comco.manifest import load_object_set
from comco.probes import texts
from comco.probes.size_class import class_members, class_tuples, size_class_tor
from comco.probes.words import mention_sequence

COMCO = [sys.executable, "-m", "comco.cli"]
SET = load_object_set("comco")
NAMES = list(SET.names)


def test_the_paper_and_script_constructions():
    members = class_members(NAMES, SET)
    klass = {i: c for c, idx in members.items() for i in idx}
    rng = np.random.default_rng(0)
    for first, last in (("large", "small"), ("small", "large")):
        paper = class_tuples(members, "paper", first, 4, 50, rng)
        script = class_tuples(members, "script", first, 4, 50, rng)
        assert paper.shape == script.shape == (50, 4)
        for row in paper:
            assert [klass[i] for i in row] == [first, "medium", "medium", "medium"] and len(set(row)) == 4
        for row in script:
            assert [klass[i] for i in row] == [first, "medium", "medium", last] and len(set(row)) == 4
    assert [klass[i] for i in class_tuples(members, "script", "large", 2, 1, rng)[0]] == ["large", "small"]


def test_an_encoder_that_attends_to_a_large_opening_object_shows_the_gap():
    vec = {n: np.random.default_rng(abs(hash(n)) % 2**32).normal(size=64) for n in NAMES}
    vec = {n: v / np.linalg.norm(v) for n, v in vec.items()}

    def text(t):  # the caption is its first-named object when that one is large, else its last-named one
        if t in vec:
            return vec[t]
        seq = mention_sequence(t, NAMES)
        return vec[seq[0]] if SET.get(seq[0]).size_class == "large" else vec[seq[-1]]

    tpl = texts.get_template(texts.template_book(None), "and")
    groups = size_class_tor(NAMES, SET, FakeEmbedder(text), tpl, [3], tuples=40, n_boot=50, seed=0)
    first = {(g["variant"], g["first_class"]): g["metrics"]["unconditional"][0] for g in groups}
    assert {k: v["acc"] for k, v in first.items()} == {("paper", "large"): 1.0, ("paper", "small"): 0.0,
                                                       ("script", "large"): 1.0, ("script", "small"): 0.0}
    last = {(g["variant"], g["first_class"]): g["metrics"]["unconditional"][2]["acc"] for g in groups}
    assert last[("script", "small")] == 1.0 and last[("paper", "small")] == 1.0


@pytest.mark.torch
def test_the_command_runs_text_only_and_refuses_a_set_without_classes(tmp_path):
    out = tmp_path / "out"
    base = [*COMCO, "probe", "--text-only", "--probes", "size-class", "--model", "ViT-S-32", "--pretrained", "none",
            "--tuples", "12", "--objects", "2-3", "--bootstrap", "20", "--no-cache", "--no-plots", "--quiet"]
    r = subprocess.run([*base, "--object-set", "comco", "--out", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    groups = json.loads((out / "results.json").read_text())["probes"]["size-class"]
    (model,) = groups
    assert len(groups[model]) == 2 * 2 * 2  # constructions x object counts x opening classes
    assert "Size classes in text" in (out / "report.md").read_text()
    r = subprocess.run([*base, "--object-set", "simco", "--out", tmp_path / "no"], capture_output=True, text=True)
    assert r.returncode == 2 and "no large or small-class object" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "no").exists()
    r = subprocess.run([*COMCO, "probe", "--text-only", "--probes", "tor,ior", "--model", "ViT-S-32", "--pretrained",
                        "none", "--object-set", "comco", "--out", tmp_path / "no"], capture_output=True, text=True)
    assert r.returncode == 2 and "--text-only runs only" in r.stderr, r.stderr
