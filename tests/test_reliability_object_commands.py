"""`comco objects preview|show|calibrate` work on small user sets (issue 16, item 9): they
used to plan with the default 2-5 objects and failed with a traceback on any set of fewer than
five objects."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from PIL import Image

pytestmark = pytest.mark.bpy
pytest.importorskip("bpy")

COMCO = [sys.executable, "-m", "comco.cli"]
# A 2-object set: a mesh (a box written by hand as OBJ, in centimetres) and a builder.
MANIFEST = textwrap.dedent('''\
    name = "pair"
    [[objects]]
    name = "crate"
    plural = "crates"
    article = "a"
    dimensions_m = [0.4, 0.2, 0.2]
    size_class = "small"
    colorable = true
    source = "mesh:crate.obj"

    [[objects]]
    name = "ball"
    plural = "balls"
    article = "a"
    dimensions_m = [0.3, 0.3, 0.3]
    size_class = "small"
    colorable = true
    source = "builder:simco.sphere"
    ''')
BOX = "".join(f"v {x} {y} {z}\n" for x in (0, 40) for y in (0, 20) for z in (0, 20)) + textwrap.dedent("""\
    f 1 3 4 2
    f 5 6 8 7
    f 1 2 6 5
    f 3 7 8 4
    f 1 5 7 3
    f 2 4 8 6
    """)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pair")
    (folder / "crate.obj").write_text(BOX)
    (folder / "objects.toml").write_text(MANIFEST)
    return folder


def run(*args):
    return subprocess.run([*COMCO, *map(str, args)], capture_output=True, text=True)


def test_preview_of_a_two_object_set(pair, tmp_path):
    r = run("objects", "preview", pair, "--out", tmp_path, "--tile", "32")
    sheet = tmp_path / "objects.png"
    assert r.stdout.splitlines()[-1] == f"open {sheet}"
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    with Image.open(sheet) as im:
        assert im.width >= 2 * 32  # two tiles side by side


def test_show_one_object_of_a_two_object_set(pair, tmp_path):
    png = tmp_path / "ball.png"
    r = run("objects", "show", pair, "ball", "--out", tmp_path, "--resolution", "32", "--preset", "draft")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    with Image.open(png) as im:
        assert im.size[0] >= 32


def test_calibrate_a_two_object_set(pair):
    r = run("objects", "calibrate", pair, "--resolution", "32", "--turns", "1")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    fills = {line.split()[0]: float(line.split()[2]) for line in r.stdout.splitlines() if " fill " in line}
    assert sorted(fills) == ["ball", "crate"]
    # A box covers about all of its outline (pixel edges at 32 px: a little over 1), a ball much less.
    assert 0.9 < fills["crate"] < 1.1 and 0.2 < fills["ball"] < 0.8


def test_a_users_mistake_found_inside_the_bpy_process_is_one_line(tmp_path):
    from comco.cli.app import _bpy_module
    from comco.errors import UserError

    with pytest.raises(UserError, match="has no objects.toml"):
        _bpy_module("comco.scenes.check", str(tmp_path))


def test_write_fills_clamps_a_box_measured_over_one(pair, tmp_path):
    """Issue 37 item 6: a plain box measures fill 1.001 (pixel edges); --write used to write it and
    then refuse its own manifest (fill must be at most 1)."""
    import shutil

    from comco.manifest import MANIFEST_NAME, load_object_set, write_fills

    folder = tmp_path / "set"
    shutil.copytree(pair, folder)
    write_fills(folder / MANIFEST_NAME, {"crate": 1.001, "ball": 0.52})
    oset = load_object_set(folder)
    assert oset.get("crate").fill == 1.0 and oset.get("ball").fill == 0.52


def test_calibrate_write_on_a_box(pair, tmp_path):
    import shutil

    from comco.manifest import load_object_set

    folder = tmp_path / "set"
    shutil.copytree(pair, folder)
    r = run("objects", "calibrate", folder, "--resolution", "32", "--turns", "1", "--write")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "fills written" in r.stdout
    crate = load_object_set(folder).get("crate").fill
    assert 0.9 < crate <= 1.0
