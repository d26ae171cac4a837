"""Measure what is visible: an ID render in a second scene that shares the objects.

Blender 5 removed `scene.node_tree`, so instead of a compositor index pass we render
the same objects with Workbench in flat object colours (one pure colour per object,
no anti-aliasing, transparent background) and classify pixels. It costs one cheap
Workbench render, plus one more per object whose box touches another's (to count
the pixels it would cover alone, for the visible fraction).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import bpy
import numpy as np
from PIL import Image

from comco.io import atomic_path

# Pure colours survive any view transform; index = bits (r, g, b) - 1.
ID_COLORS = [(1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 0, 1), (1, 0, 1), (0, 1, 1), (1, 1, 1)]


def build_id_scene(main: bpy.types.Scene, objects: bpy.types.Collection) -> bpy.types.Scene:
    scene = bpy.data.scenes.new("id")
    scene.collection.children.link(objects)
    scene.camera = main.camera
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.resolution_x, scene.render.resolution_y = main.render.resolution_x, main.render.resolution_y
    scene.render.resolution_percentage = 100
    scene.render.film_transparent = True
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGBA"
    scene.render.dither_intensity = 0.0
    try:
        scene.view_settings.view_transform = "Standard"
    except TypeError:
        pass
    sh = scene.display.shading
    sh.light = "FLAT"
    sh.color_type = "OBJECT"
    sh.show_shadows = False
    sh.show_cavity = False
    sh.show_specular_highlight = False
    sh.show_object_outline = False
    scene.display.render_aa = "OFF"
    return scene


def render_ids(scene: bpy.types.Scene, live: list[bpy.types.Object], path: str) -> np.ndarray:
    """Label image: 0 background, i + 1 for live[i]."""
    for i, ob in enumerate(live):
        ob.color = (*ID_COLORS[i % len(ID_COLORS)], 1.0)
    scene.render.filepath = path
    bpy.ops.render.render(write_still=True, scene=scene.name)
    rgba = np.asarray(Image.open(path))
    bits = (rgba[..., 0] > 127).astype(np.int16) + 2 * (rgba[..., 1] > 127) + 4 * (rgba[..., 2] > 127)
    code_to_index = np.zeros(8, dtype=np.int16)
    for i, (r, g, b) in enumerate(ID_COLORS):
        code_to_index[r + 2 * g + 4 * b] = i + 1
    labels = code_to_index[bits]
    labels[rgba[..., 3] < 128] = 0
    return labels


def measure(scene: bpy.types.Scene, live: list[bpy.types.Object], workdir: str,
            occlusion: bool = False) -> tuple[list[dict], np.ndarray]:
    """Per object: pixels, fraction, bbox [x0, y0, x1, y1) and visible fraction; plus the label image.

    Args:
        occlusion: also `occluded_by`, the objects seen over the pixels it covers alone (read
            from the alone renders the visible fraction already makes)."""
    path = os.path.join(workdir, "ids.png")
    labels = render_ids(scene, live, path)
    h, w = labels.shape
    counts = np.bincount(labels.ravel(), minlength=len(live) + 1)
    boxes = []
    for i in range(len(live)):
        ys, xs = np.nonzero(labels == i + 1)
        boxes.append(None if len(xs) == 0 else [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1])
    out = []
    for i in range(len(live)):
        pixels = int(counts[i + 1])
        visible = 1.0
        over: list[int] = []
        if boxes[i] is not None and _touches_other(i, boxes):
            alone = _alone_mask(scene, live, i, path)
            covered = int(alone.sum())
            visible = pixels / covered if covered else 0.0
            over = sorted(int(k) - 1 for k in np.unique(labels[alone]) if k not in (0, i + 1))
        elif boxes[i] is None:
            visible = 0.0
        b = boxes[i]
        out.append({
            "pixels": pixels, "fraction": round(pixels / (w * h), 6), "bbox": b,
            "visible_fraction": round(min(visible, 1.0), 4),
            "touches_border": bool(b and (b[0] == 0 or b[1] == 0 or b[2] == w or b[3] == h)),
            **({"occluded_by": over} if occlusion else {}),
        })
    return out, labels


def visible_depths(labels: np.ndarray, depth: np.ndarray, count: int) -> list[float | None]:
    """Each object's median distance from the camera plane over its visible pixels (metres)."""
    out = []
    for i in range(count):
        d = depth[labels == i + 1]
        out.append(round(float(np.median(d)), 4) if d.size else None)
    return out


def _touches_other(i: int, boxes: list) -> bool:
    a = boxes[i]
    for j, b in enumerate(boxes):
        if j != i and b is not None and a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]:
            return True
    return False


def _alone_mask(scene, live, i: int, path: str) -> np.ndarray:
    """The pixels live[i] covers with the other objects hidden."""
    hidden = [ob for j, ob in enumerate(live) if j != i]
    for ob in hidden:
        ob.hide_render = True
    try:
        return render_ids(scene, live, path) == i + 1
    finally:
        for ob in hidden:
            ob.hide_render = False


def save_mask(labels: np.ndarray, path: str) -> None:
    """Index mask PNG: 0 background, i + 1 for the record's objects[i]."""
    with atomic_path(path) as tmp:
        Image.fromarray(labels.astype(np.uint8), mode="L").save(tmp, format="PNG")


def scratch_dir() -> str:
    """A temporary folder for ID renders, removed when this process exits (the render
    workers get theirs from the render run, which owns their lifetime)."""
    path = tempfile.mkdtemp(prefix="comco-scratch-")
    atexit.register(shutil.rmtree, path, True)
    return path
