"""The camera factor (issue 23 item 2): elevation, azimuth, focal length and distance drawn per
image around ComCO's camera; every object placed inside each image's own view, in its slot,
at its planned share; a range that cannot keep the objects in view refused up front."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support.planning import RECIPE, assert_refused, plan_records, run

from comco.data import config_hash
from comco.errors import UserError
from comco.lab.graph import build_stages
from comco.lab.recipe import parse_recipe
from comco.manifest import load_object_set
from comco.plan import Camera, PlanConfig, Planner
from comco.plan.placement import SLOT_UV

WIDE = {"camera_elevation": "30..60", "camera_azimuth": "-180..180", "camera_lens": "35..70",
        "camera_distance": "10..24"}


def records(n: int = 40, **kw) -> list[dict]:
    return plan_records(n, objects="2-5", **kw)


def test_todays_camera_is_the_default_and_keeps_the_hash():
    assert PlanConfig.from_dict({"camera_elevation": "40", "camera_lens": "45", "camera_azimuth": "0",
                                 "camera_distance": "16"}).to_dict() == PlanConfig().to_dict()
    moved = PlanConfig.from_dict({"camera_elevation": "30..60"}).to_dict()
    assert moved["camera_elevation"] == [30.0, 60.0] and "camera_lens" not in moved
    assert config_hash(moved, "x") != config_hash(PlanConfig().to_dict(), "x")
    assert all(set(r["camera"]) == {"location", "look_at", "lens_mm", "sensor_mm"} for r in records(8))


def test_cameras_are_drawn_per_image_within_their_ranges_and_seeded():
    recs = records(**WIDE)
    cams = [r["camera"] for r in recs]
    assert {c["elevation_deg"] for c in cams} <= {30.0, 35.0, 40.0, 45.0, 50.0, 55.0, 60.0}
    assert len({c["elevation_deg"] for c in cams}) >= 5 and len({c["lens_mm"] for c in cams}) >= 5
    assert all(-180 <= c["azimuth_deg"] <= 180 and 10 <= c["distance"] <= 24 for c in cams)
    for c in cams:  # the recorded location is the camera the drawn numbers describe
        x, y, z = c["location"]
        assert math.isclose(math.hypot(x, y, z), c["distance"], rel_tol=1e-5)
        assert math.isclose(math.degrees(math.asin(z / c["distance"])), c["elevation_deg"], abs_tol=1e-3)
        assert math.isclose(math.degrees(math.atan2(x, -y)), c["azimuth_deg"], abs_tol=1e-3)
    assert recs == records(**WIDE)
    # an image keeps its camera in every attempt: validate re-plans each record from (index, retry)
    cfg = PlanConfig.from_dict({"object_set": "simco", "objects": "2-5", "n": 40, "seed": 3, **WIDE})
    planner = Planner(cfg, load_object_set("simco"))
    again = list(planner.records_from([(r["index"], r["retry"]) for r in recs[::-1]]))
    assert again == recs[::-1]


def _feet(rec: dict) -> dict[str, tuple[float, float]]:
    """Slot -> the image share (u, v) of its object's foot, under the record's camera."""
    w, h = rec["resolution"]
    cam = Camera.from_record(rec["camera"], w, h)
    out = {}
    for o in rec["objects"]:
        u, v, depth = cam.project(tuple(o["location"]))
        assert depth > 0 and 0 <= u <= w and 0 <= v <= h, (rec["id"], o["name"])  # in view
        out[o["slot"]] = (u / w, v / h)
    return out


def test_under_every_camera_each_object_is_in_view_in_its_slot_at_its_share():
    recs = records(n=60, **WIDE)
    for r in recs:
        feet = _feet(r)
        for left, right in (("UL", "UR"), ("BL", "BR"), ("UL", "M"), ("M", "BR")):
            if left in feet and right in feet:  # left stays left, in the image
                assert feet[left][0] < feet[right][0], (r["id"], left, right, feet)
        for top, bottom in (("UL", "BL"), ("UR", "BR")):
            if top in feet and bottom in feet:
                assert feet[top][1] < feet[bottom][1], (r["id"], top, bottom, feet)
    # the shares planned under the varied cameras are today's shares
    plain = records(n=60)
    share = lambda rs: sorted(o["planned_fraction"] for r in rs for o in r["objects"] if o["size_rank"] == 0)  # noqa: E731
    assert abs(np.median(share(recs)) - np.median(share(plain))) < 0.005


def test_the_camera_moves_only_the_camera_and_the_objects_with_it():
    plain, moved = records(), records(camera_azimuth="90", camera_distance="32")
    for a, b in zip(plain, moved):
        assert [o["planned_fraction"] for o in a["objects"]] == [o["planned_fraction"] for o in b["objects"]]
        assert a["captions"] == b["captions"] and a["lights"] == b["lights"]
        for oa, ob in zip(a["objects"], b["objects"]):  # turned a quarter and twice as far
            assert np.allclose(ob["location"][:2], [-2 * oa["location"][1], 2 * oa["location"][0]], atol=1e-4)
            assert math.isclose(ob["scale"], 2 * oa["scale"], rel_tol=1e-4)
            assert math.isclose(ob["rotation_z"], oa["rotation_z"] + math.pi / 2, abs_tol=1e-4)


@pytest.mark.parametrize("given, words", [
    ({"camera_elevation": "60..30"}, "--camera-elevation 60..30: the range is backwards"),
    ({"camera_elevation": "5..30"}, "--camera-elevation 5..30: use a range within 10..80"),
    ({"camera_lens": "wide"}, "--camera-lens 'wide'"),
    ({"camera_elevation": "20..40"}, "--camera-elevation: at 20 degrees and 45 mm the top of the image looks at "
                                     "or near the horizon"),
    ({"camera_lens": "15..45"}, "--camera-lens: at 40 degrees and 15 mm"),
])
def test_bad_cameras_are_refused_naming_the_option(given, words):
    assert_refused(given, words)


def test_a_camera_that_cannot_keep_the_objects_in_view_writes_nothing(tmp_path):
    r = run("plan", "--n", "3", "--camera-elevation", "15..50", "--quiet", "--out", tmp_path / "d")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("comco: error: --camera-elevation: at 15 degrees")
    assert not (tmp_path / "d").exists()


def test_a_planned_camera_is_in_dataset_json_and_validates(tmp_path):
    out = tmp_path / "d"
    r = run("plan", "--object-set", "simco", "--n", "8", "--camera-elevation", "30..60", "--camera-azimuth",
            "-90..90", "--quiet", "--out", out)
    assert r.returncode == 0, r.stderr
    config = json.loads((out / "dataset.json").read_text())["config"]
    assert config["camera_elevation"] == [30.0, 60.0] and "camera_lens" not in config
    assert run("validate", out).returncode == 0


def test_the_camera_is_a_recipe_key_the_render_stages_plan_with():
    text = RECIPE.read_text(encoding="utf-8")
    stages = build_stages(parse_recipe(text.replace("[data]\n", '[data]\ncamera_elevation = "30..50"\n', 1), "smoke"))
    renders = [s for s in stages if s.kind == "render"]
    assert renders and all(s.config["camera_elevation"] == "30..50" for s in renders)
    with pytest.raises(UserError, match="camera-lens 70..30: the range is backwards"):
        parse_recipe(text.replace("[data]\n", '[data]\ncamera_lens = "70..30"\n', 1), "smoke")


# ---------------------------------------------------------------- rendered (bpy)

@pytest.mark.bpy
def test_rendered_under_varied_cameras_objects_are_in_view_at_their_planned_shares(tmp_path):
    pytest.importorskip("bpy")
    out = tmp_path / "d"
    r = run("render", "--object-set", "simco", "--objects", "3", "--n", "6", "--seed", "5", "--resolution", "96",
            "--preset", "draft", "--workers", "1", "--camera-elevation", "30..60", "--camera-azimuth", "-180..180",
            "--camera-lens", "35..70", "--camera-distance", "10..24", "--quiet", "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    recs = [json.loads(line) for line in (out / "scenes.jsonl").open()]
    assert len({r["camera"]["elevation_deg"] for r in recs}) >= 3
    ratios = []
    for rec in recs:
        for o in rec["objects"]:
            m = o["measured"]
            assert m["pixels"] > 0, (rec["id"], o["name"])  # in view
            x0, y0, x1, y1 = m["bbox"]
            su, _ = SLOT_UV[o["slot"]]
            assert abs((x0 + x1) / 2 / 96 - su) < 0.2, (rec["id"], o["slot"])  # on its slot's side
            if m["visible_fraction"] > 0.9:
                ratios.append(m["fraction"] / o["planned_fraction"])
    assert 0.6 < float(np.median(ratios)) < 1.5, ratios
    assert run("validate", out).returncode == 0
