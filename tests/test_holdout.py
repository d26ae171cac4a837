"""Held-out compositions (issue 23 item 4): a training set never shows a held-out combination,
its test set shows one in every image, dataset.json records the split and `comco validate`
checks it; bad input is one line naming --holdout, with nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import combinations

import pytest

from comco.data import config_hash, validate_dataset
from comco.data.writer import run_plan
from comco.errors import UserError
from comco.manifest import load_object_set
from comco.plan import PlanConfig, Planner
from comco.plan.holdout import parse_holdout

SIMCO = load_object_set("simco")
COMCO = [sys.executable, "-m", "comco.cli"]


def cfg(**kw) -> PlanConfig:
    return PlanConfig.from_dict({"object_set": "simco", "objects": "2-4", "n": 60, "seed": 5, "resolution": 64, **kw})


def records(**kw) -> list[dict]:
    return list(Planner(cfg(**kw), SIMCO).records())


def pairs_of(r) -> set[frozenset]:
    return {frozenset(p) for p in combinations([o["name"] for o in r["objects"]], 2)}


# ---------------------------------------------------------------- the syntax

@pytest.mark.parametrize("given, canonical", [
    ("pairs:cube+sphere,mug+cap", "pairs:cube+sphere,cap+mug"),
    (" Slot: cube=m , mug=UL", "slot:cube=M,mug=UL"),
    ("colour:cube=red", "color:cube=red"),
    ("size:cube=0", "size:cube=0"),
    ("pairs:auto:0.10", "pairs:auto:0.1"),
    ("slot:auto:0.2:7", "slot:auto:0.2:7"),
])
def test_the_holdout_is_read_into_one_canonical_text(given, canonical):
    assert parse_holdout(given) == canonical


def test_without_holdout_nothing_changes():
    plain = records()
    assert all("holdout" not in r for r in plain)
    assert cfg(holdout=None, holdout_split="train").to_dict() == cfg().to_dict()
    assert config_hash(cfg(holdout="pairs:cube+sphere").to_dict(), "x") != config_hash(cfg().to_dict(), "x")
    # the two sides of one holdout are two configurations
    test_side = cfg(holdout="pairs:cube+sphere", holdout_split="test")
    assert test_side.to_dict() != cfg(holdout="pairs:cube+sphere").to_dict()


# ---------------------------------------------------------------- the split

def test_a_training_set_never_shows_a_held_out_pair_and_its_test_set_always_does():
    held = {frozenset({"cube", "sphere"}), frozenset({"mug", "cap"}), frozenset({"cone", "torus"})}
    spec = "pairs:cube+sphere,mug+cap,cone+torus"
    train = records(holdout=spec, n=200)
    assert not any(pairs_of(r) & held for r in train)
    assert all(r["holdout"] == [] for r in train)
    assert {o["name"] for r in train for o in r["objects"]} == set(SIMCO.names)  # no object lost
    test = records(holdout=spec, holdout_split="test", n=90)
    assert all(pairs_of(r) & held for r in test)
    for r in test:
        assert r["holdout"] == sorted("+".join(sorted(p)) for p in pairs_of(r) & held)
    # each held-out pair is shown, in roughly its share
    shown = [p for r in test for p in r["holdout"]]
    assert {p: shown.count(p) for p in set(shown)}.keys() == {"cube+sphere", "cap+mug", "cone+torus"}
    assert min(shown.count(p) for p in set(shown)) >= 15


@pytest.mark.parametrize("spec, extra, index", [
    ("slot:cube=M,sphere=UL,mug=BR", {}, lambda o: (o["name"], o["slot"])),
    ("size:cube=0,sphere=1,cone=0", {}, lambda o: (o["name"], str(o["size_rank"]))),
    ("color:cube=red,sphere=blue", {"colors": True}, lambda o: (o["name"], o["color"])),
])
def test_attribute_holdouts_split_the_same_way(spec, extra, index):
    held = {tuple(item.split("=")) for item in spec.split(":", 1)[1].split(",")}
    train = records(holdout=spec, n=150, **extra)
    assert not any(index(o) in held for r in train for o in r["objects"])
    test = records(holdout=spec, holdout_split="test", n=60, **extra)
    for r in test:
        shown = {index(o) for o in r["objects"]} & held
        assert shown and r["holdout"] == sorted(f"{a}={b}" for a, b in shown)


def test_a_mixed_set_turns_sides_after_each_round_of_object_counts():
    recs = records(holdout="slot:cube=M,sphere=M,cone=M,mug=UL", holdout_split="mixed", n=36)  # counts 2, 3, 4
    assert [bool(r["holdout"]) for r in recs[:12]] == [False] * 3 + [True] * 3 + [False] * 3 + [True] * 3
    for count in (2, 3, 4):  # every count has both sides, half each
        sides = [bool(r["holdout"]) for r in recs if len(r["objects"]) == count]
        assert sides.count(True) == sides.count(False) == 6


def test_color_singles_of_a_training_set_leave_out_the_held_out_colours():
    train = Planner(cfg(holdout="color:cube=red", colors=True), SIMCO).singles()
    test = Planner(cfg(holdout="color:cube=red", colors=True, holdout_split="test"), SIMCO).singles()
    assert "cube-red" not in {s["id"] for s in train} and "cube-red" in {s["id"] for s in test}
    assert len(test) == len(train) + 1


def test_auto_holds_out_a_seeded_share_the_same_for_every_dataset_seed():
    a = Planner(cfg(holdout="pairs:auto:0.1", seed=1), SIMCO).holdout
    b = Planner(cfg(holdout="pairs:auto:0.1", seed=2, holdout_split="test"), SIMCO).holdout
    c = Planner(cfg(holdout="pairs:auto:0.1:9"), SIMCO).holdout
    assert a.combos == b.combos != c.combos
    assert len(a.combos) == round(0.1 * 18 * 17 / 2) == len(c.combos)
    slots = Planner(cfg(holdout="slot:auto:0.5"), SIMCO).holdout
    assert len(slots.combos) == 45  # half of 18 x 5, and every object keeps a slot
    assert all(sum((o, s) in slots.combos for s in ("M", "UL", "UR", "BL", "BR")) < 5 for o in SIMCO.names)


# ---------------------------------------------------------------- dataset.json and validate

def test_dataset_json_records_the_split_and_validate_checks_it(tmp_path):
    out = tmp_path / "train"
    run_plan(cfg(holdout="pairs:cube+sphere,mug+cap", n=30), out, quiet=True)
    info = json.loads((out / "dataset.json").read_text())
    assert info["holdout"] == {"kind": "pairs", "split": "train", "spec": "pairs:cube+sphere,cap+mug",
                               "combinations": ["cap+mug", "cube+sphere"]}
    assert info["config"]["holdout"] == "pairs:cube+sphere,cap+mug"
    assert validate_dataset(out) == []
    # a training record edited to show cube with sphere is refused as such
    lines = (out / "scenes.jsonl").read_text().splitlines()
    k, rec = next((k, json.loads(line)) for k, line in enumerate(lines)
                  if "cube" in line and "sphere" not in line)
    rec["objects"][next(i for i, o in enumerate(rec["objects"]) if o["name"] != "cube")]["name"] = "sphere"
    lines[k] = json.dumps(rec)
    (out / "scenes.jsonl").write_text("\n".join(lines) + "\n")
    problems = validate_dataset(out)
    assert any(f"record {rec['id']}: a training image (train split) shows held-out cube+sphere" in p
               for p in problems), problems


def test_validate_refuses_an_edited_split(tmp_path):
    out = tmp_path / "test"
    run_plan(cfg(holdout="size:cube=0", holdout_split="test", n=12), out, quiet=True)
    assert validate_dataset(out) == []
    info = json.loads((out / "dataset.json").read_text())
    info["holdout"]["combinations"] = ["cube=1"]
    (out / "dataset.json").write_text(json.dumps(info))
    assert any("'holdout' is not the split its configuration resolves to" in p for p in validate_dataset(out))


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("given, words", [
    ({"holdout": "triples:cube+sphere"}, "--holdout 'triples:cube+sphere': start with a kind"),
    ({"holdout": "pairs:cube"}, "'cube' is not a pair"),
    ({"holdout": "pairs:cube+cube"}, "pairs an object with itself"),
    ({"holdout": "pairs:cube+unicorn"}, "unknown object 'unicorn'"),
    ({"holdout": "slot:cube=ZZ"}, "slot 'ZZ'"),
    ({"holdout": "size:cube=big"}, "size rank 'big'"),
    ({"holdout": "size:cube=4"}, "cube=4 is impossible: size rank 4 needs 5 objects"),
    ({"holdout": "color:cube=red"}, "add --colors"),
    ({"holdout": "color:cube=pink", "colors": True}, "'cube' is never pink"),
    ({"holdout": "pairs:auto:1.5"}, "auto's share is in"),
    ({"holdout": "slot:cube=M,cube=UL,cube=UR,cube=BL,cube=BR"}, "'cube' is left with no training image"),
    ({"holdout": "size:cube=0,cube=1", "objects": "2"}, "'cube' is left with no training image"),
    ({"holdout": ",".join(f"pairs:cube+{n}" if i == 0 else f"cube+{n}" for i, n in enumerate(SIMCO.names[1:]))},
     "'cube' is left with no training image"),
    ({"holdout": "pairs:cube+sphere", "holdout_split": "test", "objects": "1-3"}, "a 1-object image cannot show"),
    ({"holdout_split": "test"}, "--holdout-split test: say what is held out"),
    ({"holdout": "pairs:cube+sphere", "pairs": "swap-size"}, "--holdout with --pairs"),
])
def test_bad_holdouts_are_refused_naming_the_option(given, words):
    with pytest.raises(UserError, match="--holdout") as e:
        Planner(cfg(**given), SIMCO)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_the_command_line_refuses_a_bad_holdout_in_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "d"
    r = subprocess.run([*COMCO, "plan", "--object-set", "simco", "--n", "5", "--holdout",
                        "slot:cube=M,cube=UL,cube=UR,cube=BL,cube=BR", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--holdout" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not out.exists()
    ok = subprocess.run([*COMCO, "plan", "--object-set", "simco", "--n", "6", "--objects", "3", "--holdout",
                         "pairs:cube+sphere", "--holdout-split", "test", "--quiet", "--out", str(out)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert all("cube+sphere" in json.loads(line)["holdout"] for line in (out / "scenes.jsonl").read_text().splitlines())
    assert subprocess.run([*COMCO, "validate", str(out)], capture_output=True).returncode == 0

