"""Contact sheets and single-object renders, from the renderer's own camera and light.

`comco objects preview SET --out DIR` and `comco objects show SET NAME --out DIR` call
these in a worker-like bpy process. Each object is planned as a reference single
(alone, centred, the large object's size), so the sheet shows exactly what probes see.
"""

from __future__ import annotations

import math
import os
import tempfile

from PIL import Image

from comco.manifest import load_object_set
from comco.plan import PlanConfig, Planner
from comco.sheet import Tile, draw_grid, save_png


def render_singles(object_set: str, names: list[str] | None, preset: str, size: int, out_dir: str,
                   colors: bool = False, samples: int | None = None) -> list[tuple[str, str]]:
    """Render reference singles; returns (label, png path) pairs."""
    import bpy

    from comco.scenes.instancer import Instancer, real_dimensions
    from comco.scenes.stage import build_stage, render_to, reset, set_camera, set_lights

    oset = load_object_set(object_set)
    reset()
    scene = build_stage(preset, size, size, samples=samples)
    coll = bpy.data.collections.new("objects")
    scene.collection.children.link(coll)
    inst = Instancer(oset, coll)
    # Sheets are for people: objects are framed larger than the reference singles (7 %).
    # Singles only: one object per scene fits every set (the default 2-5 needs five objects).
    planner = Planner(PlanConfig(object_set=object_set, objects=(1,), n=1, resolution=(size, size), colors=colors,
                                 large_fraction=0.16),
                      as_built(oset, {o.name: real_dimensions(inst.prototype(o.name)) for o in oset.objects
                                      if names is None or o.name in names}))
    singles = [s for s in planner.singles() if names is None or s["name"] in names]
    out = []
    for s in singles:
        set_camera(scene, s["camera"])
        set_lights(scene, s["lights"])
        inst.add(own_colour(oset, s["objects"][0]), 0)
        path = os.path.join(out_dir, f"{s['id']}.png")
        render_to(scene, path)
        inst.clear()
        out.append((s["id"], path))
    return out


def own_colour(oset, obj: dict) -> dict:
    """The object as a preview shows it: in its own colour. A mesh whose colour is fixed
    (`colorable = false`, `colors = ["silver"]`) renders in that colour in every dataset that
    names colours, so its preview does too (without colours planned it would show unpainted grey);
    any other object keeps what its record says (a mesh file's own materials when none)."""
    spec = oset.get(obj["name"])
    if obj.get("color") or spec.colorable or not spec.colors:
        return obj
    return {**obj, "color": spec.colors[0]}


def as_built(oset, measured: dict[str, tuple[float, float, float]]):
    """The set with each measured object's sides as its built mesh has them (the longest kept),
    so the camera frames the whole object even where the manifest's sides disagree with the
    file (a mesh lying along the view that the manifest calls tall: `objects validate` says so)."""
    import dataclasses

    specs = []
    for spec in oset.objects:
        if spec.name in measured:
            dims = measured[spec.name]
            k = spec.longest_m / max(max(dims), 1e-9)
            spec = dataclasses.replace(spec, dimensions_m=tuple(max(d * k, 1e-4) for d in dims))
        specs.append(spec)
    return dataclasses.replace(oset, objects=tuple(specs))


def contact_sheet(items: list[tuple[str, str]], out: str, columns: int | None = None, title: str = "") -> None:
    """The labelled grid of comco.sheet: one tile per (label, png path), about 1.3 times wider than tall."""
    tiles = [Tile(Image.open(p).convert("RGB"), (label,)) for label, p in items]
    columns = columns or math.ceil(math.sqrt(len(tiles) * 1.3))
    save_png(draw_grid([tiles[k:k + columns] for k in range(0, len(tiles), columns)], title=title), out)


def preview(object_set: str, out: str, preset: str = "draft", size: int = 160, colors: bool = False,
            names: list[str] | None = None, samples: int | None = None) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        items = render_singles(object_set, names, preset, size, tmp, colors, samples)
        contact_sheet(items, out, title=f"{load_object_set(object_set).name} ({preset})")
    return len(items)


if __name__ == "__main__":  # python -m comco.scenes.preview SET OUT.png [preset] [size] [names...]
    import sys

    from comco.errors import UserError

    args = sys.argv[1:]
    try:
        n = preview(args[0], args[1], args[2] if len(args) > 2 else "draft", int(args[3]) if len(args) > 3 else 160,
                    names=args[4:] or None)
    except UserError as exc:  # the parent (comco.cli.app._bpy_module) prints it as one line
        sys.stderr.write(f"comco: error: {exc}\n")
        sys.exit(exc.exit_code)
    print(f"{n} objects -> {args[1]}")
