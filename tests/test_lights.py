"""The light factor (issue 23 item 2): key direction, intensity, colour temperature and number
of lights, drawn per image from ranges around today's rig; each option changes only its part."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support.planning import TINY_CYCLES, assert_refused, pixels, plan_records, render_each, run

from comco.data import config_hash
from comco.plan import PlanConfig
from comco.plan.lights import kelvin_rgb


def records(**kw) -> list[dict]:
    return plan_records(30, **kw)


def test_todays_rig_is_the_default_and_keeps_the_hash():
    assert PlanConfig.from_dict({"light_intensity": "1", "light_temperature": "6500",
                                 "light_count": "3"}).to_dict() == PlanConfig().to_dict()
    warm = PlanConfig.from_dict({"light_temperature": "2700"}).to_dict()
    assert warm["light_temperature"] == [2700.0, 2700.0]
    assert config_hash(warm, "x") != config_hash(PlanConfig().to_dict(), "x")
    assert all("drawn" not in r["lights"] for r in records())
    assert kelvin_rgb(6500) == [1.0, 1.0, 1.0] and kelvin_rgb(2700)[2] < 0.5 < kelvin_rgb(9000)[2]


def test_each_light_option_changes_only_its_part_of_the_rig():
    plain = records()
    strip = lambda r: {k: v for k, v in r.items() if k != "lights"}  # noqa: E731
    for kw in ({"light_azimuth": "-90..90"}, {"light_elevation": "20..80"}, {"light_intensity": "0.5-1.5"},
               {"light_temperature": "3000..8000"}, {"light_count": "1-3"}):
        lit = records(**kw)
        assert [strip(r) for r in lit] == [strip(r) for r in plain], kw  # nothing but the lights
        assert lit == records(**kw)  # seeded
        for a, b in zip(plain, lit):
            la, lb = a["lights"], b["lights"]
            if "light_azimuth" in kw or "light_elevation" in kw:
                assert la["fill"] == lb["fill"] and la["back"] == lb["back"]
                ka, kb = np.array(la["key"]["location"]), np.array(lb["key"]["location"])
                assert math.isclose(np.linalg.norm(ka), np.linalg.norm(kb), rel_tol=1e-3)  # as far, elsewhere
                d = lb["drawn"]
                lo, hi = (-90, 90) if "light_azimuth" in kw else (20, 80)
                assert lo <= d["key_azimuth_deg" if "light_azimuth" in kw else "key_elevation_deg"] <= hi
                x, y, z = kb
                assert math.isclose(math.degrees(math.atan2(x, -y)), d["key_azimuth_deg"], abs_tol=0.01)
            if "light_intensity" in kw:
                k = lb["drawn"]["intensity"]
                assert 0.5 <= k <= 1.5
                assert math.isclose(lb["key"]["energy"], la["key"]["energy"] * k, rel_tol=1e-3)
                assert lb["key"]["location"] == la["key"]["location"]
            if "light_temperature" in kw:
                assert lb["key"]["color"] == kelvin_rgb(lb["drawn"]["temperature_k"])
                assert lb["key"]["energy"] == la["key"]["energy"]
            if "light_count" in kw:
                assert [n for n in ("key", "fill", "back") if n in lb] == ["key", "fill", "back"][:lb["drawn"]["count"]]
        if "light_count" in kw:
            assert {r["lights"]["drawn"]["count"] for r in lit} == {1, 2, 3}


@pytest.mark.parametrize("given, words", [
    ({"light_intensity": "2-1"}, "--light-intensity 2..1: the range is backwards"),
    ({"light_count": "0-3"}, "--light-count 0..3: use a range within 1..3"),
    ({"light_temperature": "hot"}, "--light-temperature 'hot'"),
    ({"light_elevation": "0..30"}, "--light-elevation 0..30: use a range within 5..90"),
])
def test_bad_lights_are_refused_naming_the_option(given, words):
    assert_refused(given, words)


def test_planned_lights_are_in_dataset_json_and_validate(tmp_path):
    out = tmp_path / "d"
    r = run("plan", "--object-set", "simco", "--n", "6", "--light-count", "1-2", "--light-temperature", "2700",
            "--quiet", "--out", out)
    assert r.returncode == 0, r.stderr
    config = json.loads((out / "dataset.json").read_text())["config"]
    assert config["light_count"] == [1.0, 2.0] and "light_azimuth" not in config
    assert run("validate", out).returncode == 0
    bad = run("plan", "--n", "3", "--light-count", "4", "--quiet", "--out", tmp_path / "e")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "e").exists()


# ---------------------------------------------------------------- rendered (bpy)

@pytest.mark.bpy
def test_draft_refuses_the_light_options(tmp_path):
    pytest.importorskip("bpy")
    r = run("render", "--n", "1", "--preset", "draft", "--light-intensity", "2", "--quiet", "--out", tmp_path / "d")
    assert r.returncode == 2 and "--light-intensity: the draft preset" in r.stderr
    assert not (tmp_path / "d").exists()


@pytest.mark.bpy
def test_warm_dim_light_changes_the_image_and_today_stays(tmp_path):
    pytest.importorskip("bpy")
    common = ["--object-set", "simco", "--objects", "2", "--n", "2", "--seed", "1", *TINY_CYCLES]
    render_each(tmp_path, common, {"plain": [], "warm": ["--light-temperature", "2500", "--light-count", "1"]})
    for i in range(2):
        a, b = pixels(tmp_path / "plain", i), pixels(tmp_path / "warm", i)
        # warmer: red over blue grows; one light: darker
        assert (b[..., 0] - b[..., 2]).mean() > (a[..., 0] - a[..., 2]).mean() + 10
        assert b.mean() < a.mean()
    assert run("validate", tmp_path / "warm").returncode == 0
