"""ComCO animals and the person: procedural quadrupeds, a bird and a standing human.

Every animal is modelled in one local frame: its body runs along +x (the head at
+x), y is its width, z is up, in real metres. `_finish` then turns it so that its
long side lies along whichever horizontal axis the manifest gives it: along x
(profile to the camera, the view people recognise animals from) or along y (the
head facing the camera at -y). Identifying patterns (zebra stripes, giraffe
patches, cow patches, tabby stripes) are faces with their own material, cut with
bisecting planes where a crisp edge matters, so the Workbench draft shows them.
"""

from __future__ import annotations

import math
import random

import bmesh
from mathutils import Matrix, Vector

from comco.scenes.registry import builder

# ----------------------------------------------------------------------------- helpers


def _v(p) -> Vector:
    return Vector((float(p[0]), float(p[1]), float(p[2])))


def _catmull(ctrl: list, n: int) -> list:
    """Catmull-Rom samples through control values (Vectors or floats), n per span."""
    if len(ctrl) < 2:
        return list(ctrl)
    pts = [ctrl[0]] + list(ctrl) + [ctrl[-1]]
    out = []
    for i in range(1, len(pts) - 2):
        p0, p1, p2, p3 = pts[i - 1], pts[i], pts[i + 1], pts[i + 2]
        for k in range(n):
            t = k / n
            t2, t3 = t * t, t * t * t
            out.append(0.5 * ((2 * p1) + (-p0 + p2) * t + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t2
                              + (-p0 + 3 * p1 - 3 * p2 + p3) * t3))
    out.append(ctrl[-1])
    return out


def _tube_bm(ctrl, radii, segs: int = 16, per_span: int = 4, ref=(0, 0, 1), caps: bool = True):
    """A smooth tube through control points; radii are r or (r_side, r_up) per point."""
    cpts = [_v(p) for p in ctrl]
    ra = [float(r[0]) if isinstance(r, (tuple, list)) else float(r) for r in radii]
    rb = [float(r[1]) if isinstance(r, (tuple, list)) else float(r) for r in radii]
    pts = _catmull(cpts, per_span)
    ras = _catmull(ra, per_span)
    rbs = _catmull(rb, per_span)
    n = len(pts)
    tans = []
    for i in range(n):
        a, b = pts[max(i - 1, 0)], pts[min(i + 1, n - 1)]
        t = b - a
        tans.append(t.normalized() if t.length > 1e-9 else Vector((1, 0, 0)))
    up = _v(ref)
    nrm = up - tans[0] * up.dot(tans[0])
    if nrm.length < 1e-4:
        nrm = Vector((1, 0, 0)) - tans[0] * tans[0].x
    nrm.normalize()
    bm = bmesh.new()
    rings = []
    for i in range(n):
        if i > 0:
            q = tans[i - 1].rotation_difference(tans[i])
            nrm = q @ nrm
            nrm = (nrm - tans[i] * nrm.dot(tans[i])).normalized()
        side = tans[i].cross(nrm)
        ring = []
        for j in range(segs):
            ang = 2 * math.pi * j / segs
            ring.append(bm.verts.new(pts[i] + side * (ras[i] * math.cos(ang)) + nrm * (rbs[i] * math.sin(ang))))
        rings.append(ring)
    for i in range(n - 1):
        for j in range(segs):
            k = (j + 1) % segs
            bm.faces.new((rings[i][j], rings[i][k], rings[i + 1][k], rings[i + 1][j]))
    if caps:
        for ring, p in ((rings[0], pts[0]), (rings[-1], pts[-1])):
            c = bm.verts.new(p)
            for j in range(segs):
                k = (j + 1) % segs
                bm.faces.new((ring[j], ring[k], c))
    bmesh.ops.recalc_face_normals(bm, faces=bm.faces[:])
    for f in bm.faces:
        f.smooth = True
    return bm


def _ellipsoid_bm(center, radii, rot=(0, 0, 0), segs: int = 16, rings: int = 8):
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=segs, v_segments=rings, radius=1.0)
    m = (Matrix.Translation(_v(center)) @ _euler(rot) @ Matrix.Diagonal((*radii, 1.0)))
    bm.transform(m)
    for f in bm.faces:
        f.smooth = True
    return bm


def _cone_bm(center, r1, r2, depth, rot=(0, 0, 0), segs: int = 12):
    bm = bmesh.new()
    bmesh.ops.create_cone(bm, cap_ends=True, segments=segs, radius1=r1, radius2=r2, depth=depth)
    bm.transform(Matrix.Translation(_v(center)) @ _euler(rot))
    return bm


def _euler(rot) -> Matrix:
    return (Matrix.Rotation(rot[2], 4, "Z") @ Matrix.Rotation(rot[1], 4, "Y") @ Matrix.Rotation(rot[0], 4, "X"))


