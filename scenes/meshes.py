"""User object sets: import a mesh file, normalise it, cache it as a .blend library.

Import normalises each mesh: optional rotation fix, centred on x = y = 0, resting
on z = 0, scaled so its longest side matches the manifest's real size. The result is
written to `<set>/.comco-cache/<name>-<file hash>.blend`; the next render (any
worker) appends it from there instead of importing again. `.blend` inputs are read
with scripts disabled (Blender never auto-runs scripts in a background process).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import bpy

from comco.io import atomic_path
from comco.scenes.errors import ObjectBuildError
from comco.scenes.parts import join_and_normalize

CACHE_DIR = ".comco-cache"


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def cache_path(spec, root: Path) -> Path:
    src = root / spec.source_ref
    path = root / CACHE_DIR / f"{spec.name}-{file_hash(src)}.blend"
    # The manifest only admits names that are one file-name component; never write elsewhere.
    if path.parent != root / CACHE_DIR or path.resolve().parent != (root / CACHE_DIR).resolve():
        raise ObjectBuildError(f"{spec.name}: its cache file would leave {root / CACHE_DIR}")
    return path


def import_mesh(spec, root: Path, library: bpy.types.Collection) -> bpy.types.Object:
    src = root / spec.source_ref
    if not src.is_file():
        raise ObjectBuildError(f"{spec.name}: mesh file {src} not found")
    cached = cache_path(spec, root)
    if cached.is_file():
        ob = _load_blend(cached, spec.name, spec)
        ob["comco_cache"] = "hit"
        return ob
    ob = _import(src, spec)
    ob["comco_cache"] = "miss"
    _write_cache(ob, cached)
    return ob


def _import(src: Path, spec) -> bpy.types.Object:
    before = set(bpy.data.objects)
    suffix = src.suffix.lower()
    try:
        if suffix in (".glb", ".gltf"):
            bpy.ops.import_scene.gltf(filepath=str(src))
        elif suffix == ".obj":
            bpy.ops.wm.obj_import(filepath=str(src))
        elif suffix == ".fbx":
            bpy.ops.import_scene.fbx(filepath=str(src))
        elif suffix == ".stl":
            bpy.ops.wm.stl_import(filepath=str(src))
        elif suffix == ".ply":
            bpy.ops.wm.ply_import(filepath=str(src))
        elif suffix == ".blend":
            return _load_blend(src, spec.name, spec, normalize=True)
        else:
            raise ObjectBuildError(f"{spec.name}: {src.name} has an unsupported type")
    except RuntimeError as exc:
        raise ObjectBuildError(
            f"{spec.name}: {src.name} could not be read ({str(exc).strip().splitlines()[-1]})"
        ) from None
    new = [o for o in bpy.data.objects if o not in before]
    meshes = [o for o in new if o.type == "MESH" and len(o.data.vertices) > 0]
    if not meshes:
        for o in new:
            bpy.data.objects.remove(o)
        raise ObjectBuildError(f"{spec.name}: {src.name} holds no mesh (empty or corrupt file)")
    for o in meshes:  # bake parents' transforms before joining
        o.matrix_basis = o.matrix_world.copy()
        o.parent = None
    for o in new:
        if o not in meshes:
            bpy.data.objects.remove(o)
    return _normalize(meshes, spec, src)


def _normalize(meshes: list, spec, src: Path) -> bpy.types.Object:
    rx, ry, rz = (math.radians(a) for a in spec.rotation_fix)
    for o in meshes:
        o.rotation_euler.rotate_axis("X", rx)
        o.rotation_euler.rotate_axis("Y", ry)
        o.rotation_euler.rotate_axis("Z", rz)
    joined = join_and_normalize(meshes, spec.name, None)
    xs = [v.co.x for v in joined.data.vertices]
    ys = [v.co.y for v in joined.data.vertices]
    zs = [v.co.z for v in joined.data.vertices]
    size = max(max(xs) - min(xs), max(ys) - min(ys), max(zs) - min(zs))
    if size <= 1e-9:
        raise ObjectBuildError(f"{spec.name}: {src.name} has zero size")
    k = spec.longest_m / size
    if not 1e-4 <= k <= 1e4:
        raise ObjectBuildError(
            f"{spec.name}: {src.name} measures {size:.4g} units for a {spec.longest_m:g} m object; "
            f"fix the mesh's units or its manifest size"
        )
    joined.data.transform(__import__("mathutils").Matrix.Scale(k, 4))
    return joined


def _load_blend(path: Path, name: str, spec, normalize: bool = False) -> bpy.types.Object:
    try:
        with bpy.data.libraries.load(str(path), link=False) as (src, dst):
            if name not in src.objects:
                raise ObjectBuildError(f"{spec.name}: {path.name} holds no object named '{name}'")
            dst.objects = [name]
    except OSError as exc:
        raise ObjectBuildError(f"{spec.name}: {path.name} could not be read ({exc})") from None
    ob = dst.objects[0]
    if ob.type != "MESH" or len(ob.data.vertices) == 0:
        raise ObjectBuildError(f"{spec.name}: object '{name}' in {path.name} is not a mesh with vertices")
    if normalize:
        return _normalize([ob], spec, path)
    return ob


def _write_cache(ob: bpy.types.Object, path: Path) -> None:
    with atomic_path(path) as tmp:
        bpy.data.libraries.write(str(tmp), {ob}, fake_user=True)
