"""Per-image outputs (issue 23 item 3): depth and normal maps beside each image, the relations
graph from the planned 3-D positions and the camera, the measured occlusion order; in the
record, dataset.json, `comco validate`, `comco dataset merge` and the COCO and HF exports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from support.planning import RECIPE, plan_records, run

from comco.data import config_hash
from comco.errors import UserError
from comco.lab.graph import build_stages
from comco.lab.recipe import parse_recipe
from comco.plan import Camera, PlanConfig, camera_frame, occlusion_order
from comco.plan.relations import relations
from comco.record import RELATIONS, check_record

INVERSE = {"left of": "right of", "right of": "left of", "above": "below", "below": "above",
           "in front of": "behind", "behind": "in front of"}


def records(**kw) -> list[dict]:
    return plan_records(40, seed=5, objects="2-5", **kw)


def edges(rec: dict) -> set[tuple[int, str, int]]:
    return {(e["subject"], e["predicate"], e["object"]) for e in rec["relations"]}


# ---------------------------------------------------------------- planned (pure Python)

def test_the_outputs_are_off_by_default_and_keep_every_record_and_hash():
    plain = records()
    assert all(not {"depth", "normals", "relations", "occlusion_order"} & set(r) for r in plain)
    assert PlanConfig.from_dict({"depth": False, "normals": False, "relations": False}).to_dict() == \
        PlanConfig().to_dict()
    on = PlanConfig.from_dict({"depth": True}).to_dict()
    assert on["depth"] is True and config_hash(on, "x") != config_hash(PlanConfig().to_dict(), "x")
    # the outputs add fields and move nothing of the scene
    rich = records(depth=True, normals=True, relations=True)
    assert [{k: v for k, v in r.items() if k not in ("depth", "normals", "relations")} for r in rich] == plain
    assert all(r["depth"] == "depth/" + r["image"].split("/")[1] and r["normals"].startswith("normals/")
               for r in rich)


def test_relations_have_the_known_answers_of_a_hand_placed_scene():
    cam = Camera.default(512, 512)
    rec = {"resolution": [512, 512], "camera": cam.to_record(),
           "objects": [{"location": [-3.0, 3.0, 0.0]},  # far left: upper left in the image
                       {"location": [3.0, -3.0, 0.0]},  # near right: bottom right
                       {"location": [3.01, -3.0, 0.0]}]}  # beside 1: no relation to it on any axis
    got = {(e["subject"], e["predicate"], e["object"]) for e in relations(rec, [1.0, 1.0, 1.0])}
    assert {(0, "left of", 1), (0, "above", 1), (0, "behind", 1),
            (1, "right of", 0), (1, "below", 0), (1, "in front of", 0)} <= got
    assert not {(a, p, b) for a, p, b in got if {a, b} == {1, 2}}
    # a tall object's centre is higher: it is above a short one at the same ground point
    rec["objects"] = [{"location": [0.0, 0.0, 0.0]}, {"location": [0.0, 0.0, 0.0]}]
    assert {(e["subject"], e["predicate"], e["object"]) for e in relations(rec, [4.0, 0.5])} >= {(0, "above", 1)}


def test_planned_relations_follow_the_slots_and_come_in_pairs():
    slot_answers = {("UL", "BR"): {"left of", "above", "behind"}, ("UR", "BL"): {"right of", "above", "behind"},
                    ("UL", "UR"): {"left of"}, ("BL", "BR"): {"left of"}, ("UL", "BL"): {"above", "behind"}}
    checked = 0
    for r in records(relations=True):
        assert check_record(r) == []
        got = edges(r)
        assert all(p in RELATIONS for _, p, _ in got)
        assert all((b, INVERSE[p], a) in got for a, p, b in got)  # both directions, always
        slots = [o["slot"] for o in r["objects"]]
        for (sa, sb), want in slot_answers.items():
            if sa in slots and sb in slots:
                a, b = slots.index(sa), slots.index(sb)
                assert want <= {p for x, p, y in got if (x, y) == (a, b)}, (r["id"], sa, sb)
                checked += 1
        # the camera frame agrees: "in front of" stands nearer the camera plane
        seen = camera_frame(r, [0.0] * len(r["objects"]))
        assert all(seen[a][2] < seen[b][2] for a, p, b in got if p == "in front of")
    assert checked > 40


def test_occlusion_order_puts_what_hides_before_what_is_hidden():
    # 2 hides 0, 0 hides 1; the planned distances alone would say 1, 0, 2
    assert occlusion_order([[2], [0], []], [5.0, 1.0, 9.0]) == [2, 0, 1]
    assert occlusion_order([[], [], []], [3.0, 1.0, 2.0]) == [1, 2, 0]  # nothing hidden: by distance
    assert occlusion_order([[1], [0]], [2.0, 1.0]) == [1, 0]  # a cycle: broken at the nearer


def test_a_bad_relation_in_a_record_is_reported():
    r = records(relations=True)[0]
    r["relations"][0]["object"] = 9
    assert any("relations[0]" in p for p in check_record(r))
    r = records(relations=True)[0]
    r["occlusion_order"] = [0, 0]
    assert any("occlusion_order" in p for p in check_record(r))


def test_the_outputs_are_in_dataset_json_and_recipes(tmp_path):
    out = tmp_path / "d"
    r = run("plan", "--object-set", "simco", "--n", "4", "--depth", "--relations", "--quiet", "--out", out)
    assert r.returncode == 0, r.stderr
    info = json.loads((out / "dataset.json").read_text())
    assert info["config"]["depth"] is True and info["config"]["relations"] is True
    assert "normals" not in info["config"] and set(info["outputs"]) == {"depth", "relations"}
    assert info["outputs"]["depth"]["unit_m"] == 0.001 and info["outputs"]["depth"]["format"] == "png16"
    assert run("validate", out).returncode == 0
    plain = tmp_path / "p"
    assert run("plan", "--object-set", "simco", "--n", "4", "--quiet", "--out", plain).returncode == 0
    assert "outputs" not in json.loads((plain / "dataset.json").read_text())

    text = RECIPE.read_text(encoding="utf-8")
    stages = build_stages(parse_recipe(text.replace("[render]\n", "[render]\ndepth = true\n", 1), "smoke"))
    assert all(s.config["depth"] is True for s in stages if s.kind == "render")
    assert all("depth" not in s.config for s in build_stages(parse_recipe(text, "smoke")) if s.kind == "render")
    with pytest.raises(UserError, match="recipe key 'render.depth'"):
        parse_recipe(text.replace("[render]\n", '[render]\ndepth = "yes"\n', 1), "smoke")


@pytest.mark.parametrize("preset, flag, words", [
    ("draft", "--normals", "--normals: the draft preset cannot write normals maps; use --preset cycles or high"),
    ("eevee", "--depth", "--depth: the eevee preset cannot write depth maps; use --preset draft or cycles or high"),
])
def test_a_preset_that_cannot_write_a_map_is_refused_in_one_line_before_anything_is_written(tmp_path, preset,
                                                                                             flag, words):
    r = run("render", "--n", "1", "--preset", preset, flag, "--quiet", "--out", tmp_path / "d")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [f"comco: error: {words}"]
    assert not (tmp_path / "d").exists()


# ---------------------------------------------------------------- rendered (bpy)

COMMON = ["--object-set", "simco", "--seed", "2", "--workers", "1", "--quiet"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """A draft dataset with depth, relations and COCO annotations; the same without them; a
    Cycles one with depth and normals."""
    pytest.importorskip("bpy")
    root = tmp_path_factory.mktemp("outputs")
    crowded = ["--preset", "draft", "--objects", "5", "--large-fraction", "0.2", "--small-fraction", "0.03-0.05",
               "--min-visible", "0.3", "--n", "3", "--resolution", "64", "--coco"]  # objects hide each other
    runs = {"draft": [*crowded, "--depth", "--relations"], "plain": crowded,
            "cycles": ["--preset", "cycles", "--samples", "4", "--objects", "3", "--n", "2", "--resolution", "48",
                       "--depth", "--normals", "--masks"]}
    for name, args in runs.items():
        r = run("render", *COMMON, *args, "--out", root / name)
        assert r.returncode == 0, r.stderr[-3000:]
    return root


def read(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "scenes.jsonl").open()]


def floor_depths(rec: dict) -> np.ndarray:
    """The planned distance from the camera plane of the floor under each pixel's centre."""
    w, h = rec["resolution"]
    cam = Camera.from_record(rec["camera"], w, h)
    v, u = np.mgrid[0:h, 0:w] + 0.5
    x, y = cam.ground_points(u, v)
    _, _, forward = cam.basis
    loc = cam.location
    return (x - loc[0]) * forward[0] + (y - loc[1]) * forward[1] + (0.0 - loc[2]) * forward[2]


