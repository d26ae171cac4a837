"""The world factor (issue 23 item 2): the plain backdrop or one of bpy's HDRI worlds, drawn
per image before Blender runs, recorded, part of the hash, with today's look as the default."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support.planning import RECIPE, TINY_CYCLES, assert_refused, pixels, render_each, run
from support.planning import plan_records as records

from comco.data import config_hash
from comco.errors import UserError
from comco.lab.graph import build_stages
from comco.lab.recipe import parse_recipe
from comco.plan import PlanConfig
from comco.plan.worlds import HDRIS, PLAIN, parse_worlds


def test_without_world_records_carry_no_world_and_the_hash_is_unchanged():
    assert all("world" not in r for r in records())
    assert all("world" not in r for r in records(world="plain"))
    assert PlanConfig.from_dict({"world": "plain", "world_strength": "0.35"}).to_dict() == PlanConfig().to_dict()
    with_world = PlanConfig.from_dict({"world": "forest"}).to_dict()
    assert with_world["world"] == ["forest"]
    assert config_hash(with_world, "x") != config_hash(PlanConfig().to_dict(), "x")


def test_worlds_are_drawn_per_image_within_their_ranges_and_seeded():
    recs = records(world="hdri", world_rotation="-30..30", world_strength="0.2-0.7")
    worlds = [r["world"] for r in recs]
    assert len({w["name"] for w in worlds}) >= 5  # 40 images over 8 HDRIs
    assert all(w["name"] in HDRIS for w in worlds)
    assert all(-math.radians(30) - 1e-5 <= w["rotation_z"] <= math.radians(30) + 1e-5 for w in worlds)
    assert all(0.2 <= w["strength"] <= 0.7 for w in worlds)
    assert len({w["strength"] for w in worlds}) > 30
    assert worlds == [r["world"] for r in records(world="hdri", world_rotation="-30..30", world_strength="0.2-0.7")]
    mixed = [r["world"]["name"] for r in records(world="plain,forest")]
    assert set(mixed) == {PLAIN, "forest"}
    assert all(r["world"] == {"name": PLAIN} for r in records(world="plain,forest") if r["world"]["name"] == PLAIN)


def test_the_world_moves_nothing_else_of_the_scene():
    plain, worldly = records(pairs="swap-size"), records(pairs="swap-size", world="hdri")
    assert [{k: v for k, v in r.items() if k != "world"} for r in worldly] == plain
    # a pair variant is its base scene under the same world
    by_id = {r["id"]: r for r in worldly}
    for r in worldly:
        assert r["world"] == by_id[r["pair"]["id"]]["world"]


@pytest.mark.parametrize("given, words", [
    ({"world": "lava"}, "--world lava: unknown world"),
    ({"world": ""}, "--world"),
    ({"world": "forest", "world_strength": "2-1"}, "--world-strength 2..1: the range is backwards"),
    ({"world": "forest", "world_rotation": "0..1000"}, "--world-rotation 0..1000: use a range within"),
    ({"world": "forest", "world_strength": "bright"}, "--world-strength 'bright'"),
    ({"world_rotation": "10"}, "add --world"),
])
def test_bad_worlds_are_refused_naming_the_option(given, words):
    assert_refused(given, words)


def test_a_bad_world_on_the_command_line_is_one_line_and_writes_nothing(tmp_path):
    r = run("plan", "--n", "3", "--world", "forest,lava", "--quiet", "--out", tmp_path / "d")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "comco: error: --world lava: unknown world; use plain, city, courtyard, forest, interior, night, studio, "
        "sunrise, sunset, a comma list of them, or hdri (all eight HDRIs)"]
    assert not (tmp_path / "d").exists()


def test_a_planned_world_is_in_dataset_json_and_validates(tmp_path):
    out = tmp_path / "d"
    r = run("plan", "--object-set", "simco", "--n", "6", "--world", "night,sunset", "--world-strength", "0.3-0.5",
            "--quiet", "--out", out)
    assert r.returncode == 0, r.stderr
    config = json.loads((out / "dataset.json").read_text())["config"]
    assert config["world"] == ["night", "sunset"] and config["world_strength"] == [0.3, 0.5]
    assert "world_rotation" not in config  # at its default
    assert {json.loads(line)["world"]["name"] for line in (out / "scenes.jsonl").open()} <= {"night", "sunset"}
    assert run("validate", out).returncode == 0


def test_world_names_parse_as_documented():
    assert parse_worlds("hdri") == HDRIS
    assert parse_worlds("Sunset, plain,forest") == (PLAIN, "forest", "sunset")
    assert parse_worlds(["forest", "forest"]) == ("forest",)


def test_the_world_is_a_recipe_key_the_render_stages_plan_with():
    text = RECIPE.read_text(encoding="utf-8")
    stages = build_stages(parse_recipe(text.replace("[data]\n", '[data]\nworld = "hdri"\n', 1), "smoke"))
    renders = [s for s in stages if s.kind == "render"]
    assert renders and all(s.config["world"] == "hdri" for s in renders)
    assert all("world" not in s.config for s in build_stages(parse_recipe(text, "smoke")) if s.kind == "render")
    with pytest.raises(UserError, match="recipe key 'data.world' = 'lava'"):
        parse_recipe(text.replace("[data]\n", '[data]\nworld = "lava"\n', 1), "smoke")


# ---------------------------------------------------------------- rendered (bpy)

@pytest.mark.bpy
def test_draft_refuses_a_world(tmp_path):
    pytest.importorskip("bpy")
    r = run("render", "--n", "1", "--preset", "draft", "--world", "forest", "--quiet", "--out", tmp_path / "d")
    assert r.returncode == 2 and "draft preset (Workbench) shows no HDRI world" in r.stderr
    assert not (tmp_path / "d").exists()


@pytest.mark.bpy
def test_an_hdri_world_lights_the_image_and_plain_images_stay_todays(tmp_path):
    pytest.importorskip("bpy")
    common = ["--object-set", "simco", "--objects", "2", "--n", "4", "--seed", "1", *TINY_CYCLES]
    render_each(tmp_path, common, {"plain": [], "mixed": ["--world", "plain,night", "--world-strength", "1"]})
    worlds = [json.loads(line)["world"]["name"] for line in (tmp_path / "mixed" / "scenes.jsonl").open()]
    night = [i for i, w in enumerate(worlds) if w == "night"]
    after = [i for i, w in enumerate(worlds) if w == PLAIN and any(j < i for j in night)]
    assert night and after, worlds  # seed 1 gives a plain image after a night one (one worker, in order)
    mixed, plain = tmp_path / "mixed", tmp_path / "plain"
    for i in night:  # the night sky lights the scene otherwise than the plain backdrop
        assert np.abs(pixels(mixed, i) - pixels(plain, i)).mean() > 5
    for i in after:  # the worker went back to the plain backdrop
        assert np.abs(pixels(mixed, i) - pixels(plain, i)).mean() < 0.5
    assert run("validate", tmp_path / "mixed").returncode == 0
