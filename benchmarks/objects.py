"""Object sets: build time per set, the mesh cache against importing again, preview sheets.

    python benchmarks/objects.py [--skip-cycles]

1. seconds to build every object of simco and comco once (one bpy process);
2. a user set with one 60k-face mesh as .obj and .glb: first load (import + normalise
   + write the .blend cache) against a later load from the cache, side by side;
3. wall time of `comco objects preview` (draft, and Cycles unless skipped).
"""

import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PY = sys.executable

BUILD = """
import json, time
from comco.scenes.check import check_set
rows = check_set({set!r})
print(json.dumps(sum(r["seconds"] for r in rows)))
"""

LOAD = """
import json, time, bpy
from comco.manifest import load_object_set
from comco.scenes.instancer import Instancer
t = time.perf_counter()
ob = Instancer(load_object_set({folder!r}), bpy.data.collections.new("o")).prototype("blob")
print(json.dumps([time.perf_counter() - t, ob["comco_cache"], len(ob.data.polygons)]))
"""

MAKE = """
import bpy
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.mesh.primitive_uv_sphere_add(segments=256, ring_count=128, radius=30)
bpy.ops.wm.obj_export(filepath={obj!r}, export_materials=False)
bpy.ops.export_scene.gltf(filepath={glb!r})
"""

MANIFEST = textwrap.dedent('''\
    name = "bench"
    [[objects]]
    name = "blob"
    plural = "blobs"
    article = "a"
    dimensions_m = [0.3, 0.3, 0.3]
    size_class = "small"
    colorable = true
    source = "mesh:blob.{suffix}"
    ''')


def last_json(code: str):
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    skip_cycles = "--skip-cycles" in sys.argv
    for name in ("simco", "comco"):
        print(f"build {name:<6} once: {last_json(BUILD.format(set=name)):.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([PY, "-c", MAKE.format(obj=str(tmp / "blob.obj"), glb=str(tmp / "blob.glb"))],
                       check=True, capture_output=True)
        for suffix in ("obj", "glb"):
            folder = tmp / suffix
            folder.mkdir()
            (folder / f"blob.{suffix}").write_bytes((tmp / f"blob.{suffix}").read_bytes())
            (folder / "objects.toml").write_text(MANIFEST.format(suffix=suffix))
            first = last_json(LOAD.format(folder=str(folder)))
            again = last_json(LOAD.format(folder=str(folder)))
            assert first[1] == "miss" and again[1] == "hit"
            print(f"{suffix}: import {first[0]:.3f} s, cached {again[0]:.3f} s -> {first[0] / again[0]:.1f}x "
                  f"({first[2]} faces)")
        for name in ("simco", "comco"):
            for preset in ("draft",) if skip_cycles else ("draft", "cycles"):
                t = time.perf_counter()
                subprocess.run([PY, "-m", "comco.cli", "objects", "preview", name, "--preset", preset,
                                "--out", str(tmp / f"{name}-{preset}")], check=True, capture_output=True)
                print(f"preview {name} {preset}: {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
