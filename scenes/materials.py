"""Materials: one shared material per look and colour, cached per worker.

Every material sets both the Principled BSDF colour (Cycles, EEVEE) and the
viewport `diffuse_color` (Workbench), so all presets show the same colours.
"""

from __future__ import annotations

import bpy

LOOKS = {
    # look: (roughness, metallic)
    "rubber": (0.75, 0.0),
    "metal": (0.25, 1.0),
    "plastic": (0.45, 0.0),
    "glossy": (0.15, 0.0),
}

PRIMARY_PREFIX = "primary:"


def srgb_to_linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def linear_to_srgb(c: float) -> float:
    return c * 12.92 if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055


def make_material(name: str, rgb: tuple[float, float, float], look: str = "rubber",
                  emission: float = 0.0) -> bpy.types.Material:
    """A material named `name` (reused if it exists). rgb is sRGB in 0..1."""
    mat = bpy.data.materials.get(name)
    if mat is not None:
        return mat
    rough, metal = LOOKS.get(look, LOOKS["rubber"])
    lin = tuple(srgb_to_linear(c) for c in rgb)
    mat = bpy.data.materials.new(name)
    mat.diffuse_color = (*lin, 1.0)
    mat.roughness = rough
    # Workbench (draft) shows full metals nearly black; the viewport value only feeds
    # Workbench, Cycles and EEVEE read the node below.
    mat.metallic = min(metal, 0.3)
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*lin, 1.0)
    bsdf.inputs["Roughness"].default_value = rough
    bsdf.inputs["Metallic"].default_value = metal
    if emission > 0:
        bsdf.inputs["Emission Color"].default_value = (*lin, 1.0)
        bsdf.inputs["Emission Strength"].default_value = emission
    return mat


def recolored(mat: bpy.types.Material, color_name: str, rgb: tuple[float, float, float],
              look: str | None = None) -> bpy.types.Material:
    """The colour variant of a primary material (created once, then shared)."""
    base = mat.name.split("|", 1)[0]
    look = look or "rubber"
    return make_material(f"{base}|{color_name}|{look}", rgb, look)


def is_primary(mat: bpy.types.Material | None) -> bool:
    return mat is not None and mat.name.startswith(PRIMARY_PREFIX)
