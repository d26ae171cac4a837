"""The floor of an image (comco/plan/floors.py): today's grey floor, a procedural one or none.

The ground plane is the stage's; a procedural floor is one material per pattern, built on its
first image, whose colours and turn are set per image from the record. Patterns read the
ground's object coordinates (scene units), so a tile or a board has the same size everywhere.
"""

from __future__ import annotations

import bpy

from comco.scenes.materials import srgb_to_linear

PREFIX = "comco-floor-"
DARKER = 0.5  # a pattern's second colour: the drawn one at this brightness (a floor of one hue)
# wood and noise blend the two colours over a ramp: darker still, and the noise's values (which
# crowd around 0.5) stretched over the ramp, so that at 128 px neither reads as a plain floor
RAMP_DARKER = 0.3
RAMP_ENDS = {"wood": (0.15, 0.85), "noise": (0.38, 0.62)}


def _linear(rgb, k: float = 1.0) -> tuple[float, float, float, float]:
    return (*(srgb_to_linear(c) * k for c in rgb), 1.0)


def _build(name: str) -> bpy.types.Material:
    mat = bpy.data.materials.new(PREFIX + name)
    mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    bsdf = nodes["Principled BSDF"]
    bsdf.inputs["Roughness"].default_value = 0.6 if name == "tiles" else 0.75
    coords = nodes.new("ShaderNodeTexCoord")
    turn = nodes.new("ShaderNodeMapping")
    turn.name = "turn"
    links.new(coords.outputs["Object"], turn.inputs["Vector"])
    if name == "checker":
        tex = nodes.new("ShaderNodeTexChecker")
        tex.inputs["Scale"].default_value = 0.5  # squares of one unit
        out = tex.outputs["Color"]
    elif name == "tiles":
        tex = nodes.new("ShaderNodeTexBrick")
        tex.offset = 0.0  # square tiles in a grid, not bricks
        tex.inputs["Scale"].default_value = 0.4
        tex.inputs["Brick Width"].default_value = 1.0
        tex.inputs["Row Height"].default_value = 1.0
        tex.inputs["Mortar Size"].default_value = 0.03
        tex.inputs["Mortar"].default_value = (0.75, 0.75, 0.72, 1.0)
        out = tex.outputs["Color"]
    else:  # wood (bands of a wave) or noise (a mottled stone): a ramp between the two colours
        if name == "wood":
            tex = nodes.new("ShaderNodeTexWave")
            tex.inputs["Scale"].default_value = 0.25  # bands a board wide: finer ones blur to one tone
            tex.inputs["Distortion"].default_value = 4.0
            tex.inputs["Detail"].default_value = 2.0
            fac = tex.outputs["Fac"]
        else:
            tex = nodes.new("ShaderNodeTexNoise")
            tex.inputs["Scale"].default_value = 0.5  # blotches of about two units
            tex.inputs["Detail"].default_value = 3.0
            fac = tex.outputs["Fac"]
        ramp = nodes.new("ShaderNodeValToRGB")
        ramp.name = "ramp"
        ramp.color_ramp.elements[0].position, ramp.color_ramp.elements[1].position = RAMP_ENDS[name]
        links.new(fac, ramp.inputs["Fac"])
        out = ramp.outputs["Color"]
    tex.name = "pattern"
    links.new(turn.outputs["Vector"], tex.inputs["Vector"])
    links.new(out, bsdf.inputs["Base Color"])
    return mat


def _paint(mat: bpy.types.Material, floor: dict) -> None:
    nodes = mat.node_tree.nodes
    nodes["turn"].inputs["Rotation"].default_value = (0.0, 0.0, floor["rotation_z"])
    light, dark = _linear(floor["color"]), _linear(floor["color"], DARKER)
    tex = nodes["pattern"]
    if floor["name"] in ("checker", "tiles"):
        tex.inputs["Color1"].default_value = light
        tex.inputs["Color2"].default_value = dark if floor["name"] == "checker" else _linear(floor["color"], 0.8)
    else:
        ramp = nodes["ramp"].color_ramp
        ramp.elements[0].color, ramp.elements[1].color = _linear(floor["color"], RAMP_DARKER), light


def set_floor(scene, floor: dict | None) -> None:
    """The record's floor on the stage's ground: a procedural material, no ground at all
    ("none"), or (no floor, or "plain") today's grey one."""
    ground = scene.objects["ground"]
    ground.hide_render = floor is not None and floor["name"] == "none"
    slot = ground.material_slots[0]
    if floor is None or floor["name"] in ("plain", "none"):
        slot.material = bpy.data.materials["ground"]
        return
    mat = bpy.data.materials.get(PREFIX + floor["name"]) or _build(floor["name"])
    _paint(mat, floor)
    slot.material = mat
