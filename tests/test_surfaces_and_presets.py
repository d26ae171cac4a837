"""Object materials (roughness, metallic, textures that keep the colour's hue) and the
`--realism plain|studio|varied` presets over every realism option (issue 23 item 2)."""

from __future__ import annotations

import pytest
from support.planning import assert_refused, plan_records, run

from comco.data import config_hash
from comco.manifest import load_object_set
from comco.plan import PlanConfig, Planner
from comco.plan.realism import PRESETS
from comco.plan.surfaces import TEXTURES, parse_textures


def records(**kw) -> list[dict]:
    return plan_records(30, **kw)


def test_surfaces_are_drawn_per_object_in_their_ranges_and_move_nothing_else():
    plain = records(pairs="swap-size,remove")
    recs = records(pairs="swap-size,remove", roughness="0.2..0.6", texture="textures,none")
    strip = lambda r: {**r, "objects": [{k: v for k, v in o.items() if k != "surface"} for o in r["objects"]]}  # noqa: E731
    assert [strip(r) for r in recs] == plain
    surfaces = [o["surface"] for r in recs for o in r["objects"]]
    assert all(set(s) == {"roughness", "texture"} and 0.2 <= s["roughness"] <= 0.6 for s in surfaces)
    assert all(round(s["roughness"] / 0.05, 6).is_integer() for s in surfaces)
    assert {s["texture"] for s in surfaces} == {"none", *TEXTURES}
    # an object keeps its surface in every pair variant of its scene
    by_id = {r["id"]: r for r in recs}
    for r in recs:
        base = {o["name"]: o["surface"] for o in by_id[r["pair"]["id"]]["objects"]}
        assert all(o["surface"] == base[o["name"]] for o in r["objects"] if o["name"] in base)
    assert all("surface" not in o for r in records() for o in r["objects"])
    assert PlanConfig.from_dict({"texture": "none"}).to_dict() == PlanConfig().to_dict()


@pytest.mark.parametrize("given, words", [
    ({"roughness": "0.9..0.1"}, "--roughness 0.9..0.1: the range is backwards"),
    ({"metallic": "0..2"}, "--metallic 0..2: use a range within 0..1"),
    ({"texture": "plaid"}, "--texture plaid: unknown texture"),
    ({"realism": "gritty"}, "--realism gritty: use one of plain, studio, varied"),
])
def test_bad_surfaces_and_presets_are_refused_naming_the_option(given, words):
    assert_refused(given, words)


def test_presets_fill_their_options_and_an_explicit_option_wins():
    assert PlanConfig.from_dict({"realism": "plain"}) == PlanConfig()
    varied = PlanConfig.from_dict({"realism": "varied", "floor": "wood", "camera_lens": "50"})
    assert varied.floor == ("wood",) and varied.camera_lens == (50.0, 50.0)
    assert varied.camera_elevation == (30.0, 60.0) and varied.texture == ("none", *TEXTURES)
    assert PlanConfig.from_dict(varied.to_dict()) == varied  # dataset.json re-reads to the same
    hashes = {config_hash(PlanConfig.from_dict({"realism": p}).to_dict(), "x") for p in PRESETS}
    assert len(hashes) == 3
    for preset in ("studio", "varied"):  # both plan on both built-in sets, every factor recorded
        for name in ("simco", "comco"):
            cfg = PlanConfig.from_dict({"realism": preset, "object_set": name, "n": 4})
            planner = Planner(cfg, load_object_set(name))
            planner.check_large_fraction()
            rec = next(iter(planner.records()))
            assert "elevation_deg" in rec["camera"] and "drawn" in rec["lights"] and "world" in rec
            assert all("surface" in o for o in rec["objects"])


def test_the_preset_and_its_override_on_the_command_line(tmp_path):
    import json

    out = tmp_path / "d"
    r = run("plan", "--object-set", "simco", "--n", "4", "--realism", "studio", "--light-count", "1",
            "--quiet", "--out", out)
    assert r.returncode == 0, r.stderr
    config = json.loads((out / "dataset.json").read_text())["config"]
    assert config["realism"] == "studio" and config["world"] == ["studio"] and config["light_count"] == [1.0, 1.0]
    assert run("validate", out).returncode == 0
    assert parse_textures("textures") == TEXTURES


@pytest.mark.bpy
def test_draft_refuses_textures(tmp_path):
    pytest.importorskip("bpy")
    r = run("render", "--n", "1", "--preset", "draft", "--texture", "noise", "--quiet", "--out", tmp_path / "d")
    assert r.returncode == 2 and "--texture: the draft preset" in r.stderr
    assert not (tmp_path / "d").exists()
