"""A small toolkit for procedural builders: primitives, transforms, joining.

Builders compose parts (boxes, cylinders, spheres, cones, tori, extruded outlines,
skinned rings, surfaces of revolution, swept tubes, or any bmesh via `Ctx.add_bmesh`)
with materials from `Ctx.material`, then `Ctx.finish` joins them into one object,
puts its origin at the bottom centre and scales it to the manifest's dimensions.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import bmesh
import bpy
from mathutils import Euler, Matrix, Vector

from comco.scenes import outlines
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
    def add_bmesh(self, bm: bmesh.types.BMesh, mats=None, name: str = "part", location: Vec = (0, 0, 0),
                  rotation: Vec = (0, 0, 0), scale: Vec = (1, 1, 1), recalc_normals: bool = False):
        """Link a bmesh (freed here) as one part. `mats`: a material, None, or a sequence of
        materials for the faces' material indices; `recalc_normals` first turns faces outwards."""
        if recalc_normals:
            bmesh.ops.recalc_face_normals(bm, faces=bm.faces[:])
        me = bpy.data.meshes.new(name)
        bm.to_mesh(me)
        bm.free()
        for m in mats if isinstance(mats, (list, tuple)) else [mats]:
            if m is not None:
                me.materials.append(m)
        ob = bpy.data.objects.new(name, me)
        ob.location = location
        ob.rotation_euler = Euler(rotation)
        ob.scale = scale
        self.collection.objects.link(ob)
        self.parts.append(ob)
        return ob

    def box(self, size: Vec, location: Vec = (0, 0, 0), mat=None, rotation: Vec = (0, 0, 0), bevel: float = 0.0,
            segments: int = 2, profile: float = 0.0):
        """A box of `size`; `bevel` rounds its edges by that many metres (absolute, not relative),
        in `segments` steps; `profile` is bmesh's bevel profile (0.5: a quarter circle)."""
        bm = bmesh.new()
        bmesh.ops.create_cube(bm, size=1.0)
        bmesh.ops.scale(bm, vec=Vector(size), verts=bm.verts)
        if bevel > 0:
            bmesh.ops.bevel(bm, geom=bm.edges[:] + bm.verts[:], offset=min(bevel, 0.49 * min(size)),
                            segments=segments, affect="EDGES", profile=profile)
        return self.add_bmesh(bm, mat, "box", location, rotation)

    def cylinder(self, radius: float, depth: float, location: Vec = (0, 0, 0), mat=None,
                 rotation: Vec = (0, 0, 0), segments: int = 24, radius_top: float | None = None):
        bm = bmesh.new()
        bmesh.ops.create_cone(bm, cap_ends=True, segments=segments, radius1=radius,
                              radius2=radius if radius_top is None else radius_top, depth=depth)
        return self.add_bmesh(bm, mat, "cylinder", location, rotation)

    def cone(self, radius: float, depth: float, location: Vec = (0, 0, 0), mat=None, rotation: Vec = (0, 0, 0),
             segments: int = 24):
        return self.cylinder(radius, depth, location, mat, rotation, segments, radius_top=0.0)

    def sphere(self, radius: float, location: Vec = (0, 0, 0), mat=None, scale: Vec = (1, 1, 1),
               rotation: Vec = (0, 0, 0), segments: int = 24, rings: int = 12):
        bm = bmesh.new()
        bmesh.ops.create_uvsphere(bm, u_segments=segments, v_segments=rings, radius=radius)
        for f in bm.faces:
            f.smooth = True
        return self.add_bmesh(bm, mat, "sphere", location, rotation, scale)

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
        return self.add_bmesh(bm, mat, "torus", location, rotation)

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
        return self.add_bmesh(bm, mat, "prism", location, rotation)

    def skin(self, rings: Sequence[Sequence[Vec]], mats=None, cap_start: bool = True, cap_end: bool = True,
             closed: bool = False, smooth: bool = False, sharp: float | None = None, name: str = "skin"):
        """A surface through rings of equally many 3-D points (see `skin_rings`), faces turned
        outwards; `smooth` shades it smooth with edges sharper than `sharp` degrees kept sharp."""
        bm = bmesh.new()
        skin_rings(bm, rings, cap_start, cap_end, closed)
        bmesh.ops.recalc_face_normals(bm, faces=bm.faces[:])
        if smooth:
            smooth_shading(bm, sharp)
        return self.add_bmesh(bm, mats, name)

    def revolve(self, profile: Sequence[Vec], mats=None, segments: int = 32, loop: Sequence[Vec] | None = None,
                centre: Vec = (0.0, 0.0, 0.0), seg_mats: Sequence[int] | None = None, cap: bool = True,
                sharp: float | None = 40.0, location: Vec = (0, 0, 0), rotation: Vec = (0, 0, 0),
                recalc_normals: bool = False, name: str = "revolve"):
        """A surface of revolution around z (a lathe), or of any closed `loop` of 2-D points.

        profile: rings (r, z), or (rx, ry, z) to stretch the loop; a ring of radius 0 is a pole,
        so a profile that starts and ends on the axis gives a closed surface. `centre` offsets
        the points; seg_mats[i] is the material index of the band between rings i and i + 1.
        Open ends get an n-gon cap when `cap`. Shaded smooth, edges sharper than `sharp` kept.
        """
        if loop is None:
            loop = outlines.ellipse(1.0, 1.0, segments)
        cx, cy, cz = centre
        n = len(loop)
        bm = bmesh.new()
        vr = []
        for ring in profile:
            rx, ry, z = (ring[0], ring[0], ring[1]) if len(ring) == 2 else ring
            if rx < 1e-9 and ry < 1e-9:
                vr.append([bm.verts.new((cx, cy, cz + z))])
            else:
                vr.append([bm.verts.new((cx + rx * x, cy + ry * y, cz + z)) for x, y in loop])
        for i in range(len(vr) - 1):
            a, b = vr[i], vr[i + 1]
            mi = seg_mats[i] if seg_mats else 0
            if len(a) == 1 and len(b) == 1:
                continue
            for k in range(n):
                k2 = (k + 1) % n
                if len(a) == 1:
                    f = bm.faces.new((a[0], b[k2], b[k]))
                elif len(b) == 1:
                    f = bm.faces.new((a[k], a[k2], b[0]))
                else:
                    f = bm.faces.new((a[k], a[k2], b[k2], b[k]))
                f.material_index = mi
        if cap:
            if len(vr[0]) > 1:
                f = bm.faces.new(list(reversed(vr[0])))
                f.material_index = seg_mats[0] if seg_mats else 0
            if len(vr[-1]) > 1:
                f = bm.faces.new(vr[-1])
                f.material_index = seg_mats[-1] if seg_mats else 0
        smooth_shading(bm, sharp)
        return self.add_bmesh(bm, mats, name, location, rotation, recalc_normals=recalc_normals)

    def tube(self, path: Sequence[Vec], radii, mats=None, sides: int = 8, ell: tuple[float, float] = (1.0, 1.0),
             closed: bool = False, caps: bool = True, sharp: float | None = None, name: str = "tube"):
        """Sweep a circle along a 3-D polyline (parallel-transport frames), shaded smooth.

        radii: one radius or one per point; a radius of 0 makes a pointed tip there. `ell`
        stretches the section along the frame's normal and binormal. `closed`: the path is a
        loop (the last point joins the first), giving a ring. Open ends get n-gon caps when `caps`.
        """
        if not isinstance(radii, (list, tuple)):
            radii = [radii] * len(path)
        bm = bmesh.new()
        vr = []
        for p, n, b, r in zip(*_frames(path, closed), radii):
            if r < 1e-9:
                vr.append([bm.verts.new(p)])
            else:
                vr.append([bm.verts.new(p + r * (ell[0] * math.cos(2 * math.pi * k / sides) * n
                                                  + ell[1] * math.sin(2 * math.pi * k / sides) * b))
                           for k in range(sides)])
        for a, c in zip(vr, vr[1:] + (vr[:1] if closed else [])):
            for k in range(sides):
                k2 = (k + 1) % sides
                if len(a) == 1 and len(c) == 1:
                    continue
                if len(a) == 1:
                    bm.faces.new((a[0], c[k], c[k2]))
                elif len(c) == 1:
                    bm.faces.new((a[k2], a[k], c[0]))
                else:
                    bm.faces.new((a[k], c[k], c[k2], a[k2]))
        if caps and not closed:
            if len(vr[0]) > 1:
                bm.faces.new(list(reversed(vr[0])))
            if len(vr[-1]) > 1:
                bm.faces.new(vr[-1])
        bmesh.ops.recalc_face_normals(bm, faces=bm.faces[:])
        smooth_shading(bm, sharp)
        return self.add_bmesh(bm, mats, name)

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


