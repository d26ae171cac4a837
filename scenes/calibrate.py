"""Measure each object's fill: the share of its bounding box's outline it covers on screen.

The planner sizes an object so that its box outline times its fill covers the planned
share of the image. A microwave covers nearly all of its outline, a bicycle or an
airplane about a quarter; with one typical fill for every object, the large object of
a one-large scene covered anything from 3 % to 12 % of the image instead of 7 %.

`comco objects calibrate SET` calls `measure_fills` in its own bpy process: every
object alone at the centre, at the large object's size and at evenly spaced turns
across its yaw range, drawn as an ID render (comco.scenes.measure); its pixels over
the pixels of its box's outline (comco.plan.camera) is the fill at that turn.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys

import numpy as np

from comco.manifest import load_object_set


def measure_fills(object_set: str, resolution: int = 160, turns: int = 5) -> list[dict]:
    """Per object: name, fill (median over turns), lowest and highest fill."""
    import bpy

    from comco.plan import PlanConfig, Planner
    from comco.plan.camera import silhouette_area
    from comco.scenes.instancer import Instancer
    from comco.scenes.measure import build_id_scene, render_ids, scratch_dir
    from comco.scenes.stage import build_stage, reset, set_camera

    oset = load_object_set(object_set)
    # Singles only: one object per scene fits every set (the default 2-5 needs five objects).
    planner = Planner(PlanConfig(object_set=object_set, objects=(1,), n=1, resolution=(resolution, resolution)),
                      oset)
    reset()
    scene = build_stage("draft", resolution, resolution)
    objects = bpy.data.collections.new("objects")
    scene.collection.children.link(objects)
    id_scene = build_id_scene(scene, objects)
    inst = Instancer(oset, objects)
    path = os.path.join(scratch_dir(), "calibrate.png")
    cam = planner.camera
    rows = []
    for single in planner.singles():
        placed = single["objects"][0]
        spec = oset.get(placed["name"])
        set_camera(scene, single["camera"])
        reach = int(spec.yaw_range)
        fills = []
        for deg in np.linspace(-reach, reach, turns) if reach else [0.0]:
            yaw = math.radians(float(deg))
            ob = inst.add(dict(placed, rotation_z=yaw), 0)
            pixels = int((render_ids(id_scene, [ob], path) == 1).sum())
            inst.clear()
            x, y, _ = placed["location"]
            us, vs = cam.box_corners(np.array(x), np.array(y), np.array(spec.normalized_dimensions(placed["scale"])),
                                     np.array(math.cos(yaw)), np.array(math.sin(yaw)))
            fills.append(pixels / float(silhouette_area(us, vs)))
        rows.append({"name": spec.name, "fill": round(statistics.median(fills), 3),
                     "lowest": round(min(fills), 3), "highest": round(max(fills), 3)})
    return rows


if __name__ == "__main__":  # python -m comco.scenes.calibrate SET RESOLUTION TURNS -> JSON on the last line
    from comco.errors import UserError

    try:
        result = measure_fills(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    except UserError as exc:  # the parent (comco.cli.app._bpy_module) prints it as one line
        sys.stderr.write(f"comco: error: {exc}\n")
        sys.exit(exc.exit_code)
    sys.stdout.write("\n" + json.dumps(result) + "\n")
