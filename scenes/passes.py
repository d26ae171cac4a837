"""Depth and normal maps from the render's own passes (--depth, --normals).

Blender 5 has no `scene.node_tree`, and a compositor tree would take over the image's output;
so the passes are switched on in the view layer, the render result is saved once more as a
multilayer EXR in the worker's scratch folder (the PNG is written as before) and read back
with the OpenImageIO that ships inside bpy. Both engines' Depth pass is the distance from the
camera plane (z-depth) in metres (Cycles and Workbench agree with comco.plan.camera to 1e-4 m);
only Cycles writes the Normal pass (world space; turned into the camera's frame here).
"""

from __future__ import annotations

import os
import sys

import bpy
import numpy as np
from PIL import Image

from comco.io import atomic_path
from comco.record import DEPTH_UNIT_M

EXR = "passes.exr"
DEPTH_MAX = 65535  # 16-bit steps


def enable(scene, passes: tuple[str, ...]) -> None:
    """Switch on the view layer's passes an image needs (once per worker, before any render)."""
    layer = scene.view_layers[0]
    layer.use_pass_z = "depth" in passes
    layer.use_pass_normal = "normals" in passes


def _oiio():
    """bpy's own OpenImageIO (its site-packages is not on sys.path by default)."""
    site = os.path.join(bpy.utils.system_resource("PYTHON"), "lib",
                        f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    if site not in sys.path:
        sys.path.append(site)
    import OpenImageIO

    return OpenImageIO


def read_passes(scene, workdir: str) -> dict[str, np.ndarray]:
    """The last render's passes: "depth" (H, W) metres and "normals" (H, W, 3) world space, those
    the view layer has. Row 0 is the image's top row."""
    settings = scene.render.image_settings
    kept = (settings.media_type, settings.file_format, settings.color_mode, settings.color_depth)
    path = os.path.join(workdir, EXR)
    try:
        settings.media_type = "MULTI_LAYER_IMAGE"
        settings.file_format, settings.color_depth = "OPEN_EXR_MULTILAYER", "32"
        bpy.data.images["Render Result"].save_render(path, scene=scene)
    finally:
        settings.media_type = kept[0]
        settings.file_format, settings.color_mode, settings.color_depth = kept[1:]
    oiio = _oiio()
    found: dict[str, np.ndarray] = {}
    image = oiio.ImageInput.open(path)
    if image is None:
        raise RuntimeError(f"cannot read the passes Blender wrote ({oiio.geterror()})")
    try:
        part = 0
        while image.seek_subimage(part, 0):
            spec = image.spec()
            names = [c.rsplit(".", 2)[-2:] for c in spec.channelnames]
            pixels = np.asarray(image.read_image(part, 0, 0, spec.nchannels, "float"))
            for pass_name, key in (("Depth", "depth"), ("Normal", "normals")):
                if names and all(n[0] == pass_name for n in names):
                    found[key] = pixels[..., 0] if key == "depth" else pixels[..., :3]
            part += 1
    finally:
        image.close()
    return found


def save_depth(depth: np.ndarray, path: str) -> None:
    """16-bit PNG: metres / DEPTH_UNIT_M, 0 where nothing is within DEPTH_MAX steps."""
    steps = np.rint(depth / DEPTH_UNIT_M)
    steps[~np.isfinite(steps) | (steps > DEPTH_MAX) | (steps < 1)] = 0
    with atomic_path(path) as tmp:
        Image.fromarray(steps.astype(np.uint16)).save(tmp, format="PNG")


def save_normals(normals: np.ndarray, camera, path: str) -> None:
    """8-bit RGB PNG of camera-space unit normals, (n + 1) / 2; (0, 0, 0) where no surface is."""
    to_camera = np.array(camera.matrix_world.to_3x3(), dtype=np.float64)  # columns: the camera's axes
    n = normals.astype(np.float64) @ to_camera  # world -> camera: the axes' dot products
    length = np.linalg.norm(n, axis=-1, keepdims=True)
    rgb = np.rint((n / np.maximum(length, 1e-9) + 1) / 2 * 255)
    rgb[length[..., 0] < 0.5] = 0
    with atomic_path(path) as tmp:
        Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8), mode="RGB").save(tmp, format="PNG")
