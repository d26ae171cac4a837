"""Per-worker object cache: each object is built (or imported) once, then every
image links a duplicate of its mesh, sets its transform and colour, and removes it.
"""

from __future__ import annotations

import math

import bpy

from comco.manifest import ObjectSet, ObjectSpec
from comco.scenes.errors import ObjectBuildError
from comco.scenes.materials import is_primary, linear_to_srgb, recolored
from comco.scenes.meshes import import_mesh
from comco.scenes.parts import Ctx
from comco.scenes.registry import load_all
from comco.scenes.surfaces import surfaced


class Instancer:
    def __init__(self, object_set: ObjectSet, collection: bpy.types.Collection):
        self.set = object_set
        self.collection = collection  # where instances go (linked to the render scenes)
        self.library = bpy.data.collections.new("prototypes")  # never linked to a scene
        self.prototypes: dict[str, bpy.types.Object] = {}
        self.live: list[bpy.types.Object] = []

    def prototype(self, name: str) -> bpy.types.Object:
        proto = self.prototypes.get(name)
        if proto is None:
            proto = self._build(self.set.get(name))
            self.prototypes[name] = proto
        return proto

    def _build(self, spec: ObjectSpec) -> bpy.types.Object:
        if spec.source_kind == "builder":
            fn = load_all().get(spec.source_ref)
            if fn is None:
                raise ObjectBuildError(f"{spec.name}: no builder named '{spec.source_ref}'")
            ctx = Ctx(spec, self.set.palette, self.library)
            ob = fn(ctx)
        else:
            ob = import_mesh(spec, self.set.root, self.library)
        if ob.name not in self.library.objects:
            self.library.objects.link(ob)
        return ob

    def add(self, obj: dict, index: int, look_default: str = "rubber") -> bpy.types.Object:
        """Place one record object in the scene; `index` is its position in the record."""
        spec = self.set.get(obj["name"])
        proto = self.prototype(obj["name"])
        ob = bpy.data.objects.new(f"obj{index}:{spec.name}", proto.data)  # linked duplicate: no mesh copy
        k = obj["scale"] / spec.longest_m
        ob.scale = (k, k, k)
        ob.location = obj["location"]
        ob.rotation_euler = (0.0, 0.0, obj["rotation_z"])
        ob.pass_index = index + 1
        color = obj.get("color")
        look = obj.get("material") or look_default
        # A mesh is painted in its record's colour even when fixed (its own colour, named in
        # captions); a builder's fixed colours are built into its materials.
        paint = bool(color) and (spec.colorable or spec.source_kind == "mesh")
        if paint or look != "rubber":
            rgb = self.set.palette.get(color) if paint else None
            for i, mat in enumerate(proto.data.materials):
                if is_primary(mat) and (rgb is not None or look != "rubber"):
                    ob.material_slots[i].link = "OBJECT"
                    ob.material_slots[i].material = recolored(
                        mat, color or "own", rgb or tuple(linear_to_srgb(c) for c in mat.diffuse_color[:3]), look)
        surface = obj.get("surface")
        if surface:  # every material of the object, as painted above
            for slot in ob.material_slots:
                if slot.material is not None:
                    mat = slot.material
                    slot.link = "OBJECT"
                    slot.material = surfaced(mat, surface)
        self.collection.objects.link(ob)
        self.live.append(ob)
        return ob

    def clear(self) -> None:
        for ob in self.live:
            bpy.data.objects.remove(ob, do_unlink=True)
        self.live.clear()


def real_dimensions(ob: bpy.types.Object) -> tuple[float, float, float]:
    """World-space size of an object's mesh (without its object scale)."""
    xs = [v.co.x for v in ob.data.vertices]
    ys = [v.co.y for v in ob.data.vertices]
    zs = [v.co.z for v in ob.data.vertices]
    return max(xs) - min(xs), max(ys) - min(ys), max(zs) - min(zs)


def yaw_degrees(obj: dict) -> float:
    return math.degrees(obj["rotation_z"])
