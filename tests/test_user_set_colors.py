"""A colour a mesh object's captions name is the colour it renders in: a colourable mesh is
painted in its record's palette colour, a fixed one (`colorable = false`, `colors = ["silver"]`)
in its own listed colour, and a listed colour the palette cannot paint is refused."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from comco.errors import UserError
from comco.manifest import parse_manifest

COMCO = [sys.executable, "-m", "comco.cli"]
BOX = "".join(f"v {x} {y} {z}\n" for x in (0, 40) for y in (0, 20) for z in (0, 20)) + \
    "f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n"
ENTRY = {"plural": "kettles", "article": "a", "dimensions_m": [0.4, 0.2, 0.2], "size_class": "small"}


def manifest(tmp_path, source="mesh:kettle.obj", palette=None):
    (tmp_path / "kettle.obj").write_text(BOX)
    return {"name": "k", "palette": palette or {"red": [0.7, 0.1, 0.1]},
            "objects": [{"name": "kettle", **ENTRY, "colorable": False, "colors": ["silver"], "source": source}]}


def test_a_fixed_mesh_colour_outside_the_palette_is_refused(tmp_path):
    with pytest.raises(UserError, match=r"colour 'silver' is not in the set's palette \(a mesh is painted"):
        parse_manifest(manifest(tmp_path), tmp_path)
    parse_manifest(manifest(tmp_path, palette={"silver": [0.75, 0.75, 0.78]}), tmp_path)  # paintable: accepted


def test_a_builders_fixed_colour_is_built_in_and_needs_no_palette_entry(tmp_path):
    parse_manifest(manifest(tmp_path, source="builder:comco.banana"), tmp_path)


@pytest.mark.bpy
def test_mesh_objects_render_in_the_colour_their_record_names(tmp_path):
    pytest.importorskip("bpy")
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "brick.obj").write_text(BOX)  # no materials at all
    (folder / "kettle.obj").write_text(BOX)
    # "silver" here is a clear blue, so a painted kettle cannot pass for the mesh's own grey
    (folder / "objects.toml").write_text(textwrap.dedent('''\
        name = "kitchen"
        [palette]
        red = [0.8, 0.05, 0.05]
        green = [0.05, 0.7, 0.05]
        silver = [0.1, 0.2, 0.9]
        [[objects]]
        name = "brick"
        plural = "bricks"
        article = "a"
        dimensions_m = [0.4, 0.2, 0.2]
        size_class = "small"
        colorable = true
        colors = ["red", "green"]
        source = "mesh:brick.obj"
        [[objects]]
        name = "kettle"
        plural = "kettles"
        article = "a"
        dimensions_m = [0.4, 0.2, 0.2]
        size_class = "small"
        colorable = false
        colors = ["silver"]
        source = "mesh:kettle.obj"
        '''))
    out = tmp_path / "d"
    r = subprocess.run([*COMCO, "render", "--object-set", str(folder), "--objects", "1", "--n", "6", "--colors",
                        "--masks", "--resolution", "48", "--preset", "draft", "--large-fraction", "0.05", "--quiet",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-1500:]
    from PIL import Image

    channel = {"red": 0, "green": 1, "silver": 2}
    seen = set()
    for line in (out / "scenes.jsonl").read_text().splitlines():
        rec = json.loads(line)
        obj = rec["objects"][0]
        rgb = np.asarray(Image.open(out / rec["image"]).convert("RGB"), dtype=float)
        mask = np.asarray(Image.open(out / "masks" / f"{rec['id']}.png")) == 1
        mean = rgb[mask].mean(0)
        assert mean.argmax() == channel[obj["color"]], (obj["name"], obj["color"], mean)
        seen.add((obj["name"], obj["color"]))
    assert {n for n, _ in seen} == {"brick", "kettle"}


def test_an_object_preview_shows_a_fixed_mesh_in_its_own_colour(tmp_path):
    """Issue 37 item 5: `objects preview` / `show` plan no colours, so a mesh whose colour is fixed
    (`colors = ["silver"]`, here a clear blue) came out unpainted grey; it shows its own colour now."""
    pytest.importorskip("bpy")
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "kettle.obj").write_text(BOX)  # no materials: unpainted, it would be grey
    (folder / "objects.toml").write_text(textwrap.dedent('''\
        name = "kitchen"
        [palette]
        silver = [0.1, 0.2, 0.9]
        [[objects]]
        name = "kettle"
        plural = "kettles"
        article = "a"
        dimensions_m = [0.4, 0.2, 0.2]
        size_class = "small"
        colorable = false
        colors = ["silver"]
        source = "mesh:kettle.obj"
        '''))
    r = subprocess.run([*COMCO, "objects", "show", str(folder), "kettle", "--resolution", "64", "--out",
                        str(tmp_path / "look")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-1500:]
    from PIL import Image

    rgb = np.asarray(Image.open(tmp_path / "look" / "kettle.png").convert("RGB"), dtype=float)
    blue = (rgb[..., 2] - rgb[..., 0] > 60) & (rgb[..., 2] - rgb[..., 1] > 40)
    assert blue.sum() > 200, blue.sum()  # the kettle is blue, not grey (nothing else on the sheet is)
