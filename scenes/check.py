"""Build (or import) every object of a set once and check it: `comco objects validate`."""

from __future__ import annotations

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
                off = max(abs(d - m) / m for d, m in zip(dims, spec.dimensions_m))
                if off > 0.1:
                    problem = (f"{spec.name} ({spec.source}): measures {_fmt(dims)}, "
                               f"manifest says {_fmt(spec.dimensions_m)}")
        except ObjectBuildError as exc:
            dims, faces, problem = (0.0, 0.0, 0.0), 0, str(exc)
        rows.append({"name": spec.name, "seconds": round(time.perf_counter() - t0, 4), "faces": faces,
                     "dimensions": [round(d, 4) for d in dims], "problem": problem})
    return rows


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