def _bisect(bm, normal, values) -> None:
    """Cut every face along the planes dot(p, normal) = v (crisp pattern edges)."""
    n = _v(normal).normalized()
    for v in values:
        geom = bm.verts[:] + bm.edges[:] + bm.faces[:]
        bmesh.ops.bisect_plane(bm, geom=geom, dist=1e-6, plane_co=n * v, plane_no=n)


def _stripes(bm, normal, period: float, duty: float, phase: float = 0.0, index: int = 1, keep=None) -> None:
    """Paint bands across `normal`: faces where frac((s - phase) / period) < duty get `index`."""
    n = _v(normal).normalized()
    ss = [v.co.dot(n) for v in bm.verts]
    lo, hi = min(ss), max(ss)
    k0, k1 = math.floor((lo - phase) / period), math.ceil((hi - phase) / period)
    cuts = []
    for k in range(k0, k1 + 1):
        cuts += [phase + k * period, phase + (k + duty) * period]
    _bisect(bm, n, [c for c in cuts if lo < c < hi])
    for f in bm.faces:
        c = f.calc_center_median()
        s = (c.dot(n) - phase) / period
        if (s - math.floor(s)) < duty and (keep is None or keep(c)):
            f.material_index = index


def _paint(bm, fn) -> None:
    """Material index per face from its centre: fn(centre) -> index or None (keep)."""
    for f in bm.faces:
        i = fn(f.calc_center_median())
        if i is not None:
            f.material_index = i


def _add(ctx, bm, *mats):
    """Link a world-space bmesh as a part with one or more material slots."""
    ob = ctx._add(bm, "part", mats[0], (0, 0, 0), (0, 0, 0), (1, 1, 1))
    for m in mats[1:]:
        ob.data.materials.append(m)
    return ob


def _mirror(p):
    return (p[0], -p[1], p[2])


def _finish(ctx, lengthwise: bool = True):
    """Turn the +x-facing model so its long side follows the manifest, then join and scale."""
    dims = ctx.spec.dimensions_m
    if lengthwise and dims[1] > dims[0]:
        rot = Matrix.Rotation(-math.pi / 2, 4, "Z")  # head +x -> -y (towards the camera)
        for ob in ctx.parts:
            ob.matrix_basis = rot @ ob.matrix_basis
    return ctx.finish()


def _leg(ctx, mats, hip, length, r_top, r_bot, hind: bool, hoof_h: float = 0.0, segs: int = 12,
         bend: float = 0.08, paint=None):
    """A leg from the hip/shoulder point down to the ground; hind legs bend back at the hock."""
    x, y, z = hip
    if hind:
        ctrl = [(x, y, z), (x + bend, y, z - 0.40 * length), (x - bend * 0.6, y, z - 0.72 * length),
                (x - bend * 0.3, y, 0.0)]
    else:
        ctrl = [(x, y, z), (x + bend * 0.3, y, z - 0.45 * length), (x, y, z - 0.75 * length), (x + bend * 0.15, y, 0.0)]
    rmid = (r_top + r_bot) / 2
    radii = [r_top, rmid * 1.05, r_bot, r_bot * 1.1]
    bm = _tube_bm(ctrl, radii, segs=segs, per_span=3, ref=(1, 0, 0))
    if hoof_h > 0:
        _bisect(bm, (0, 0, 1), [hoof_h])
        _paint(bm, lambda c: 1 if c.z < hoof_h else None)
    if paint:
        paint(bm)
    return _add(ctx, bm, *mats)


def _eyes(ctx, mat, center, r, spread):
    for s in (1, -1):
        _add(ctx, _ellipsoid_bm((center[0], s * spread, center[2]), (r, r, r), segs=8, rings=4), mat)


# ----------------------------------------------------------------------------- horse family

