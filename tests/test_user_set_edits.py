"""The README's object-set loop converges: validate, edit the manifest (or the mesh), validate
again. Each edit that shapes the imported mesh misses the mesh cache, so validate and a render
see the new geometry; `objects validate` names every problem and suggests a rotation_fix."""

import json
import subprocess
import sys
import textwrap

import pytest

from comco.scenes.check import is_permutation

COMCO = [sys.executable, "-m", "comco.cli"]
ENTRY = textwrap.dedent('''\
    [[objects]]
    name = "{name}"
    plural = "{name}s"
    article = "a"
    dimensions_m = {dims}
    size_class = "{size}"
    colorable = true
    source = "mesh:{mesh}"
    rotation_fix = {fix}
    ''')


def box_obj(x, y, z) -> str:
    """An x by y by z box as OBJ text, in the file's own axes."""
    vs = [(a, b, c) for a in (0, x) for b in (0, y) for c in (0, z)]
    faces = ((1, 2, 4, 3), (5, 7, 8, 6), (1, 5, 6, 2), (3, 4, 8, 7), (1, 3, 7, 5), (2, 6, 8, 4))
    return "".join(f"v {a} {b} {c}\n" for a, b, c in vs) + "".join(f"f {' '.join(map(str, f))}\n" for f in faces)


def write_set(folder, *entries):
    folder.mkdir(exist_ok=True)
    (folder / "objects.toml").write_text('name = "boxes"\n' + "".join(ENTRY.format(**e) for e in entries))


def brick(**edit):
    return {"name": "brick", "dims": [0.4, 0.2, 0.2], "size": "small", "mesh": "brick.obj", "fix": [0, 0, 0]} | edit


def validate(folder):
    return subprocess.run([*COMCO, "objects", "validate", str(folder)], capture_output=True, text=True)


def measured(folder) -> list[float]:
    r = validate(folder)
    assert r.returncode == 0, r.stderr[-1500:]
    return [float(v) for v in r.stdout.split("ms")[1].split("m")[0].split(" x ")]


def render(folder, out):
    r = subprocess.run([*COMCO, "render", "--object-set", str(folder), "--objects", "1", "--n", "1", "--seed", "3",
                        "--resolution", "48", "--preset", "draft", "--large-fraction", "0.04", "--quiet",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-1500:]
    return [json.loads(line)["objects"][0]["measured"] for line in (out / "scenes.jsonl").read_text().splitlines()]


def test_permutation_of_the_manifest_sides():
    assert is_permutation((0.1, 0.5, 0.1), (0.1, 0.1, 0.5))
    assert not is_permutation((0.1, 0.1, 0.5), (0.1, 0.1, 0.5))  # agrees: nothing to fix
    assert not is_permutation((0.1, 0.3, 0.1), (0.1, 0.1, 0.5))  # a size error, not an axis swap


@pytest.mark.bpy
@pytest.mark.parametrize("edit, sides", [
    ({"dims": [0.8, 0.4, 0.4], "size": "medium"}, [0.8, 0.4, 0.4]),  # the size the longest side is scaled to
    # the rotation fix (turns about the axes of the object as imported: its Z is the scene's Y)
    ({"dims": [0.2, 0.2, 0.4], "fix": [0, 0, 90]}, [0.2, 0.2, 0.4]),
    ({"mesh_text": box_obj(20, 40, 20), "dims": [0.2, 0.2, 0.4]}, [0.2, 0.2, 0.4]),  # the file's bytes
])
def test_each_edit_reaches_validate_and_a_render(tmp_path, edit, sides):
    pytest.importorskip("bpy")
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "brick.obj").write_text(box_obj(40, 20, 20))  # Y-up file: Blender keeps x, swaps y and z
    write_set(folder, brick())
    assert measured(folder) == pytest.approx([0.4, 0.2, 0.2], rel=0.01)
    render(folder, tmp_path / "before")  # a render writes the cache too
    if "mesh_text" in edit:
        (folder / "brick.obj").write_text(edit.pop("mesh_text"))
    write_set(folder, brick(**edit))
    assert measured(folder) == pytest.approx(sides, rel=0.01)
    assert len(list((folder / ".comco-cache").glob("brick-*.blend"))) == 1  # the stale file is gone
    edited = render(folder, tmp_path / "edited")
    for f in (folder / ".comco-cache").iterdir():
        f.unlink()
    assert edited == render(folder, tmp_path / "fresh")  # what an import from scratch renders


@pytest.mark.bpy
def test_validate_names_every_problem_and_the_rotation_fix(tmp_path):
    pytest.importorskip("bpy")
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "brick.obj").write_text(box_obj(40, 20, 20))
    (folder / "post.obj").write_text(box_obj(0.1, 0.1, 0.5))  # height on the file's Z: a Z-up file
    post = {"name": "post", "dims": [0.1, 0.1, 0.5], "size": "medium", "mesh": "post.obj", "fix": [0, 0, 0]}
    write_set(folder, brick(dims=[0.4, 0.3, 0.2]), post)
    r = validate(folder)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "2 of 2 objects have problems" in r.stderr and "more)" not in r.stderr
    assert "brick (mesh:brick.obj): measures 0.4 x 0.2 x 0.2 m, manifest says 0.4 x 0.3 x 0.2 m;" in r.stderr
    assert "post (mesh:post.obj): measures 0.1 x 0.5 x 0.1 m" in r.stderr
    assert "set rotation_fix = [-90, 0, 0]" in r.stderr
    assert r.stderr.count("rotation_fix") == 1  # the brick's sides are not a permutation: no hint
    write_set(folder, brick(), post | {"fix": [-90, 0, 0]})  # the suggestion, taken
    assert validate(folder).returncode == 0