def open_floor(labels: np.ndarray) -> np.ndarray:
    """Background pixels whose 3x3 neighbourhood is background too (no object edge blends in)."""
    pad = np.pad(labels, 1, constant_values=0)
    h, w = labels.shape
    return np.all([pad[dy:dy + h, dx:dx + w] == 0 for dy in range(3) for dx in range(3)], axis=0)


@pytest.mark.bpy
@pytest.mark.parametrize("name", ["draft", "cycles"])
def test_depth_is_the_floor_and_objects_known_distance(rendered, name):
    for rec in read(rendered / name):
        depth = np.asarray(Image.open(rendered / name / rec["depth"]))
        assert depth.dtype == np.uint16 and depth.shape == tuple(rec["resolution"][::-1])
        labels = np.asarray(Image.open(rendered / name / "masks" / Path(rec["image"]).name))
        floor = open_floor(labels)
        metres = depth.astype(float) * 0.001
        want = floor_depths(rec)
        assert floor.sum() > 0.5 * floor.size
        assert np.abs(metres[floor] - want[floor]).max() < 0.01  # a centimetre (the PNG's step is 1 mm)
        assert np.abs(metres[floor] - want[floor]).mean() < 0.002
        seen = camera_frame(rec, [o["scale"] for o in rec["objects"]])  # the centre at the longest side's half
        for o, (_, _, centre) in zip(rec["objects"], seen):
            # the visible surface lies between the object's nearest and farthest points
            assert abs(o["measured"]["depth_m"] - centre) <= o["scale"], (rec["id"], o["name"])
            assert o["measured"]["depth_m"] < want[labels == rec["objects"].index(o) + 1].max()