def _equine(ctx, coat, dark, hoof, zebra: bool):
    """Horse and zebra share a skeleton; the zebra is stockier, striped, with an upright mane."""
    mats = (coat, dark)
    leg_len = 0.98 if not zebra else 0.86
    body_z = leg_len + 0.26
    body = _tube_bm([(-0.82, 0, body_z + 0.02), (-0.7, 0, body_z + 0.05), (-0.2, 0, body_z), (0.35, 0, body_z),
                     (0.66, 0, body_z + 0.08), (0.78, 0, body_z + 0.12)],
                    [(0.05, 0.06), (0.24, 0.27), (0.29, 0.33), (0.28, 0.32), (0.24, 0.29), (0.1, 0.14)],
                    segs=24, per_span=5)
    # neck and head: one tube from the withers to the muzzle
    neck_ctrl = [(0.45, 0, body_z + 0.12), (0.7, 0, body_z + 0.3), (0.88, 0, body_z + 0.55), (0.98, 0, body_z + 0.66)]
    neck = _tube_bm(neck_ctrl, [(0.2, 0.26), (0.15, 0.2), (0.11, 0.15), (0.1, 0.12)], segs=16, per_span=4)
    hz = body_z + 0.62
    head = _tube_bm([(0.92, 0, hz + 0.1), (1.02, 0, hz + 0.04), (1.22, 0, hz - 0.2), (1.3, 0, hz - 0.3),
                     (1.31, 0, hz - 0.33)],
                    [(0.09, 0.1), (0.1, 0.11), (0.07, 0.08), (0.065, 0.07), (0.03, 0.03)], segs=16, per_span=4)
    if zebra:
        # bold stripes: vertical on the body, across the neck, dark muzzle
        _stripes(body, (1, 0, 0.18), 0.2, 0.45, phase=0.02, keep=lambda c: c.z > body_z - 0.27)
        _stripes(neck, (0.55, 0, -0.84), 0.13, 0.45)
        _stripes(head, (0.8, 0, 0.6), 0.09, 0.45, keep=lambda c: c.x < 1.16)
        _paint(head, lambda c: 1 if c.x > 1.2 else None)
    else:
        _paint(head, lambda c: 1 if c.x > 1.26 else None)
    _add(ctx, body, *mats)
    _add(ctx, neck, *mats)
    _add(ctx, head, *mats)
    # mane: a crest along the top of the neck (and a forelock)
    mane_ctrl = [(0.42, 0, body_z + 0.3), (0.62, 0, body_z + 0.46), (0.8, 0, body_z + 0.72), (0.9, 0, body_z + 0.8)]
    if zebra:
        mane = _tube_bm(mane_ctrl, [(0.03, 0.1), (0.035, 0.12), (0.035, 0.11), (0.02, 0.06)], segs=10, per_span=4)
        _stripes(mane, (0.55, 0, -0.84), 0.13, 0.45)
        _add(ctx, mane, coat, dark)
    else:
        mane = _tube_bm([(0.36, 0, body_z + 0.24)] + mane_ctrl,
                        [(0.03, 0.06), (0.05, 0.1), (0.06, 0.12), (0.055, 0.11), (0.03, 0.06)], segs=10, per_span=4)
        _add(ctx, mane, dark)
    # ears
    for s in (1, -1):
        ear = _cone_bm((0.94, s * 0.06, hz + 0.2), 0.035 if not zebra else 0.05, 0.0, 0.14 if not zebra else 0.17,
                       rot=(s * -0.25, -0.25, 0), segs=8)
        _add(ctx, ear, coat if not zebra else dark)
    _eyes(ctx, ctx.material("eye", (0.02, 0.02, 0.02)), (1.04, 0, hz + 0.05), 0.025, 0.085)
    # legs
    for hind, lx in ((False, 0.5), (True, -0.58)):
        for s in (1, -1):
            def stripe_leg(bm):
                if zebra:
                    _stripes(bm, (0, 0, 1), 0.1, 0.45, index=2, keep=lambda c: c.z > 0.09)
            _leg(ctx, (coat, hoof, dark), (lx, s * 0.14, body_z - 0.05), body_z - 0.05, 0.1, 0.045, hind,
                 hoof_h=0.08, segs=12, bend=0.1, paint=stripe_leg)
    # tail
    if zebra:
        tail = _tube_bm([(-0.8, 0, body_z + 0.05), (-0.9, 0, body_z - 0.1), (-0.93, 0, body_z - 0.45),
                         (-0.93, 0, body_z - 0.62)], [0.03, 0.025, 0.03, 0.06], segs=8, per_span=3)
        _paint(tail, lambda c: 1 if c.z < body_z - 0.4 else None)
        _add(ctx, tail, coat, dark)
    else:
        tail = _tube_bm([(-0.8, 0, body_z + 0.06), (-0.92, 0, body_z - 0.02), (-0.98, 0, body_z - 0.35),
                         (-0.97, 0, body_z - 0.75)], [0.05, 0.08, 0.09, 0.05], segs=10, per_span=3)
        _add(ctx, tail, dark)


@builder("comco.horse")
def horse(ctx):
    coat = ctx.material("coat", (0.48, 0.27, 0.12))
    dark = ctx.material("mane", (0.12, 0.07, 0.04))
    hoof = ctx.material("hoof", (0.1, 0.09, 0.08))
    _equine(ctx, coat, dark, hoof, zebra=False)
    return _finish(ctx)


@builder("comco.zebra")
def zebra(ctx):
    coat = ctx.material("white", (0.93, 0.93, 0.9))
    dark = ctx.material("stripe", (0.04, 0.04, 0.04))
    hoof = ctx.material("hoof", (0.06, 0.06, 0.06))
    _equine(ctx, coat, dark, hoof, zebra=True)
    return _finish(ctx)
