"""User object sets: meshes made by the test import, normalise, cache and render; bad meshes fail clearly."""

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.bpy
pytest.importorskip("bpy")

COMCO = [sys.executable, "-m", "comco.cli"]
MANIFEST = textwrap.dedent('''\
    name = "bricks"
    [[objects]]
    name = "brick"
    plural = "bricks"
    article = "a"
    dimensions_m = [0.4, 0.2, 0.2]
    size_class = "small"
    colorable = true
    source = "mesh:{mesh}"
    ''')


def make_meshes(folder):
    """A trimmed cube in centimetres, saved as .obj and .glb by Blender itself."""
    code = textwrap.dedent(f'''
        import bpy
        bpy.ops.wm.read_factory_settings(use_empty=True)
        bpy.ops.mesh.primitive_cube_add(size=2, location=(5, 5, 5))
        ob = bpy.context.object
        ob.scale = (20, 10, 10)
        bpy.ops.object.transform_apply(scale=True)
        bpy.ops.wm.obj_export(filepath="{folder}/brick.obj", export_materials=False)
        bpy.ops.export_scene.gltf(filepath="{folder}/brick.glb")
    ''')
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


@pytest.fixture(scope="module")
def meshes(tmp_path_factory):
    folder = tmp_path_factory.mktemp("meshes")
    make_meshes(folder)
    return folder


def check(folder):
    code = f"import json; from comco.scenes.check import check_set; print(json.dumps(check_set({str(folder)!r})))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-1500:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("suffix", ["obj", "glb"])
def test_import_normalise_cache_and_render(meshes, tmp_path, suffix):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / f"brick.{suffix}").write_bytes((meshes / f"brick.{suffix}").read_bytes())
    (folder / "objects.toml").write_text(MANIFEST.format(mesh=f"brick.{suffix}"))
    rows = check(folder)
    assert rows[0]["problem"] is None
    assert max(rows[0]["dimensions"]) == pytest.approx(0.4, rel=0.01)  # longest side = manifest's
    assert rows[0]["dimensions"][0] / rows[0]["dimensions"][1] == pytest.approx(2.0, rel=0.02)
    cache = list((folder / ".comco-cache").glob("brick-*.blend"))
    assert len(cache) == 1
    code = (f"from comco.scenes.instancer import Instancer; from comco.manifest import load_object_set; import bpy;"
            f"i = Instancer(load_object_set({str(folder)!r}), bpy.data.collections.new('o'));"
            f"print(i.prototype('brick')['comco_cache'])")
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert second.stdout.strip().splitlines()[-1] == "hit"
    out = tmp_path / "d"
    r = subprocess.run([*COMCO, "render", "--object-set", str(folder), "--objects", "1", "--n", "2",
                        "--resolution", "48", "--preset", "draft", "--quiet", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-1500:]
    rec = json.loads((out / "scenes.jsonl").read_text().splitlines()[0])
    assert rec["objects"][0]["measured"]["pixels"] > 0


def test_corrupt_and_empty_meshes_fail_with_the_object_and_file(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "brick.obj").write_text("this is not a mesh\n")
    (folder / "objects.toml").write_text(MANIFEST.format(mesh="brick.obj"))
    r = subprocess.run([*COMCO, "objects", "validate", str(folder)], capture_output=True, text=True)
    assert r.returncode == 2
    assert "brick" in r.stderr and "brick.obj" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_blend_without_the_object_fails(tmp_path, meshes):
    folder = tmp_path / "blend"
    folder.mkdir()
    code = ("import bpy; bpy.ops.wm.read_factory_settings(use_empty=True);"
            "bpy.ops.mesh.primitive_cube_add(); bpy.context.object.name = 'other';"
            f"bpy.ops.wm.save_as_mainfile(filepath={str(folder / 'brick.blend')!r})")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    (folder / "objects.toml").write_text(MANIFEST.format(mesh="brick.blend"))
    r = subprocess.run([*COMCO, "objects", "validate", str(folder)], capture_output=True, text=True)
    assert r.returncode == 2 and "no object named 'brick'" in r.stderr


@pytest.mark.parametrize("scale, message", [(0.0, "zero size"), (1e7, "measures")])
def test_zero_and_absurd_sizes_fail_naming_the_size(tmp_path, scale, message):
    folder = tmp_path / "odd"
    folder.mkdir()
    verts = "".join(f"v {x * scale} {y * scale} {z * scale}\n" for x, y, z in
                    ((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1)))
    (folder / "brick.obj").write_text(verts + "f 1 2 3 4\nf 1 2 5\n")
    (folder / "objects.toml").write_text(MANIFEST.format(mesh="brick.obj"))
    r = subprocess.run([*COMCO, "objects", "validate", str(folder)], capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1 and "brick" in line and "brick.obj" in line and message in line