@pytest.mark.bpy
def test_normals_face_the_way_the_floor_faces_the_camera(rendered):
    for rec in read(rendered / "cycles"):
        rgb = np.asarray(Image.open(rendered / "cycles" / rec["normals"]))
        assert rgb.dtype == np.uint8 and rgb.shape == (*rec["resolution"][::-1], 3)
        labels = np.asarray(Image.open(rendered / "cycles" / "masks" / Path(rec["image"]).name))
        cam = Camera.from_record(rec["camera"], *rec["resolution"])
        right, up, forward = cam.basis
        # the floor's normal (world +z) in the camera's frame (x right, y up, z towards the viewer)
        want = np.array([right[2], up[2], -forward[2]])
        n = rgb[open_floor(labels)].astype(float) / 255 * 2 - 1
        assert np.abs(n - want).max() < 0.02
        objects = rgb[labels > 0].astype(float) / 255 * 2 - 1
        assert np.abs(objects - want).max(axis=1).mean() > 0.05  # objects' sides face elsewhere


@pytest.mark.bpy
def test_the_images_are_todays_with_the_outputs_on(rendered):
    for a, b in zip(read(rendered / "draft"), read(rendered / "plain")):
        assert np.array_equal(np.asarray(Image.open(rendered / "draft" / a["image"])),
                              np.asarray(Image.open(rendered / "plain" / b["image"])))
        assert [{k: v for k, v in o["measured"].items() if k not in ("depth_m", "occluded_by")}
                for o in a["objects"]] == [o["measured"] for o in b["objects"]]


