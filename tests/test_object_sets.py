"""The built-in object sets: every builder makes a sane mesh of the manifest's size, every
object shows up in a tiny draft render, and colours repaint only colourable objects."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.bpy
pytest.importorskip("bpy")


def run_py(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("set_name, count", [("simco", 18), ("comco", 72)])
def test_every_builder_matches_its_manifest(set_name, count):
    rows = json.loads(run_py(f"""
        import json
        from comco.scenes.check import check_set
        print(json.dumps(check_set({set_name!r})))
    """))
    assert len(rows) == count
    for r in rows:
        assert r["problem"] is None, r["problem"]
        assert 0 < r["faces"] < 20000, r


@pytest.mark.parametrize("set_name", ["simco", "comco"])
def test_every_object_renders_visible_pixels(tmp_path, set_name):
    out = tmp_path / "singles"
    r = subprocess.run([sys.executable, "-m", "comco.cli", "render", "--object-set", set_name, "--n", "1",
                        "--objects", "1", "--singles", "--preset", "draft", "--resolution", "64", "--quiet",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    singles = [json.loads(x) for x in (out / "singles" / "singles.jsonl").read_text().splitlines()]
    assert len(singles) == {"simco": 18, "comco": 72}[set_name]
    for s in singles:
        assert s["objects"][0]["measured"]["pixels"] > 20, s["name"]


def test_colours_repaint_only_colourable_objects(tmp_path):
    # car is colourable, banana is not: render each in two colours and compare pixels.
    result = json.loads(run_py(f"""
        import json, bpy, numpy as np
        from PIL import Image
        from comco.manifest import load_object_set
        from comco.plan import Planner, PlanConfig
        from comco.scenes.instancer import Instancer
        from comco.scenes.stage import build_stage, reset, set_camera, set_lights, render_to
        reset()
        scene = build_stage("draft", 64, 64)
        coll = bpy.data.collections.new("o"); scene.collection.children.link(coll)
        oset = load_object_set("comco")
        inst = Instancer(oset, coll)
        singles = {{s["name"]: s for s in Planner(PlanConfig(n=1, resolution=(64, 64)), oset).singles()}}
        out = {{}}
        for name in ("car", "banana"):
            imgs = []
            for color in ("red", "blue"):
                s = singles[name]
                set_camera(scene, s["camera"]); set_lights(scene, s["lights"])
                inst.add(dict(s["objects"][0], color=color), 0)
                path = "{tmp_path}/" + name + color + ".png"
                render_to(scene, path)
                inst.clear()
                imgs.append(np.asarray(Image.open(path), dtype=float))
            out[name] = float(np.abs(imgs[0] - imgs[1]).mean())
        print(json.dumps(out))
    """))
    assert result["car"] > 1.0
    assert result["banana"] == 0.0


def test_calibrate_measures_fills_and_writes_them(tmp_path):
    """A cube covers all of its box's outline, a star a third of it; --write puts the
    fills in the manifest, and the planner then sizes the star up to match."""
    import re
    import shutil

    from comco.manifest import load_object_set
    from comco.plan import PlanConfig, Planner

    shutil.copytree(load_object_set("simco").root, tmp_path / "set")
    manifest = tmp_path / "set" / "objects.toml"
    manifest.write_text(re.sub(r"(?m)^fill\s*=.*\n", "", manifest.read_text()))
    before = Planner(PlanConfig(object_set=str(tmp_path / "set"), n=1), load_object_set(tmp_path / "set")).singles()
    temp = tmp_path / "tmp"
    temp.mkdir()
    r = subprocess.run([sys.executable, "-m", "comco.cli", "objects", "calibrate", str(tmp_path / "set"), "--write",
                        "--resolution", "96", "--turns", "2"], capture_output=True, text=True,
                       env={**os.environ, "TMPDIR": str(temp)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert not [p.name for p in temp.iterdir() if p.name.startswith("comco-")]  # its ID-render folder is gone
    oset = load_object_set(tmp_path / "set")
    assert oset.get("cube").fill > 0.9 and oset.get("star").fill < 0.45
    assert all(o.fill is not None for o in oset.objects)
    after = Planner(PlanConfig(object_set=str(tmp_path / "set"), n=1), oset).singles()
    scale = {s["name"]: (b["objects"][0]["scale"], s["objects"][0]["scale"]) for b, s in zip(before, after)}
    # area ~ scale^2: a star with a fill of ~0.33 instead of 0.7 is ~1.4x larger
    assert scale["star"][1] / scale["star"][0] > 1.3 and 0.75 < scale["cube"][1] / scale["cube"][0] < 0.9
