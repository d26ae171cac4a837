"""The floor factor (issue 23 item 2): today's grey floor, a procedural floor (wood, tiles,
checker, noise) in a drawn colour, or none; drawn per image before Blender runs, recorded,
part of the hash, with today's look as the default."""

from __future__ import annotations

import colorsys
import json

import numpy as np
import pytest
from support.planning import RECIPE, TINY_CYCLES, assert_refused, pixels, render_each, run
from support.planning import plan_records as records

from comco.data import config_hash
from comco.errors import UserError
from comco.lab.graph import build_stages
from comco.lab.recipe import parse_recipe
from comco.plan import PlanConfig
from comco.plan.floors import FLOORS, PATTERNS, parse_floors


def test_without_floor_records_carry_no_floor_and_the_hash_is_unchanged():
    assert all("floor" not in r for r in records(floor="plain"))
    assert PlanConfig.from_dict({"floor": "plain", "floor_hue": "0..360"}).to_dict() == PlanConfig().to_dict()
    wood = PlanConfig.from_dict({"floor": "wood"}).to_dict()
    assert wood["floor"] == ["wood"] and "floor_hue" not in wood
    assert config_hash(wood, "x") != config_hash(PlanConfig().to_dict(), "x")


def test_floors_are_drawn_per_image_in_their_colour_ranges_and_seeded():
    recs = records(floor="patterns,none", floor_hue="100..140", floor_saturation="0.5", floor_value="0.4-0.6")
    floors = [r["floor"] for r in recs]
    assert {f["name"] for f in floors} == {*PATTERNS, "none"}
    for f in floors:
        if f["name"] == "none":
            assert f == {"name": "none"}
            continue
        h, s, v = colorsys.rgb_to_hsv(*f["color"])
        assert 100 - 1 <= h * 360 <= 140 + 1 and abs(s - 0.5) < 1e-3 and 0.4 - 1e-3 <= v <= 0.6 + 1e-3
    assert len({tuple(f.get("color", ())) for f in floors}) > 20
    assert floors == [r["floor"] for r in records(floor="patterns,none", floor_hue="100..140",
                                                  floor_saturation="0.5", floor_value="0.4-0.6")]


def test_the_floor_moves_nothing_else_of_the_scene_nor_the_world():
    plain, floored = records(pairs="swap-size", world="hdri"), records(pairs="swap-size", world="hdri", floor="wood")
    assert [{k: v for k, v in r.items() if k != "floor"} for r in floored] == plain
    by_id = {r["id"]: r for r in floored}
    assert all(r["floor"] == by_id[r["pair"]["id"]]["floor"] for r in floored)  # a variant keeps its base's


@pytest.mark.parametrize("given, words", [
    ({"floor": "marble"}, "--floor marble: unknown floor"),
    ({"floor": "wood", "floor_value": "0.9..0.2"}, "--floor-value 0.9..0.2: the range is backwards"),
    ({"floor": "wood", "floor_saturation": "0..2"}, "--floor-saturation 0..2: use a range within 0..1"),
    ({"floor_hue": "10..20"}, "--floor-hue colours a procedural floor; add --floor"),
    ({"floor": "none", "floor_value": "0.5"}, "--floor-value colours a procedural floor"),
])
def test_bad_floors_are_refused_naming_the_option(given, words):
    assert_refused(given, words)


def test_a_bad_floor_on_the_command_line_is_one_line_and_writes_nothing(tmp_path):
    r = run("plan", "--n", "3", "--floor", "wood,marble", "--quiet", "--out", tmp_path / "d")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "comco: error: --floor marble: unknown floor; use plain, wood, tiles, checker, noise, none, "
        "a comma list of them, patterns (wood, tiles, checker, noise)"]
    assert not (tmp_path / "d").exists()


def test_a_planned_floor_is_in_dataset_json_and_validates(tmp_path):
    out = tmp_path / "d"
    r = run("plan", "--object-set", "simco", "--n", "6", "--floor", "checker,none", "--floor-hue", "200..220",
            "--quiet", "--out", out)
    assert r.returncode == 0, r.stderr
    config = json.loads((out / "dataset.json").read_text())["config"]
    assert config["floor"] == ["checker", "none"] and config["floor_hue"] == [200.0, 220.0]
    assert {json.loads(line)["floor"]["name"] for line in (out / "scenes.jsonl").open()} <= {"checker", "none"}
    assert run("validate", out).returncode == 0


def test_floor_names_parse_as_documented():
    assert parse_floors("patterns") == PATTERNS
    assert parse_floors("None, Wood,plain") == ("plain", "wood", "none")
    assert set(FLOORS) == {"plain", "none", *PATTERNS}


def test_the_floor_is_a_recipe_key_the_render_stages_plan_with():
    text = RECIPE.read_text(encoding="utf-8")
    stages = build_stages(parse_recipe(text.replace("[data]\n", '[data]\nfloor = "tiles"\nfloor_hue = "0..30"\n', 1),
                                       "smoke"))
    renders = [s for s in stages if s.kind == "render"]
    assert renders and all(s.config["floor"] == "tiles" and s.config["floor_hue"] == "0..30" for s in renders)
    with pytest.raises(UserError, match="recipe key 'data.floor' = 'lava'"):
        parse_recipe(text.replace("[data]\n", '[data]\nfloor = "lava"\n', 1), "smoke")


# ---------------------------------------------------------------- rendered (bpy)

@pytest.mark.bpy
def test_draft_refuses_a_procedural_floor(tmp_path):
    pytest.importorskip("bpy")
    r = run("render", "--n", "1", "--preset", "draft", "--floor", "wood", "--quiet", "--out", tmp_path / "d")
    assert r.returncode == 2 and "draft preset (Workbench) shows no procedural floor" in r.stderr
    assert not (tmp_path / "d").exists()


@pytest.mark.bpy
def test_a_floor_changes_the_ground_and_plain_images_stay_todays(tmp_path):
    pytest.importorskip("bpy")
    common = ["--object-set", "simco", "--objects", "2", "--n", "5", "--seed", "3", *TINY_CYCLES]
    render_each(tmp_path, common, {"plain": [], "mixed": ["--floor", "plain,checker,none"]})
    floors = [json.loads(line)["floor"]["name"] for line in (tmp_path / "mixed" / "scenes.jsonl").open()]
    changed = [i for i, f in enumerate(floors) if f != "plain"]
    after = [i for i, f in enumerate(floors) if f == "plain" and any(j < i for j in changed)]
    assert changed and after, floors  # seed 3: a plain floor after another one (one worker, in order)
    mixed, plain = tmp_path / "mixed", tmp_path / "plain"
    for i in changed:  # the bottom rows show floor only
        assert np.abs(pixels(mixed, i)[-6:] - pixels(plain, i)[-6:]).mean() > 5, floors[i]
    for i in after:  # the worker put today's floor back
        assert np.abs(pixels(mixed, i) - pixels(plain, i)).mean() < 0.5
    assert run("validate", tmp_path / "mixed").returncode == 0