@pytest.mark.bpy
def test_the_occlusion_order_is_measured(rendered):
    hidden = 0
    for rec in read(rendered / "draft"):
        order = rec["occlusion_order"]
        assert sorted(order) == list(range(len(rec["objects"])))
        for j, o in enumerate(rec["objects"]):
            for i in o["measured"]["occluded_by"]:
                hidden += 1
                assert order.index(i) < order.index(j)  # what hides comes first
                assert rec["objects"][i]["measured"]["depth_m"] < o["measured"]["depth_m"] + o["scale"]
            if o["measured"]["visible_fraction"] < 1:  # hidden in part: something was seen over it
                assert o["measured"]["occluded_by"]
    assert hidden > 0  # seed 2 overlaps objects (else this test would check nothing)


@pytest.mark.bpy
def test_validate_reports_a_missing_or_damaged_depth_map_like_an_image(rendered, tmp_path):
    assert run("validate", rendered / "draft").returncode == 0
    for damage, words in ((lambda p: p.unlink(), "is missing"),
                          (lambda p: p.write_bytes(p.read_bytes()[:60]), "cannot be decoded"),
                          (lambda p: Image.new("L", (64, 64)).save(p), "has pixel mode L")):
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(rendered / "draft", copy)
        damage(copy / "depth" / "000001.png")
        r = run("validate", copy)
        assert r.returncode == 1 or r.returncode == 2, r.stdout
        assert f"record 000001: depth depth/000001.png {words}" in r.stdout + r.stderr


@pytest.mark.bpy
def test_shards_merge_with_their_maps(rendered, tmp_path):
    args = [*COMMON, "--preset", "draft", "--objects", "3", "--n", "2", "--resolution", "64", "--depth",
            "--relations"]
    for i in (0, 1):
        r = run("render", *args, "--shard", f"{i}/2", "--out", tmp_path / f"s{i}")
        assert r.returncode == 0, r.stderr[-3000:]
    r = run("dataset", "merge", tmp_path / "s0", tmp_path / "s1", "--out", tmp_path / "m")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "m" / "depth").iterdir()) == ["000000.png", "000001.png"]
    assert run("validate", tmp_path / "m").returncode == 0
    assert [r["relations"] for r in read(tmp_path / "m")] == \
        [r["relations"] for r in read(tmp_path / "s0") + read(tmp_path / "s1")]


@pytest.mark.bpy
def test_coco_carries_the_relations_and_maps_as_pycocotools_reads_them(rendered):
    from pycocotools.coco import COCO

    coco = COCO(str(rendered / "draft" / "annotations.json"))
    recs = {r["id"]: r for r in read(rendered / "draft")}
    for img in coco.loadImgs(coco.getImgIds()):
        rec = recs[img["comco_id"]]
        anns = coco.loadAnns(coco.getAnnIds(imgIds=img["id"]))
        ann_of = [a["id"] for a in anns]  # objects[i] is the image's i-th annotation
        assert img["depth_file"] == rec["depth"]
        assert {(e["subject"], e["predicate"], e["object"]) for e in img["relations"]} == \
            {(ann_of[a], p, ann_of[b]) for a, p, b in edges(rec)}
        assert img["occlusion_order"] == [ann_of[i] for i in rec["occlusion_order"]]
        assert all(coco.anns[s]["image_id"] == img["id"] for s in img["occlusion_order"])
        assert [a["depth_m"] for a in anns] == [o["measured"]["depth_m"] for o in rec["objects"]]


@pytest.mark.bpy
def test_datasets_reads_depth_as_an_image_and_relations_as_a_sequence(rendered, tmp_path):
    import datasets

    out = tmp_path / "hf"
    r = run("export", rendered / "draft", "--to", "hf", "--out", out)
    assert r.returncode == 0, r.stderr
    ds = datasets.load_dataset("imagefolder", data_dir=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    assert isinstance(ds.features["depth"], datasets.Image)
    for row in ds:
        rec = next(x for x in read(rendered / "draft") if x["id"] == row["id"])
        assert np.array_equal(np.asarray(row["depth"]), np.asarray(Image.open(rendered / "draft" / rec["depth"])))
        assert row["relations"] == rec["relations"]
        assert row["occlusion_order"] == rec["occlusion_order"]
        assert row["objects"]["depth_m"] == [o["measured"]["depth_m"] for o in rec["objects"]]
