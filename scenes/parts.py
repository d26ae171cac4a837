"""A small toolkit for procedural builders: primitives, transforms, joining.

Builders compose parts (boxes, cylinders, spheres, cones, tori, extruded outlines)
with materials from `Ctx.material`, then `Ctx.finish` joins them into one object,
puts its origin at the bottom centre and scales it to the manifest's dimensions.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import bmesh
import bpy
from mathutils import Euler, Matrix, Vector

from comco.scenes.materials import PRIMARY_PREFIX, make_material

Vec = Sequence[float]


class Ctx:
    """What a builder gets: the object's manifest entry and a material factory."""

    def __init__(self, spec, palette: dict, collection: bpy.types.Collection):
        self.spec = spec
        self.palette = palette
        self.collection = collection
        self.parts: list[bpy.types.Object] = []

    def material(self, name: str, rgb: Vec | str, primary: bool = False, look: str = "rubber",
                 emission: float = 0.0) -> bpy.types.Material:
        """A named material; primary ones are repainted by a record's colour."""
        if isinstance(rgb, str):
            rgb = self.palette[rgb]
        prefix = PRIMARY_PREFIX if primary else ""
        return make_material(f"{prefix}{self.spec.name}.{name}", tuple(rgb), look, emission)

    # -- primitives: each returns a new object in the builder's collection ----------
    def _add(self, bm: bmesh.types.BMesh, name: str, mat, location: Vec, rotation: Vec, scale: Vec):
        me = bpy.data.meshes.new(name)
        bm.to_mesh(me)
        bm.free()
        ob = bpy.data.objects.new(name, me)
        if mat is not None:
            me.materials.append(mat)
        ob.location = location
        ob.rotation_euler = Euler(rotation)
        ob.scale = scale
        self.collection.objects.link(ob)
        self.parts.append(ob)
        return ob

    def box(self, size: Vec, location: Vec = (0, 0, 0), mat=None, rotation: Vec = (0, 0, 0), bevel: float = 0.0):
        """A box of `size`; `bevel` rounds its edges by that many metres (absolute, not relative)."""
        bm = bmesh.new()
        bmesh.ops.create_cube(bm, size=1.0)
        bmesh.ops.scale(bm, vec=Vector(size), verts=bm.verts)
        if bevel > 0:
            bmesh.ops.bevel(bm, geom=bm.edges[:] + bm.verts[:], offset=min(bevel, 0.49 * min(size)),
                            segments=2, affect="EDGES")
        return self._add(bm, "box", mat, location, rotation, (1, 1, 1))

    def cylinder(self, radius: float, depth: float, location: Vec = (0, 0, 0), mat=None,
                 rotation: Vec = (0, 0, 0), segments: int = 24, radius_top: float | None = None):
        bm = bmesh.new()
        bmesh.ops.create_cone(bm, cap_ends=True, segments=segments, radius1=radius,
                              radius2=radius if radius_top is None else radius_top, depth=depth)
        return self._add(bm, "cylinder", mat, location, rotation, (1, 1, 1))

    def cone(self, radius: float, depth: float, location: Vec = (0, 0, 0), mat=None, rotation: Vec = (0, 0, 0),
             segments: int = 24):
        return self.cylinder(radius, depth, location, mat, rotation, segments, radius_top=0.0)

    def sphere(self, radius: float, location: Vec = (0, 0, 0), mat=None, scale: Vec = (1, 1, 1),
               rotation: Vec = (0, 0, 0), segments: int = 24, rings: int = 12):
        bm = bmesh.new()
        bmesh.ops.create_uvsphere(bm, u_segments=segments, v_segments=rings, radius=radius)
        for f in bm.faces:
            f.smooth = True
        return self._add(bm, "sphere", mat, location, rotation, scale)

    def torus(self, major: float, minor: float, location: Vec = (0, 0, 0), mat=None, rotation: Vec = (0, 0, 0),
              segments: int = 32, ring_segments: int = 12, arc: float = 2 * math.pi):
        """A torus (or an arc of one) around local z."""
        bm = bmesh.new()
        rings = []
        closed = arc >= 2 * math.pi - 1e-6
        count = segments if closed else segments + 1
        for i in range(count):
            a = arc * i / segments
            centre = Vector((major * math.cos(a), major * math.sin(a), 0))
            radial = Vector((math.cos(a), math.sin(a), 0))
            ring = []
            for j in range(ring_segments):
                b = 2 * math.pi * j / ring_segments
                ring.append(bm.verts.new(centre + minor * (math.cos(b) * radial + math.sin(b) * Vector((0, 0, 1)))))
            rings.append(ring)
        for i in range(count if closed else count - 1):
            r0, r1 = rings[i], rings[(i + 1) % count]
            for j in range(ring_segments):
                k = (j + 1) % ring_segments
                bm.faces.new((r0[j], r1[j], r1[k], r0[k]))
        if not closed:
            bm.faces.new(list(reversed(rings[0])))
            bm.faces.new(rings[-1])
        for f in bm.faces:
            f.smooth = True
        return self._add(bm, "torus", mat, location, rotation, (1, 1, 1))

    def prism(self, outline: Iterable[Vec], depth: float, location: Vec = (0, 0, 0), mat=None,
              rotation: Vec = (0, 0, 0)):
        """Extrude a 2-D outline (x, y points, counter-clockwise) by `depth` along +z."""
        bm = bmesh.new()
        verts = [bm.verts.new((p[0], p[1], 0.0)) for p in outline]
        face = bm.faces.new(verts)
        del face  # concave outlines are fine: Blender fills n-gons with polyfill
        geom = bmesh.ops.extrude_face_region(bm, geom=bm.faces[:])
        moved = [g for g in geom["geom"] if isinstance(g, bmesh.types.BMVert)]
        bmesh.ops.translate(bm, verts=moved, vec=(0, 0, depth))
        bmesh.ops.recalc_face_normals(bm, faces=bm.faces[:])
        return self._add(bm, "prism", mat, location, rotation, (1, 1, 1))

    def finish(self, name: str | None = None, exact: bool = True, turn_to_fit: bool = True) -> bpy.types.Object:
        """Join the parts into one object at the bottom centre, scaled to the manifest size.

        With `turn_to_fit`, a model whose long side lies along the other ground axis than
        the manifest's is first turned a quarter around z, so the manifest decides whether
        the camera sees, say, a shoe in profile or toe first, and nothing is squashed.
        """
        if turn_to_fit and exact:
            self._turn_to_fit()
        return join_and_normalize(self.parts, name or self.spec.name, self.spec.dimensions_m if exact else None)

    def _turn_to_fit(self) -> None:
        corners = [ob.matrix_basis @ Vector(c) for ob in self.parts for c in _bounds(ob)]
        w = max(c.x for c in corners) - min(c.x for c in corners)
        d = max(c.y for c in corners) - min(c.y for c in corners)
        mw, md = self.spec.dimensions_m[0], self.spec.dimensions_m[1]
        if min(w, d) <= 0 or max(w / d, d / w) < 1.3 or max(mw / md, md / mw) < 1.3:
            return  # about square on the ground: nothing to decide
        if (w > d) != (mw > md):
            turn = Matrix.Rotation(math.pi / 2, 4, "Z")
            for ob in self.parts:
                ob.matrix_basis = turn @ ob.matrix_basis


