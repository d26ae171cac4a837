"""The stage: one base scene per worker (ground, world, lights, camera, preset).

Built once; per image only the lights, the world and the camera are set from the record and the
objects come and go (see instancer.py). The camera follows comco.plan.camera.Camera, so
the planner's expectations match what Blender renders.
"""

from __future__ import annotations

import os

import bpy
from mathutils import Vector

from comco.record import PRESET_SAMPLES
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
        set_sampling(scene, samples or PRESET_SAMPLES[preset],
                     adaptive_threshold=0.02 if preset == "cycles" else 0.005)
        c.max_bounces = 4 if preset == "cycles" else 8
        c.diffuse_bounces, c.glossy_bounces, c.transmission_bounces = 2, 2, 2
        c.use_light_tree = False
        c.device = "GPU" if device in ("cuda", "optix") else "CPU"
        if device in ("cuda", "optix"):
            enable_gpu(device)
    elif preset == "eevee":
        scene.render.engine = "BLENDER_EEVEE"
        scene.eevee.taa_render_samples = samples or PRESET_SAMPLES[preset]
    else:
        raise ValueError(f"unknown preset {preset}")


def set_sampling(scene, samples: int, denoise: bool = True, adaptive_threshold: float | None = 0.02) -> None:
    """Cycles' samples per pixel, OpenImageDenoise on or off, and adaptive sampling (None: off,
    every pixel takes every sample, as a reference render does)."""
    c = scene.cycles
    c.samples = samples
    c.use_adaptive_sampling = adaptive_threshold is not None
    if adaptive_threshold is not None:
        c.adaptive_threshold = adaptive_threshold
    c.use_denoising = denoise
    c.denoiser = "OPENIMAGEDENOISE"


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
    """The record's rig: each light it names where and as bright (and, with --light-temperature,
    as coloured) as planned; a light it leaves out (--light-count) dark."""
    for name in ("key", "fill", "back"):
        ob = bpy.data.objects[name]
        spec = lights.get(name)
        ob.hide_render = spec is None
        if spec is None:
            continue
        ob.location = Vector(spec["location"])
        ob.rotation_euler = (-ob.location).to_track_quat("-Z", "Y").to_euler()
        ob.data.energy = spec["energy"]
        ob.data.size = spec["size"]
        ob.data.color = spec.get("color", (1.0, 1.0, 1.0))
    bg = scene.world.node_tree.nodes.get("Background")
    if bg is not None:
        g = lights.get("world", 0.35)
        bg.inputs["Color"].default_value = (0.8, 0.85, 0.9, 1.0)
        bg.inputs["Strength"].default_value = g


HDRI = "comco-hdri"  # the world's environment texture node, made on the first HDRI image


def hdri_path(name: str) -> str:
    """One of the CC0 HDRI worlds that ship with bpy (datafiles/studiolights/world)."""
    folder = bpy.utils.system_resource("DATAFILES", path="studiolights/world")
    path = os.path.join(folder, f"{name}.exr")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"bpy ships no world {name!r} ({path})")
    return path


def set_world(scene, world: dict | None) -> None:
    """The record's world as light and background: an HDRI turned and scaled as planned, or
    (no world, or "plain") the plain backdrop that set_lights gave the Background node."""
    tree = scene.world.node_tree
    bg = tree.nodes["Background"]
    env = tree.nodes.get(HDRI)
    if world is None or world["name"] == "plain":
        for link in list(bg.inputs["Color"].links):  # an earlier image's HDRI: back to the backdrop
            tree.links.remove(link)
        return
    if env is None:
        coords = tree.nodes.new("ShaderNodeTexCoord")
        turn = tree.nodes.new("ShaderNodeMapping")
        turn.name = f"{HDRI}-turn"
        env = tree.nodes.new("ShaderNodeTexEnvironment")
        env.name = HDRI
        tree.links.new(coords.outputs["Generated"], turn.inputs["Vector"])
        tree.links.new(turn.outputs["Vector"], env.inputs["Vector"])
    env.image = bpy.data.images.load(hdri_path(world["name"]), check_existing=True)
    tree.nodes[f"{HDRI}-turn"].inputs["Rotation"].default_value = (0.0, 0.0, world["rotation_z"])
    if not bg.inputs["Color"].is_linked:
        tree.links.new(env.outputs["Color"], bg.inputs["Color"])
    bg.inputs["Strength"].default_value = world["strength"]


def render_to(scene, path: str) -> None:
    scene.render.filepath = path
    bpy.ops.render.render(write_still=True)


def quiet_blender() -> None:
    """Blender prints a line per render; workers keep stdout for the progress bar."""
    os.environ.setdefault("BLENDER_QUIET", "1")