def _frames(path: Sequence[Vec], closed: bool = False):
    """Points, and the normals and binormals of parallel-transport frames along a polyline."""
    P = [Vector(p) for p in path]
    n = len(P)
    if closed:
        T = [(P[(i + 1) % n] - P[i - 1]).normalized() for i in range(n)]
    else:
        T = [(P[min(i + 1, n - 1)] - P[max(i - 1, 0)]).normalized() for i in range(n)]
    ref = Vector((0, 0, 1)) if abs(T[0].z) < 0.9 else Vector((1, 0, 0))
    N = [(ref - ref.dot(T[0]) * T[0]).normalized()]
    for i in range(1, n):
        v = N[-1] - N[-1].dot(T[i]) * T[i]
        N.append(v.normalized() if v.length > 1e-9 else N[-1])
    return P, N, [t.cross(v) for t, v in zip(T, N)]


def skin_rings(bm: bmesh.types.BMesh, rings: Sequence[Sequence[Vec]], cap_start: bool = True,
               cap_end: bool = True, closed: bool = False) -> list[list[bmesh.types.BMVert]]:
    """Add a surface through rings of equally many 3-D points to `bm`: quads between neighbouring
    rings, n-gon caps on the open ends; `closed` joins the last ring to the first (no caps)."""
    vr = [[bm.verts.new(p) for p in ring] for ring in rings]
    n = len(vr[0])
    for a, b in zip(vr, vr[1:] + (vr[:1] if closed else [])):
        for i in range(n):
            j = (i + 1) % n
            bm.faces.new((a[i], a[j], b[j], b[i]))
    if not closed:
        if cap_start:
            bm.faces.new(vr[0][::-1])
        if cap_end:
            bm.faces.new(vr[-1])
    return vr


def smooth_shading(bm: bmesh.types.BMesh, sharp: float | None = None, sharp_boundary: bool = False) -> None:
    """Shade every face smooth, keeping edges whose faces meet at more than `sharp` degrees sharp
    (None: no sharp edges; 0 or less: flat faces, every edge sharp). `sharp_boundary` also marks
    open and non-manifold edges sharp."""
    flat = sharp is not None and sharp <= 0
    for f in bm.faces:
        f.smooth = not flat
    if sharp is None:
        return
    limit = math.radians(sharp)
    for e in bm.edges:
        if flat or (sharp_boundary and len(e.link_faces) != 2):
            e.smooth = False
        elif len(e.link_faces) == 2 and e.calc_face_angle(0.0) > limit:
            e.smooth = False


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