def _bounds(ob: bpy.types.Object) -> list[tuple[float, float, float]]:
    vs = [v.co for v in ob.data.vertices] or [Vector((0, 0, 0))]
    lo = [min(v[i] for v in vs) for i in range(3)]
    hi = [max(v[i] for v in vs) for i in range(3)]
    return [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]


def join_and_normalize(parts: list[bpy.types.Object], name: str, dims: Vec | None) -> bpy.types.Object:
    """One mesh object from parts: transforms applied, origin at the bottom centre, optional exact size."""
    if not parts:
        raise ValueError(f"builder for {name} made no parts")
    me = bpy.data.meshes.new(name)
    bm = bmesh.new()
    mats: list = []
    for ob in parts:
        part = bmesh.new()
        part.from_mesh(ob.data)
        part.transform(ob.matrix_basis)
        slot_map = {}
        for i, m in enumerate(ob.data.materials):
            if m not in mats:
                mats.append(m)
            slot_map[i] = mats.index(m)
        for f in part.faces:
            f.material_index = slot_map.get(f.material_index, 0)
        tmp = bpy.data.meshes.new("tmp")
        part.to_mesh(tmp)
        part.free()
        bm.from_mesh(tmp)
        bpy.data.meshes.remove(tmp)
    for ob in parts:
        data = ob.data
        bpy.data.objects.remove(ob)
        if data.users == 0:
            bpy.data.meshes.remove(data)
    lo = Vector((min(v.co.x for v in bm.verts), min(v.co.y for v in bm.verts), min(v.co.z for v in bm.verts)))
    hi = Vector((max(v.co.x for v in bm.verts), max(v.co.y for v in bm.verts), max(v.co.z for v in bm.verts)))
    size = hi - lo
    shift = Matrix.Translation(Vector((-(lo.x + hi.x) / 2, -(lo.y + hi.y) / 2, -lo.z)))
    bm.transform(shift)
    if dims is not None:
        k = [d / max(s, 1e-9) for d, s in zip(dims, size)]
        bm.transform(Matrix.Diagonal((*k, 1.0)))
    bm.to_mesh(me)
    bm.free()
    for m in mats:
        me.materials.append(m)
    return bpy.data.objects.new(name, me)
