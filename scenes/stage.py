"""The stage: one base scene per worker (ground, world, lights, camera, preset).

Built once; per image only the lights and camera are set from the record and the
objects come and go (see instancer.py). The camera follows comco.plan.camera.Camera, so
the planner's expectations match what Blender renders.
"""

from __future__ import annotations

import os

import bpy
from mathutils import Vector

from comco.scenes.materials import make_material

GROUND_RGB = (0.8, 0.8, 0.8)  # ComCO's light-grey floor


def reset() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)


def build_stage(preset: str, width: int, height: int, device: str = "cpu", samples: int | None = None,
                threads: int = 0) -> bpy.types.Scene:
    scene = bpy.context.scene
    scene.render.resolution_x, scene.render.resolution_y = width, height
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGB"
    scene.render.use_persistent_data = True  # keep BVH and shaders between renders
    if threads:
        scene.render.threads_mode = "FIXED"
        scene.render.threads = threads
    try:
        scene.view_settings.view_transform = "Standard"  # plain sRGB: colours as named
    except TypeError:
        pass
    ground = _ground(scene)
    world = bpy.data.worlds.new("world")
    world.use_nodes = True
    scene.world = world
    _camera(scene)
    for name in ("key", "fill", "back"):
        light = bpy.data.lights.new(name, "AREA")
        ob = bpy.data.objects.new(name, light)
        scene.collection.objects.link(ob)
    apply_preset(scene, preset, device, samples)
    ground.pass_index = 0
    return scene


def _ground(scene) -> bpy.types.Object:
    me = bpy.data.meshes.new("ground")
    s = 200.0
    me.from_pydata([(-s, -s, 0), (s, -s, 0), (s, s, 0), (-s, s, 0)], [], [(0, 1, 2, 3)])
    ob = bpy.data.objects.new("ground", me)
    me.materials.append(make_material("ground", GROUND_RGB, "rubber"))
    scene.collection.objects.link(ob)
    return ob


def _camera(scene) -> None:
    cam = bpy.data.cameras.new("camera")
    ob = bpy.data.objects.new("camera", cam)
    scene.collection.objects.link(ob)
    scene.camera = ob


def apply_preset(scene, preset: str, device: str = "cpu", samples: int | None = None) -> None:
    if preset == "draft":
        scene.render.engine = "BLENDER_WORKBENCH"
        shading = scene.display.shading
        shading.light = "STUDIO"
        shading.color_type = "MATERIAL"
        shading.show_shadows = True
        shading.shadow_intensity = 0.35
        shading.show_cavity = True
        shading.cavity_type = "SCREEN"  # curvature only: "WORLD" adds grain to the flat floor
        shading.show_specular_highlight = True
        shading.background_type = "WORLD" if hasattr(shading, "background_type") else None
        scene.display.render_aa = "FXAA"  # 1 pass instead of 8 on a software GL: ~2x faster, looks alike
        scene.display.light_direction = (0.45, -0.35, 0.82)
        scene.display.shadow_shift = 0.05
        scene.display.shadow_focus = 0.6
        scene.view_settings.exposure = 0.9  # Workbench's studio light is dim next to Cycles' area lights
    elif preset in ("cycles", "high"):
        scene.render.engine = "CYCLES"
        c = scene.cycles
        c.samples = samples or (24 if preset == "cycles" else 128)
        c.use_adaptive_sampling = True
        c.adaptive_threshold = 0.02 if preset == "cycles" else 0.005
        c.use_denoising = True
        c.denoiser = "OPENIMAGEDENOISE"
        c.max_bounces = 4 if preset == "cycles" else 8
        c.diffuse_bounces, c.glossy_bounces, c.transmission_bounces = 2, 2, 2
        c.use_light_tree = False
        c.device = "GPU" if device in ("cuda", "optix") else "CPU"
        if device in ("cuda", "optix"):
            enable_gpu(device)
    elif preset == "eevee":
        scene.render.engine = "BLENDER_EEVEE"
        scene.eevee.taa_render_samples = samples or 32
    else:
        raise ValueError(f"unknown preset {preset}")


def enable_gpu(kind: str) -> int:
    """Turn on every CUDA/OptiX device; returns how many were found."""
    prefs = bpy.context.preferences.addons["cycles"].preferences
    prefs.compute_device_type = kind.upper()
    prefs.refresh_devices()
    devices = [d for d in prefs.devices if d.type == kind.upper()]
    for d in prefs.devices:
        d.use = d.type == kind.upper()
    return len(devices)


def gpu_available(kind: str = "cuda") -> bool:
    try:
        return enable_gpu(kind) > 0
    except Exception:  # no Cycles GPU backend compiled in or no driver
        return False


def set_camera(scene, cam: dict) -> None:
    ob = scene.camera
    ob.location = Vector(cam["location"])
    direction = Vector(cam["look_at"]) - ob.location
    ob.rotation_euler = direction.to_track_quat("-Z", "Y").to_euler()
    ob.data.lens = cam["lens_mm"]
    ob.data.sensor_width = cam.get("sensor_mm", 36.0)
    ob.data.sensor_fit = "AUTO"
    ob.data.clip_end = 500.0


def set_lights(scene, lights: dict) -> None:
    for name in ("key", "fill", "back"):
        spec = lights[name]
        ob = bpy.data.objects[name]
        ob.location = Vector(spec["location"])
        ob.rotation_euler = (-ob.location).to_track_quat("-Z", "Y").to_euler()
        ob.data.energy = spec["energy"]
        ob.data.size = spec["size"]
    bg = scene.world.node_tree.nodes.get("Background")
    if bg is not None:
        g = lights.get("world", 0.35)
        bg.inputs["Color"].default_value = (0.8, 0.85, 0.9, 1.0)
        bg.inputs["Strength"].default_value = g


def render_to(scene, path: str) -> None:
    scene.render.filepath = path
    bpy.ops.render.render(write_still=True)


def quiet_blender() -> None:
    """Blender prints a line per render; workers keep stdout for the progress bar."""
    os.environ.setdefault("BLENDER_QUIET", "1")
