"""Probes by factor (issue 23 item 5): `comco probe --by FACTOR` splits every probe table by a
recorded factor, with intervals per cell and the page's too-few rule; planted embeddings give
known answers per cell (a first-mention bias in plain scenes, a last-mention one in forest
scenes; a largest-object bias in plain images, a smallest-object one in forest images)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.probes import SET, one_hot, paint

from comco.data.folder import SCENES, SINGLES
from comco.data.writer import run_plan
from comco.errors import UserError
from comco.io import read_jsonl, write_jsonl
from comco.plan import PlanConfig, Planner
from comco.probes import ProbeOptions, run_probes, write_reports
from comco.probes.factors import cells, parse_by, recorded
from comco.probes.words import mention_sequence
from comco.record import measured_ranks

NAMES = list(SET.names)
FOREST = 4  # scenes in the forest cell: 16 captions per template, under the page's 20


def world_dataset(root: Path) -> Path:
    """60 painted 4-object scenes; the first FOREST are forest scenes, the rest plain ones."""
    cfg = PlanConfig.from_dict({"object_set": "simco", "objects": "4", "n": 60, "seed": 2, "resolution": 64,
                                "world": "forest"})
    run_plan(cfg, root, quiet=True, singles=True)
    recs = []
    for r in read_jsonl(root / SCENES):
        if r["index"] >= FOREST:
            r["world"] = {"name": "plain"}
        recs.append(paint(r, root / r["image"]))
    write_jsonl(root / SCENES, recs)
    write_jsonl(root / SINGLES, [paint(s, root / s["image"]) for s in read_jsonl(root / SINGLES)])
    return root


class Planted:
    """The embedder run_probes builds, with planted vectors: texts by the world of their record,
    images by the world of their scene."""

    task, what = "", None

    def __init__(self, root: Path):
        recs = list(read_jsonl(root / SCENES))
        self.world = {c: r["world"]["name"] for r in recs for caps in r["captions"].values() for c in caps}
        self.scene = {(root / r["image"]).resolve(): r for r in recs}
        self.single = {(root / s["image"]).resolve(): s["name"] for s in read_jsonl(root / SINGLES)}
        self.stats = {"text_hits": 0, "text_encoded": 0, "image_hits": 0, "image_encoded": 0}

    def texts(self, items):
        out = []
        for t in items:
            if t in NAMES:
                out.append(one_hot({t: 1.0}))
                continue
            seq = mention_sequence(t, NAMES)
            pick = seq[0] if self.world[t] == "plain" else seq[-1]
            out.append(one_hot({n: 1.0 if n == pick else 0.3 for n in seq}))
        return np.stack(out).astype(np.float32)

    def images(self, paths):
        out = []
        for p in paths:
            p = Path(p).resolve()
            if p in self.single:
                out.append(one_hot({self.single[p]: 1.0}))
                continue
            r = self.scene[p]
            ranks = measured_ranks(r)
            pick = 0 if r["world"]["name"] == "plain" else len(ranks) - 1
            out.append(one_hot({o["name"]: 1.0 if k == pick else 0.3 for o, k in zip(r["objects"], ranks)}))
        return np.stack(out).astype(np.float32)


class FakeRef:
    name, pretrained, label, text_only, random = "planted", "none", "planted", False, False
    generative, embeds_phrases = False, True

    def load(self, device="cpu"):
        return type("Loaded", (), {"identity": "planted", "context_length": 77, "vit": None})()


@pytest.fixture(scope="module")
def by_world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("by-world")
    root = world_dataset(tmp / "data")
    mp = pytest.MonkeyPatch()
    import comco.probes.embed as embed

    mp.setattr(embed, "Embedder", lambda loaded, **kw: Planted(root))
    try:
        opts = ProbeOptions(probes=["tor", "ior"], templates=["and"], n_boot=200, seed=0, cache_dir=None,
                            plots=False, by="world")
        results = run_probes(root, [FakeRef()], opts)
    finally:
        mp.undo()
    write_reports(tmp / "out", results, plots=False)
    return root, results, (tmp / "out" / "report.md").read_text()


def groups_of(results, probe, cell=None):
    return [g for g in results["probes"][probe]["planted"] if g.get("cell") == cell]


def stat(group, metric, role):
    return next(s for s in group["metrics"][metric] if s["role"] == role)


def test_each_cell_measures_its_own_planted_bias(by_world):
    _, results, _ = by_world
    assert results["by"] == {"factor": "world", "cells": {"forest": FOREST, "plain": 60 - FOREST}}
    (plain,) = groups_of(results, "tor", "plain")
    (forest,) = groups_of(results, "tor", "forest")
    (whole,) = groups_of(results, "tor")
    assert plain["key"] == whole["key"] + ", plain"
    assert stat(plain, "conditional", "1st")["acc"] == 1.0 and stat(plain, "conditional", "4th")["acc"] == 0.0
    assert stat(forest, "conditional", "4th")["acc"] == 1.0 and stat(forest, "conditional", "1st")["acc"] == 0.0
    assert stat(forest, "conditional", "4th")["n"] == 4 * FOREST  # four mention orders per scene
    whole_first = stat(whole, "conditional", "1st")
    assert whole_first["acc"] == pytest.approx((60 - FOREST) / 60)
    # the interval is the cell's own: over the cell's images, so the whole set's is not reused
    assert stat(plain, "conditional", "1st")["clusters"] == 60 - FOREST
    (ior_plain,) = groups_of(results, "ior", "plain")
    (ior_forest,) = groups_of(results, "ior", "forest")
    assert stat(ior_plain, "conditional", "largest")["acc"] == 1.0
    assert stat(ior_forest, "conditional", "4th largest")["acc"] == 1.0
    assert {g["cell"] for g in results["probes"]["ior_slot"]["planted"] if "cell" in g} == {"plain", "forest"}


def test_the_page_shows_each_cell_with_its_interval_and_the_too_few_rule(by_world):
    _, results, md = by_world
    section = md.split("## By world", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in ln.strip("|").split(" | ")] for ln in section.splitlines()
            if ln.startswith("| planted")]
    by = {(r[1], r[2]): r for r in rows}
    first = stat(groups_of(results, "tor", "plain")[0], "conditional", "1st")
    assert by[("first-mention bias", "plain")][3] == \
        f"{100 * first['acc']:.1f} [{100 * first['lo']:.1f}, {100 * first['hi']:.1f}]"
    assert by[("first-mention bias", "forest")][3] == f"{4 * FOREST} of {4 * FOREST} kept: too few to read"
    assert by[("large-object bias", "forest")][3] == f"{FOREST} of {FOREST} kept: too few to read"
    # the headline stays the whole dataset's
    head = md.split("## Headline", 1)[1].split("\n## ", 1)[0]
    whole = stat(groups_of(results, "tor")[0], "conditional", "1st")
    assert f"{100 * whole['acc']:.1f} [" in head


def test_a_bad_factor_lists_the_recorded_ones_in_one_line(tmp_path):
    root = world_dataset(tmp_path / "data")
    r = subprocess.run([sys.executable, "-m", "comco.cli", "probe", str(root), "--model", "ViT-B-32", "--pretrained",
                        "none", "--probes", "tor", "--by", "lava", "--no-cache", "--quiet", "--out",
                        str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1 and "--by lava" in line and "recorded: world, objects, camera-elevation" in line
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- the factors themselves

def records(n=12, **kw):
    cfg = PlanConfig.from_dict({"object_set": "simco", "objects": "2-3", "n": n, "seed": 4, **kw})
    return list(Planner(cfg, SET).records())


def test_numeric_factors_are_binned_by_their_values():
    recs = records(6)
    for r, e in zip(recs, (40, 10, 60, 30, 20, 50)):
        r["camera"] = {**r["camera"], "look_at": [0.0, 0.0, 0.0],
                       "location": [10 * math.cos(math.radians(e)), 0.0, 10 * math.sin(math.radians(e))]}
    factor, bins = parse_by("camera-elevation", recs)
    assert bins == 3
    got = cells(factor, bins, recs)
    assert list(got) == ["camera-elevation 10-20°", "camera-elevation 30-40°", "camera-elevation 50-60°"]
    assert [len(v) for v in got.values()] == [2, 2, 2]
    assert got["camera-elevation 10-20°"] == [recs[1], recs[4]]
    factor, bins = parse_by("camera-elevation:6", recs)
    assert len(cells(factor, bins, recs)) == 6
    # today's camera: one elevation, one cell
    factor, bins = parse_by("camera-elevation", records(6))
    assert len(cells(factor, bins, records(6))) == 1


def test_the_held_out_side_is_a_factor():
    recs = records(12, holdout="slot:cube=M,sphere=M,cone=M,mug=UL", holdout_split="mixed")
    assert "holdout" in recorded(recs)
    factor, bins = parse_by("holdout", recs)
    got = cells(factor, bins, recs)
    assert list(got) == ["held-out", "seen"]
    assert {r["index"] // 2 % 2 for r in got["held-out"]} == {1} and {r["index"] // 2 % 2 for r in got["seen"]} == {0}
    assert {len(r["objects"]) for r in got["held-out"]} == {len(r["objects"]) for r in got["seen"]} == {2, 3}
    assert "holdout" not in recorded(records(4))


@pytest.mark.parametrize("text, words", [
    ("world", "recorded: objects, camera-elevation"),  # no --world: not recorded
    ("layout:3", "layout is not a number"),
    ("camera-elevation:x", "a whole number"),
    ("camera-elevation:0", "1..20 bins"),
])
def test_bad_factors_are_refused(text, words):
    with pytest.raises(UserError, match="--by") as e:
        parse_by(text, records(4))
    assert words in str(e.value)

