"""Build (or import) every object of a set once and check it: `comco objects validate`."""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys
import time

from comco.manifest import load_object_set


def check_set(set_name: str) -> list[dict]:
    """Per object: build seconds, faces, measured size against the manifest, problem (or None)."""
    import bpy

    from comco.scenes.instancer import Instancer, ObjectBuildError, real_dimensions
    from comco.scenes.stage import reset

    reset()
    oset = load_object_set(set_name)
    inst = Instancer(oset, bpy.data.collections.new("objects"))
    rows = []
    for spec in oset.objects:
        t0 = time.perf_counter()
        problem = None
        try:
            ob = inst.prototype(spec.name)
            dims = real_dimensions(ob) if len(ob.data.vertices) else (0.0, 0.0, 0.0)
            faces = len(ob.data.polygons)
            if faces == 0 or min(dims) <= 0:
                problem = f"{spec.name} ({spec.source}): empty or flat mesh, measured {_fmt(dims)}"
            else:
                if _off(dims, spec.dimensions_m) > TOLERANCE:
                    problem = (f"{spec.name} ({spec.source}): measures {_fmt(dims)}, "
                               f"manifest says {_fmt(spec.dimensions_m)}{_rotation_hint(spec, oset.root, dims)}")
        except ObjectBuildError as exc:
            dims, faces, problem = (0.0, 0.0, 0.0), 0, str(exc)
        rows.append({"name": spec.name, "seconds": round(time.perf_counter() - t0, 4), "faces": faces,
                     "dimensions": [round(d, 4) for d in dims], "problem": problem})
    return rows


TOLERANCE = 0.1  # largest relative difference per side between measured and manifest sizes
# Rotation fixes to try (degrees, added to the entry's), simplest first. -90 about X turns a
# Z-up file upright: Blender's OBJ (and glTF) importers assume Y-up.
TURNS = ((-90, 0, 0), (0, 90, 0), (0, 0, 90), (-90, 90, 0), (-90, 0, 90), (0, 90, 90))


def _off(dims, manifest) -> float:
    return max(abs(d - m) / m for d, m in zip(dims, manifest))


def is_permutation(dims, manifest) -> bool:
    """The measured sides are the manifest's, on other axes (an axis convention, not a size error)."""
    return (_off(dims, manifest) > TOLERANCE
            and any(_off(p, manifest) <= TOLERANCE for p in itertools.permutations(dims)))


def _rotation_hint(spec, root, dims) -> str:
    """When the sides are the manifest's on other axes: the rotation_fix that makes them agree,
    found by importing again with each candidate (mesh files only; nothing is cached)."""
    if spec.source_kind != "mesh" or not is_permutation(dims, spec.dimensions_m):
        return ""
    import bpy

    from comco.scenes.instancer import real_dimensions
    from comco.scenes.meshes import import_file

    for turn in TURNS:
        fix = tuple(a + t for a, t in zip(spec.rotation_fix, turn))
        ob = import_file(root / spec.source_ref, dataclasses.replace(spec, rotation_fix=fix))
        fits = _off(real_dimensions(ob), spec.dimensions_m) <= TOLERANCE
        mesh = ob.data
        bpy.data.objects.remove(ob)
        bpy.data.meshes.remove(mesh)
        if fits:
            shown = ", ".join(f"{(a + 180) % 360 - 180:g}" for a in fix)
            zup = turn == TURNS[0] and not any(spec.rotation_fix)
            why = " (a Z-up file: Blender's importer assumes Y-up)" if zup else ""
            return f"; its sides are the manifest's on other axes: set rotation_fix = [{shown}]{why}"
    return "; its sides are the manifest's on other axes: try a rotation_fix of 90 degrees"


def _fmt(d) -> str:
    return " x ".join(f"{v:.3g}" for v in d) + " m"


if __name__ == "__main__":  # python -m comco.scenes.check SET  -> JSON lines on stdout's last line
    from comco.errors import UserError

    try:
        result = check_set(sys.argv[1])
    except UserError as exc:  # the parent (comco.cli.app._bpy_module) prints it as one line
        sys.stderr.write(f"comco: error: {exc}\n")
        sys.exit(exc.exit_code)
    sys.stdout.write("\n" + json.dumps(result) + "\n")
