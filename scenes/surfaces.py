"""An object's planned surface (comco/plan/surfaces.py) on its materials: roughness and
metallic as drawn, and a texture of two tones of the material's own colour (its hue kept, so
the colour named in captions stays true). One material per (material, surface), shared."""

from __future__ import annotations

import bpy

DARKER = 0.55  # a texture's second tone: the colour at this brightness


def _texture(mat: bpy.types.Material, kind: str) -> None:
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    bsdf = nodes.get("Principled BSDF")
    base = bsdf.inputs["Base Color"]
    if base.is_linked:  # a builder's own pattern: kept
        return
    coords = nodes.new("ShaderNodeTexCoord")
    if kind == "noise":
        tex = nodes.new("ShaderNodeTexNoise")
        tex.inputs["Scale"].default_value = 6.0
        tex.inputs["Detail"].default_value = 4.0
        fac = tex.outputs["Fac"]
    elif kind == "stripes":
        tex = nodes.new("ShaderNodeTexWave")
        tex.inputs["Scale"].default_value = 3.0
        fac = tex.outputs["Fac"]
    else:  # spots
        tex = nodes.new("ShaderNodeTexVoronoi")
        tex.inputs["Scale"].default_value = 8.0
        fac = tex.outputs["Distance"]
    links.new(coords.outputs["Generated"], tex.inputs["Vector"])
    ramp = nodes.new("ShaderNodeValToRGB")
    c = tuple(base.default_value)
    ramp.color_ramp.elements[0].color = (c[0] * DARKER, c[1] * DARKER, c[2] * DARKER, 1.0)
    ramp.color_ramp.elements[1].color = c
    links.new(fac, ramp.inputs["Fac"])
    links.new(ramp.outputs["Color"], base)


def surfaced(mat: bpy.types.Material, surface: dict) -> bpy.types.Material:
    """`mat` with the planned surface (created once per material and surface, then shared)."""
    r, m, t = surface.get("roughness"), surface.get("metallic"), surface.get("texture", "none")
    name = f"{mat.name}|surface:{r}:{m}:{t}"
    done = bpy.data.materials.get(name)
    if done is not None:
        return done
    new = mat.copy()
    new.name = name
    bsdf = new.node_tree.nodes.get("Principled BSDF") if new.use_nodes else None
    if r is not None:
        new.roughness = r
        if bsdf is not None:
            bsdf.inputs["Roughness"].default_value = r
    if m is not None:
        new.metallic = min(m, 0.3)  # Workbench shows full metals nearly black (materials.py)
        if bsdf is not None:
            bsdf.inputs["Metallic"].default_value = m
    if t != "none" and bsdf is not None:
        _texture(new, t)
    return new
