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
from mathutils.kdtree import KDTree

from comco.scenes.parts import smooth_shading
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
    """A smooth tube through control points; radii are r or (r_side, r_up) per point.

    Not `Ctx.tube`: this one passes a Catmull-Rom curve through the points, turns its frames by
    rotation differences from a chosen `ref`, and closes the ends with pointed fans."""
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
    smooth_shading(bm)
    return bm


def _ellipsoid_bm(center, radii, rot=(0, 0, 0), segs: int = 16, rings: int = 8):
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=segs, v_segments=rings, radius=1.0)
    m = (Matrix.Translation(_v(center)) @ _euler(rot) @ Matrix.Diagonal((*radii, 1.0)))
    bm.transform(m)
    smooth_shading(bm)
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
    return ctx.add_bmesh(bm, mats)


def _eyes(ctx, mat, center, r, spread):
    for s in (1, -1):
        ctx.add_bmesh(_ellipsoid_bm((center[0], s * spread, center[2]), (r, r, r), segs=8, rings=4), mat)


# ----------------------------------------------------------------------------- horse family

def _neck_line(base, top, n: int = 4):
    base, top = Vector(base), Vector(top)
    return [base.lerp(top, i / (n - 1)) for i in range(n)]


def _crest(pts, radii_up, lift: float = 0.85):
    """Points along the upper edge of a neck in the xz plane (for a mane)."""
    out = []
    for i, p in enumerate(pts):
        d = (pts[min(i + 1, len(pts) - 1)] - pts[max(i - 1, 0)]).normalized()
        up = Vector((-d.z, 0, d.x))
        if up.z < 0:
            up = -up
        out.append(p + up * radii_up[i] * lift)
    return out


def _equine(ctx, coat, dark, hoof, zebra: bool):
    """Horse and zebra share a skeleton; the zebra is stockier, striped, with an upright mane."""
    mats = (coat, dark)
    if zebra:
        bz, rz, ry, leg_top = 1.0, 0.29, 0.25, 0.95
        base, poll, hd_dir, hlen = (0.42, 0, 1.1), (0.92, 0, 1.46), (0.74, 0, -0.67), 0.5
    else:
        bz, rz, ry, leg_top = 1.2, 0.28, 0.24, 1.12
        base, poll, hd_dir, hlen = (0.42, 0, 1.28), (1.0, 0, 1.76), (0.7, 0, -0.72), 0.56
    back = [(-0.78, 0, bz + 0.03), (-0.7, 0, bz + 0.05), (-0.4, 0, bz + 0.02), (0.1, 0, bz - 0.01), (0.45, 0,
                                                                                                     bz + 0.02),
            (0.62, 0, bz + 0.05), (0.7, 0, bz + 0.07)]
    body = _tube_bm(back, [(0.06, 0.07), (0.2, rz - 0.03), (0.25, rz), (ry, rz - 0.02), (ry - 0.01, rz - 0.01),
                           (0.18, rz - 0.08), (0.05, 0.06)], segs=24, per_span=5)
    # neck: from the withers up to the poll, thick at the base
    npts = _neck_line(base, poll)
    nr_up = [0.25, 0.19, 0.14, 0.11]
    neck = _tube_bm(npts, [(0.17, nr_up[0]), (0.13, nr_up[1]), (0.1, nr_up[2]), (0.085, nr_up[3])],
                    segs=16, per_span=4, ref=(-1, 0, 0))
    # head: a tapering wedge from the poll down-forward to the muzzle
    hd = Vector(hd_dir).normalized()
    p0 = Vector(poll) + Vector((-0.02, 0, 0.02))
    hp = [p0 + hd * (hlen * t) for t in (0.0, 0.15, 0.6, 0.9, 1.0)]
    head = _tube_bm(hp, [(0.08, 0.09), (0.092, 0.105), (0.068, 0.08), (0.06, 0.068), (0.03, 0.035)],
                    segs=16, per_span=4, ref=(1, 0, 1))
    if zebra:
        # bold stripes: vertical on the body, across the neck and face, dark muzzle
        _stripes(body, (1, 0, 0.2), 0.2, 0.45, phase=0.03, keep=lambda c: c.z > bz - rz + 0.04)
        ndir = (Vector(poll) - Vector(base)).normalized()
        _stripes(neck, ndir, 0.12, 0.45)
        _stripes(head, hd, 0.08, 0.45, keep=lambda c: (c - p0).dot(hd) < hlen * 0.62)
        _paint(head, lambda c: 1 if (c - p0).dot(hd) > hlen * 0.72 else None)
    else:
        ndir = None
        _paint(head, lambda c: 1 if (c - p0).dot(hd) > hlen * 0.93 else None)
    ctx.add_bmesh(body, mats)
    ctx.add_bmesh(neck, mats)
    ctx.add_bmesh(head, mats)
    # mane along the crest of the neck (the zebra's stands up and is striped)
    crest = _crest(npts, nr_up, 0.8)
    crest = [crest[0] + Vector((-0.1, 0, -0.02))] + crest + [crest[-1] + hd * 0.08 + Vector((0, 0, 0.02))]
    if zebra:
        mane = _tube_bm(crest, [(0.02, 0.03), (0.03, 0.08), (0.03, 0.09), (0.03, 0.09), (0.025, 0.08), (0.02, 0.04)],
                        segs=10, per_span=3, ref=(-1, 0, 1))
        _stripes(mane, ndir, 0.12, 0.45)
        ctx.add_bmesh(mane, (coat, dark))
    else:
        mane = _tube_bm(crest, [(0.02, 0.02), (0.045, 0.06), (0.05, 0.07), (0.05, 0.07), (0.045, 0.06), (0.03, 0.05)],
                        segs=10, per_span=3, ref=(-1, 0, 1))
        ctx.add_bmesh(mane, dark)
    # ears
    for s in (1, -1):
        r, h = (0.035, 0.15) if not zebra else (0.055, 0.2)
        ear = _cone_bm(p0 + Vector((0.0, s * 0.06, 0.05 + h / 2)), r, 0.0, h, rot=(s * -0.25, 0.15, 0), segs=8)
        ctx.add_bmesh(ear, coat if not zebra else dark)
    _eyes(ctx, ctx.material("eye", (0.02, 0.02, 0.02)), hp[1] + Vector((0.0, 0, 0.02)), 0.025, 0.085)
    # haunches and shoulders: muscle masses where the legs meet the barrel
    for s in (1, -1):
        th = _ellipsoid_bm((-0.5, s * 0.1, bz - 0.06), (0.3, 0.15, 0.3), rot=(0, -0.3, 0), segs=16, rings=8)
        sh = _ellipsoid_bm((0.42, s * 0.1, bz - 0.08), (0.2, 0.14, 0.28), rot=(0, 0.35, 0), segs=16, rings=8)
        if zebra:
            _stripes(th, (0.3, 0, 1), 0.14, 0.45, phase=0.02)
            _stripes(sh, (1, 0, 0.2), 0.2, 0.45, phase=0.03)
        ctx.add_bmesh(th, mats)
        ctx.add_bmesh(sh, mats)
    # legs, in a walking stance so all four show in profile
    for hind, lx in ((False, 0.46), (True, -0.52)):
        for s in (1, -1):
            step = 0.08 * s * (1 if hind else -1)

            def stripe_leg(bm):
                if zebra:
                    _stripes(bm, (0, 0, 1), 0.1, 0.45, index=2, keep=lambda c: c.z > 0.1)
            _leg(ctx, (coat, hoof, dark), (lx + step, s * 0.12, leg_top), leg_top, 0.12, 0.045, hind,
                 hoof_h=0.08, segs=12, bend=0.1, paint=stripe_leg)
    # tail
    if zebra:
        tail = _tube_bm([(-0.76, 0, bz + 0.1), (-0.86, 0, bz - 0.05), (-0.88, 0, bz - 0.4),
                         (-0.88, 0, bz - 0.58)], [0.035, 0.028, 0.03, 0.065], segs=8, per_span=3)
        _paint(tail, lambda c: 1 if c.z < bz - 0.38 else None)
        ctx.add_bmesh(tail, (coat, dark))
    else:
        tail = _tube_bm([(-0.76, 0, bz + 0.12), (-0.9, 0, bz + 0.05), (-0.98, 0, bz - 0.3),
                         (-0.98, 0, bz - 0.75)], [0.05, 0.08, 0.09, 0.05], segs=10, per_span=3)
        ctx.add_bmesh(tail, dark)


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


# ----------------------------------------------------------------------------- cattle, giraffe, elephant

def _blobs(blobs, index: int = 1):
    """A painter: faces inside any of the (centre, radius) spheres get `index`."""
    cs = [(_v(c), r * r) for c, r in blobs]

    def fn(c):
        for b, r2 in cs:
            if (c - b).length_squared < r2:
                return index
        return None
    return fn


# Holstein patches (model frame, the cow's left side is +y): centre, radius; mirrored with variations
_COW_PATCHES = [((-0.45, 0.3, 1.12), 0.22), ((-0.3, 0.3, 1.25), 0.16), ((0.12, 0.32, 0.98), 0.2),
                ((0.2, 0.3, 1.2), 0.14), ((0.55, 0.28, 1.18), 0.13), ((-0.78, 0.2, 0.95), 0.13),
                ((-0.05, 0.0, 1.38), 0.15), ((0.45, 0.0, 1.35), 0.12),
                ((-0.5, -0.3, 1.0), 0.2), ((-0.15, -0.31, 1.2), 0.17), ((0.3, -0.3, 1.05), 0.21),
                ((0.62, -0.22, 1.22), 0.12), ((-0.75, -0.2, 1.2), 0.12)]


@builder("comco.cow")
def cow(ctx):
    white = ctx.material("white", (0.93, 0.92, 0.88))
    black = ctx.material("black", (0.04, 0.04, 0.04))
    pink = ctx.material("pink", (0.92, 0.62, 0.62))
    horn = ctx.material("horn", (0.88, 0.82, 0.66))
    hoof = ctx.material("hoof", (0.12, 0.1, 0.09))
    bz = 1.0
    body = _tube_bm([(-0.85, 0, bz + 0.08), (-0.78, 0, bz + 0.06), (-0.5, 0, bz + 0.02), (0.0, 0, bz - 0.02),
                     (0.45, 0, bz), (0.66, 0, bz + 0.06), (0.74, 0, bz + 0.1)],
                    [(0.08, 0.09), (0.27, 0.3), (0.31, 0.36), (0.33, 0.38), (0.3, 0.37), (0.22, 0.28), (0.06, 0.08)],
                    segs=48, per_span=8)
    _paint(body, _blobs(_COW_PATCHES))
    ctx.add_bmesh(body, (white, black))
    # neck and head, held forward and low
    neck = _tube_bm([(0.5, 0, bz + 0.1), (0.72, 0, bz + 0.16), (0.88, 0, bz + 0.2)],
                    [(0.22, 0.3), (0.17, 0.24), (0.13, 0.17)], segs=16, per_span=3)
    _paint(neck, _blobs([((0.75, 0.0, bz + 0.35), 0.16)]))
    ctx.add_bmesh(neck, (white, black))
    hd = Vector((0.55, 0, -0.83))
    p0 = Vector((0.9, 0, bz + 0.32))
    hp = [p0 + hd * t for t in (0.0, 0.06, 0.28, 0.44, 0.5)]
    head = _tube_bm(hp, [(0.1, 0.1), (0.12, 0.12), (0.1, 0.1), (0.1, 0.09), (0.05, 0.04)], segs=16, per_span=4,
                    ref=(1, 0, 1))
    # black head with a white blaze down the front, pink muzzle
    _paint(head, lambda c: 2 if (c - p0).dot(hd) > 0.4 else (0 if (c - p0).dot(Vector((0.83, 0, 0.55))) > 0.075
                                                               and abs(c.y) < 0.05 else 1))
    ctx.add_bmesh(head, (white, black, pink))
    for s in (1, -1):
        hn = _tube_bm([(0.88, s * 0.07, bz + 0.36), (0.9, s * 0.18, bz + 0.4), (0.93, s * 0.22, bz + 0.5)],
                      [0.035, 0.025, 0.01], segs=8, per_span=3)
        ctx.add_bmesh(hn, horn)
        ear = _ellipsoid_bm((0.84, s * 0.2, bz + 0.3), (0.04, 0.09, 0.03), rot=(s * 0.3, 0, 0), segs=10, rings=5)
        ctx.add_bmesh(ear, black)
    _eyes(ctx, ctx.material("eye", (0.02, 0.02, 0.02)), (0.98, 0, bz + 0.25), 0.025, 0.105)
    # udder and teats
    ctx.add_bmesh(_ellipsoid_bm((-0.4, 0, bz - 0.33), (0.15, 0.13, 0.11), segs=12, rings=6), pink)
    for dx in (-0.07, 0.07):
        for s in (1, -1):
            ctx.add_bmesh(_cone_bm((-0.4 + dx, s * 0.06, bz - 0.45), 0.018, 0.012, 0.08, segs=6), pink)
    # legs with patches on the thighs
    for hind, lx in ((False, 0.48), (True, -0.55)):
        for s in (1, -1):
            step = 0.06 * s * (1 if hind else -1)

            def patch(bm, s=s, hind=hind):
                if (s > 0) == hind:
                    _paint(bm, lambda c: 2 if c.z > 0.55 else None)
            _leg(ctx, (white, hoof, black), (lx + step, s * 0.18, bz - 0.05), bz - 0.05, 0.12, 0.055, hind,
                 hoof_h=0.08, segs=12, bend=0.08, paint=patch)
    tail = _tube_bm([(-0.84, 0, bz + 0.28), (-0.9, 0, bz + 0.1), (-0.9, 0, bz - 0.35), (-0.89, 0, bz - 0.55)],
                    [0.025, 0.02, 0.02, 0.05], segs=8, per_span=3)
    _paint(tail, lambda c: 1 if c.z < bz - 0.38 else None)
    ctx.add_bmesh(tail, (white, black))
    return _finish(ctx)


def _voronoi_painter(seeds, line: float, index: int = 1, keep=None):
    """Giraffe reticulation: faces well inside a Voronoi cell get `index`, the network stays light."""
    tree = KDTree(len(seeds))
    for i, sd in enumerate(seeds):
        tree.insert(sd, i)
    tree.balance()

    def fn(c):
        if keep is not None and not keep(c):
            return None
        (_, _, d0), (_, _, d1) = tree.find_n(c, 2)
        return index if d1 - d0 > line else None
    return fn


def _patches(bm, rng, spacing: float, line: float, index: int = 1, keep=None) -> None:
    """Giraffe patches on one mesh: Voronoi cells of seeds spread over its own surface
    (dart throwing on the face centres, a grid hash for the spacing test)."""
    centres = [f.calc_center_median() for f in bm.faces]
    rng.shuffle(centres)
    grid: dict = {}
    seeds = []
    for c in centres:
        if keep is not None and not keep(c):
            continue
        key = (math.floor(c.x / spacing), math.floor(c.y / spacing), math.floor(c.z / spacing))
        near = (grid.get((key[0] + i, key[1] + j, key[2] + k), ()) for i in (-1, 0, 1) for j in (-1, 0, 1)
                for k in (-1, 0, 1))
        if any((c - sd).length < spacing for cell in near for sd in cell):
            continue
        seeds.append(c)
        grid.setdefault(key, []).append(c)
    if len(seeds) >= 2:
        _paint(bm, _voronoi_painter(seeds, line, index, keep))


@builder("comco.giraffe")
def giraffe(ctx):
    cream = ctx.material("coat", (0.95, 0.84, 0.56))
    brown = ctx.material("patch", (0.6, 0.32, 0.1))
    dark = ctx.material("dark", (0.2, 0.12, 0.06))
    rng = random.Random(11)
    body = _tube_bm([(-0.85, 0, 1.98), (-0.75, 0, 2.0), (-0.4, 0, 2.05), (0.1, 0, 2.14), (0.45, 0, 2.25),
                     (0.6, 0, 2.3), (0.68, 0, 2.33)],
                    [(0.07, 0.07), (0.26, 0.26), (0.31, 0.32), (0.33, 0.36), (0.31, 0.36), (0.23, 0.28), (0.07, 0.07)],
                    segs=48, per_span=10)
    _patches(body, rng, 0.2, 0.035)
    ctx.add_bmesh(body, (cream, brown))
    base, top = Vector((0.42, 0, 2.4)), Vector((0.92, 0, 4.3))
    npts = _neck_line(base, top, 5)
    nr = [(0.18, 0.28), (0.13, 0.19), (0.1, 0.14), (0.085, 0.11), (0.08, 0.1)]
    neck = _tube_bm(npts, nr, segs=28, per_span=12, ref=(-1, 0, 0))
    _patches(neck, rng, 0.14, 0.03)
    ctx.add_bmesh(neck, (cream, brown))
    crest = _crest(npts, [r[1] for r in nr], 0.85)
    mane = _tube_bm(crest, [(0.02, 0.04)] * len(crest), segs=8, per_span=3, ref=(-1, 0, 1))
    ctx.add_bmesh(mane, brown)
    hd = Vector((0.82, 0, -0.57))
    p0 = Vector((0.95, 0, 4.4))
    hp = [p0 + hd * t for t in (0.0, 0.08, 0.35, 0.55, 0.6)]
    head = _tube_bm(hp, [(0.08, 0.09), (0.095, 0.1), (0.075, 0.08), (0.06, 0.06), (0.03, 0.03)], segs=16,
                    per_span=4, ref=(1, 0, 1))
    _paint(head, lambda c: 2 if (c - p0).dot(hd) > 0.52 else None)
    ctx.add_bmesh(head, (cream, brown, dark))
    for s in (1, -1):
        oss = _tube_bm([(0.93, s * 0.05, 4.45), (0.92, s * 0.055, 4.56), (0.91, s * 0.06, 4.63)],
                       [0.022, 0.02, 0.018], segs=8, per_span=2)
        ctx.add_bmesh(oss, cream)
        ctx.add_bmesh(_ellipsoid_bm((0.91, s * 0.06, 4.64), (0.032, 0.032, 0.03), segs=8, rings=4), dark)
        ear = _cone_bm((0.9, s * 0.12, 4.45), 0.03, 0.0, 0.13, rot=(s * 1.2, 0.3, 0), segs=8)
        ctx.add_bmesh(ear, cream)
    _eyes(ctx, ctx.material("eye", (0.02, 0.02, 0.02)), (1.02, 0, 4.4), 0.028, 0.085)
    for hind, lx in ((False, 0.45), (True, -0.6)):
        for s in (1, -1):
            step = 0.09 * s * (1 if hind else -1)
            top_z = 2.15 if not hind else 1.95
            _leg(ctx, (cream, dark, brown), (lx + step, s * 0.18, top_z), top_z, 0.1, 0.04, hind, hoof_h=0.07,
                 segs=12, bend=0.08,
                 paint=lambda bm: _patches(bm, rng, 0.12, 0.025, 2, keep=lambda c: c.z > 1.1))
    tail = _tube_bm([(-0.84, 0, 2.05), (-0.9, 0, 1.8), (-0.92, 0, 1.3), (-0.92, 0, 1.12)],
                    [0.025, 0.018, 0.018, 0.045], segs=8, per_span=3)
    _paint(tail, lambda c: 1 if c.z < 1.3 else None)
    ctx.add_bmesh(tail, (cream, dark))
    return _finish(ctx)


@builder("comco.elephant")
def elephant(ctx):
    grey = ctx.material("skin", (0.5, 0.49, 0.48))
    ear_m = ctx.material("ear", (0.56, 0.53, 0.52))
    ivory = ctx.material("tusk", (0.96, 0.93, 0.84))
    nail = ctx.material("nail", (0.78, 0.75, 0.68))
    bz = 1.95
    body = _tube_bm([(-1.45, 0, bz - 0.05), (-1.35, 0, bz), (-0.9, 0, bz + 0.05), (-0.2, 0, bz + 0.05),
                     (0.5, 0, bz + 0.1), (0.9, 0, bz + 0.15), (1.05, 0, bz + 0.15)],
                    [(0.15, 0.18), (0.55, 0.65), (0.72, 0.82), (0.76, 0.86), (0.7, 0.82), (0.5, 0.62), (0.15, 0.15)],
                    segs=24, per_span=5)
    ctx.add_bmesh(body, grey)
    head = _ellipsoid_bm((1.22, 0, 2.35), (0.52, 0.46, 0.62), rot=(0, 0.25, 0), segs=20, rings=10)
    ctx.add_bmesh(head, grey)
    # big flat ears behind the head
    for s in (1, -1):
        ear = _ellipsoid_bm((0.95, s * 0.52, 2.25), (0.5, 0.07, 0.72), rot=(0, 0.15, s * 0.35), segs=20, rings=10)
        ctx.add_bmesh(ear, ear_m)
    trunk = _tube_bm([(1.55, 0, 2.25), (1.76, 0, 1.8), (1.84, 0, 1.2), (1.85, 0, 0.6), (1.9, 0, 0.3), (2.02, 0, 0.2),
                      (2.1, 0, 0.28)], [0.24, 0.19, 0.15, 0.12, 0.1, 0.085, 0.08], segs=16, per_span=4)
    ctx.add_bmesh(trunk, grey)
    for s in (1, -1):
        tusk = _tube_bm([(1.55, s * 0.24, 1.95), (1.8, s * 0.27, 1.6), (2.05, s * 0.28, 1.52), (2.25, s * 0.26, 1.62)],
                        [0.08, 0.065, 0.045, 0.015], segs=10, per_span=3)
        ctx.add_bmesh(tusk, ivory)
    _eyes(ctx, ctx.material("eye", (0.03, 0.03, 0.03)), (1.48, 0, 2.45), 0.04, 0.33)
    for hind, lx in ((False, 0.6), (True, -0.85)):
        for s in (1, -1):
            step = 0.1 * s * (1 if hind else -1)
            x, y = lx + step, s * 0.42
            leg = _tube_bm([(x, y, 1.75), (x, y, 1.0), (x, y, 0.35), (x, y, 0.08), (x, y, 0.0)],
                           [0.3, 0.27, 0.25, 0.27, 0.27], segs=16, per_span=2, ref=(1, 0, 0))
            ctx.add_bmesh(leg, grey)
            for a in (-0.5, 0.0, 0.5):
                ctx.add_bmesh(_ellipsoid_bm((x + 0.25 * math.cos(a), y + 0.25 * math.sin(a), 0.05), (0.045, 0.05, 0.04),
                                            segs=8, rings=4), nail)
    tail = _tube_bm([(-1.42, 0, 2.3), (-1.55, 0, 2.0), (-1.58, 0, 1.5), (-1.58, 0, 1.3)],
                    [0.05, 0.04, 0.03, 0.05], segs=8, per_span=3)
    ctx.add_bmesh(tail, grey)
    return _finish(ctx)


# ----------------------------------------------------------------------------- sheep, dog, cat, bear

def _fibonacci(n: int):
    out = []
    golden = math.pi * (3 - math.sqrt(5))
    for i in range(n):
        z = 1 - 2 * (i + 0.5) / n
        r = math.sqrt(1 - z * z)
        out.append(Vector((r * math.cos(golden * i), r * math.sin(golden * i), z)))
    return out


@builder("comco.sheep")
def sheep(ctx):
    wool = ctx.material("wool", (0.94, 0.92, 0.85))
    face = ctx.material("face", (0.13, 0.11, 0.1))
    c, rad = Vector((0.0, 0, 0.64)), Vector((0.46, 0.24, 0.25))
    ctx.add_bmesh(_ellipsoid_bm(c, rad, segs=20, rings=10), wool)
    rng = random.Random(5)
    for d in _fibonacci(46):
        if d.z < -0.55:
            continue
        p = c + Vector((d.x * rad.x, d.y * rad.y, d.z * rad.z)) * 0.95
        r = rng.uniform(0.1, 0.13)
        ctx.add_bmesh(_ellipsoid_bm(p, (r, r * 0.85, r * 0.9), segs=10, rings=5), wool)
    # dark head with a woolly poll, ears sticking out sideways
    hd = Vector((0.6, 0, -0.8))
    p0 = Vector((0.5, 0, 0.84))
    hp = [p0 + hd * t for t in (0.0, 0.05, 0.18, 0.26, 0.28)]
    ctx.add_bmesh(_tube_bm(hp, [(0.08, 0.08), (0.085, 0.09), (0.06, 0.07), (0.05, 0.055), (0.025, 0.025)], segs=14,
                           per_span=3, ref=(1, 0, 1)), face)
    ctx.add_bmesh(_ellipsoid_bm((0.47, 0, 0.9), (0.1, 0.1, 0.08), segs=12, rings=6), wool)
    for s in (1, -1):
        ctx.add_bmesh(_ellipsoid_bm((0.5, s * 0.13, 0.84), (0.035, 0.08, 0.02), rot=(s * 0.3, 0, 0), segs=10,
                                    rings=5), face)
    _eyes(ctx, ctx.material("eye", (0.75, 0.65, 0.35)), (0.57, 0, 0.8), 0.016, 0.065)
    for hind, lx in ((False, 0.3), (True, -0.32)):
        for s in (1, -1):
            step = 0.04 * s * (1 if hind else -1)
            _leg(ctx, (face,), (lx + step, s * 0.11, 0.45), 0.45, 0.04, 0.03, hind, segs=10, bend=0.03)
    ctx.add_bmesh(_ellipsoid_bm((-0.52, 0, 0.66), (0.07, 0.06, 0.09), segs=10, rings=5), wool)
    return _finish(ctx)


@builder("comco.dog")
def dog(ctx):
    fur = ctx.material("fur", (0.62, 0.39, 0.18))
    dark = ctx.material("ears", (0.36, 0.2, 0.08))
    black = ctx.material("nose", (0.03, 0.03, 0.03))
    collar = ctx.material("collar", (0.8, 0.1, 0.1))
    bz = 0.42
    body = _tube_bm([(-0.33, 0, bz + 0.02), (-0.29, 0, bz + 0.02), (-0.1, 0, bz), (0.12, 0, bz), (0.24, 0, bz + 0.02),
                     (0.28, 0, bz + 0.04)], [(0.03, 0.03), (0.09, 0.1), (0.1, 0.11), (0.11, 0.13), (0.1, 0.12), (0.03,
                                                                                                                 0.04)],
                    segs=16, per_span=4)
    ctx.add_bmesh(body, fur)
    neck = _tube_bm([(0.18, 0, bz + 0.05), (0.26, 0, bz + 0.13), (0.31, 0, bz + 0.19)], [(0.07, 0.08), (0.06, 0.065),
                                                                                        (0.055,
                                                                                         0.06)], segs=12, per_span=3)
    ctx.add_bmesh(neck, fur)
    ctx.add_bmesh(_ellipsoid_bm((0.28, 0, bz + 0.15), (0.065, 0.068, 0.065), rot=(0, -0.7, 0), segs=12, rings=6), fur)
    col = _tube_bm([(0.225, 0, bz + 0.09), (0.25, 0, bz + 0.115)], [(0.072, 0.075), (0.068, 0.07)], segs=14,
                   per_span=1)
    ctx.add_bmesh(col, collar)
    hc = Vector((0.33, 0, bz + 0.23))
    ctx.add_bmesh(_ellipsoid_bm(hc, (0.075, 0.065, 0.07), segs=14, rings=7), fur)
    snout = _tube_bm([(0.36, 0, bz + 0.22), (0.42, 0, bz + 0.205), (0.47, 0, bz + 0.195), (0.475, 0, bz + 0.195)],
                     [(0.045, 0.045), (0.038, 0.036), (0.032, 0.03), (0.01, 0.01)], segs=12, per_span=3)
    ctx.add_bmesh(snout, fur)
    ctx.add_bmesh(_ellipsoid_bm((0.475, 0, bz + 0.205), (0.018, 0.022, 0.016), segs=8, rings=4), black)
    for s in (1, -1):
        ear = _ellipsoid_bm((0.31, s * 0.065, bz + 0.21), (0.035, 0.014, 0.065), rot=(s * 0.25, 0.2, 0), segs=10,
                            rings=5)
        ctx.add_bmesh(ear, dark)
    _eyes(ctx, black, (0.38, 0, bz + 0.255), 0.012, 0.042)
    for hind, lx in ((False, 0.18), (True, -0.22)):
        for s in (1, -1):
            step = 0.035 * s * (1 if hind else -1)
            top = bz - 0.02
            _leg(ctx, (fur,), (lx + step, s * 0.065, top), top, 0.05 if not hind else 0.06, 0.026, hind, segs=10,
                 bend=0.05 if hind else 0.015)
            ctx.add_bmesh(_ellipsoid_bm((lx + step + 0.02, s * 0.065, 0.015), (0.035, 0.025, 0.018), segs=8,
                                        rings=4), fur)
    tail = _tube_bm([(-0.3, 0, bz + 0.05), (-0.36, 0, bz + 0.1), (-0.4, 0, bz + 0.18), (-0.41, 0, bz + 0.24)],
                    [0.025, 0.022, 0.018, 0.01], segs=8, per_span=3)
    ctx.add_bmesh(tail, fur)
    return _finish(ctx)


@builder("comco.cat")
def cat(ctx):
    fur = ctx.material("fur", (0.93, 0.55, 0.2))
    stripe = ctx.material("tabby", (0.72, 0.34, 0.08))
    pale = ctx.material("muzzle", (0.98, 0.86, 0.7))
    pink = ctx.material("nose", (0.9, 0.5, 0.55))
    eye = ctx.material("eye", (0.25, 0.6, 0.15))
    bz = 0.175
    body = _tube_bm([(-0.17, 0, bz + 0.01), (-0.155, 0, bz + 0.012), (-0.06, 0, bz + 0.005), (0.06, 0, bz + 0.005),
                     (0.12, 0, bz + 0.015), (0.14, 0, bz + 0.02)],
                    [(0.02, 0.02), (0.052, 0.05), (0.056, 0.052), (0.054, 0.052), (0.046, 0.046), (0.02, 0.02)],
                    segs=16, per_span=4)
    _stripes(body, (1, 0, -0.2), 0.042, 0.3, keep=lambda c: c.z > bz - 0.005)
    ctx.add_bmesh(body, (fur, stripe))
    neck = _tube_bm([(0.1, 0, bz + 0.02), (0.14, 0, bz + 0.05), (0.17, 0, bz + 0.07)], [0.038, 0.035, 0.033], segs=12,
                    per_span=2)
    ctx.add_bmesh(neck, fur)
    hc = Vector((0.185, 0, bz + 0.085))
    head = _ellipsoid_bm(hc, (0.054, 0.058, 0.05), segs=14, rings=7)
    _stripes(head, (1, 0, 0), 0.025, 0.35, phase=0.005, keep=lambda c: c.z > hc.z + 0.03)
    ctx.add_bmesh(head, (fur, stripe))
    ctx.add_bmesh(_ellipsoid_bm((0.228, 0, bz + 0.066), (0.024, 0.032, 0.021), segs=10, rings=5), pale)
    ctx.add_bmesh(_ellipsoid_bm((0.25, 0, bz + 0.077), (0.007, 0.01, 0.006), segs=6, rings=3), pink)
    for s in (1, -1):
        ear = _cone_bm((0.18, s * 0.032, bz + 0.138), 0.024, 0.0, 0.055, rot=(s * -0.35, -0.1, 0), segs=4)
        ctx.add_bmesh(ear, fur)
    _eyes(ctx, eye, (0.224, 0, bz + 0.095), 0.01, 0.03)
    for hind, lx in ((False, 0.09), (True, -0.12)):
        for s in (1, -1):
            step = 0.02 * s * (1 if hind else -1)
            top = bz - 0.01
            _leg(ctx, (fur,), (lx + step, s * 0.036, top), top, 0.022 if not hind else 0.028, 0.014, hind, segs=8,
                 bend=0.02 if hind else 0.008)
            ctx.add_bmesh(_ellipsoid_bm((lx + step + 0.008, s * 0.036, 0.008), (0.017, 0.013, 0.009), segs=8,
                                        rings=4), fur)
    # the long tail curls up like a question mark
    tail = _tube_bm([(-0.15, 0, bz + 0.02), (-0.21, 0, bz + 0.03), (-0.25, 0, bz + 0.07), (-0.255, 0, bz + 0.12),
                     (-0.235, 0, bz + 0.15), (-0.212, 0, bz + 0.148)],
                    [0.014, 0.013, 0.013, 0.012, 0.011, 0.009], segs=8, per_span=4)
    _stripes(tail, (1, 0, 1), 0.035, 0.4)
    ctx.add_bmesh(tail, (fur, stripe))
    return _finish(ctx)


@builder("comco.bear")
def bear(ctx):
    fur = ctx.material("fur", (0.36, 0.22, 0.12))
    muzzle = ctx.material("muzzle", (0.6, 0.44, 0.28))
    dark = ctx.material("dark", (0.16, 0.1, 0.06))
    black = ctx.material("nose", (0.03, 0.03, 0.03))
    bz = 0.62
    body = _tube_bm([(-0.85, 0, bz), (-0.78, 0, bz + 0.02), (-0.45, 0, bz + 0.05), (0.05, 0, bz + 0.04),
                     (0.4, 0, bz + 0.06), (0.56, 0, bz + 0.06), (0.62, 0, bz + 0.06)],
                    [(0.1, 0.1), (0.3, 0.3), (0.38, 0.38), (0.4, 0.38), (0.36, 0.38), (0.26, 0.28), (0.08, 0.08)],
                    segs=24, per_span=4)
    ctx.add_bmesh(body, fur)
    ctx.add_bmesh(_ellipsoid_bm((0.28, 0, bz + 0.24), (0.32, 0.26, 0.22), segs=16, rings=8), fur)  # shoulder hump
    neck = _tube_bm([(0.45, 0, bz + 0.1), (0.65, 0, bz + 0.15), (0.76, 0, bz + 0.18)], [0.28, 0.23, 0.2], segs=16,
                    per_span=3)
    ctx.add_bmesh(neck, fur)
    hc = Vector((0.8, 0, bz + 0.2))
    ctx.add_bmesh(_ellipsoid_bm(hc, (0.21, 0.2, 0.19), segs=16, rings=8), fur)
    snout = _tube_bm([(0.88, 0, bz + 0.16), (0.99, 0, bz + 0.13), (1.08, 0, bz + 0.12), (1.095, 0, bz + 0.12)],
                     [(0.1, 0.09), (0.08, 0.075), (0.065, 0.06), (0.02, 0.02)], segs=14, per_span=3)
    ctx.add_bmesh(snout, muzzle)
    ctx.add_bmesh(_ellipsoid_bm((1.09, 0, bz + 0.14), (0.025, 0.04, 0.028), segs=8, rings=4), black)
    for s in (1, -1):
        ctx.add_bmesh(_ellipsoid_bm((0.73, s * 0.14, bz + 0.38), (0.05, 0.075, 0.075), rot=(s * 0.3, 0, 0), segs=10,
                                    rings=5), fur)
        ctx.add_bmesh(_ellipsoid_bm((0.755, s * 0.14, bz + 0.375), (0.02, 0.045, 0.045), rot=(s * 0.3, 0, 0), segs=8,
                                    rings=4), dark)
    _eyes(ctx, black, (0.94, 0, bz + 0.27), 0.022, 0.1)
    for hind, lx in ((False, 0.42), (True, -0.55)):
        for s in (1, -1):
            step = 0.07 * s * (1 if hind else -1)
            top = bz + 0.05
            _leg(ctx, (fur,), (lx + step, s * 0.2, top), top, 0.18 if hind else 0.16, 0.12, hind, segs=14,
                 bend=0.06 if hind else 0.02)
            ctx.add_bmesh(_ellipsoid_bm((lx + step + 0.05, s * 0.2, 0.05), (0.16, 0.12, 0.06), segs=12, rings=6), dark)
    ctx.add_bmesh(_ellipsoid_bm((-0.86, 0, bz + 0.12), (0.06, 0.06, 0.06), segs=8, rings=4), fur)
    return _finish(ctx)


# ----------------------------------------------------------------------------- bird and person

@builder("comco.bird")
def bird(ctx):
    body_m = ctx.material("body", (0.2, 0.42, 0.82), primary=True)
    wing_m = ctx.material("wing", (0.14, 0.3, 0.65), primary=True)
    belly = ctx.material("belly", (0.95, 0.9, 0.78))
    beak = ctx.material("beak", (0.98, 0.65, 0.1))
    black = ctx.material("eye", (0.02, 0.02, 0.02))
    leg_m = ctx.material("legs", (0.55, 0.4, 0.25))
    body = _ellipsoid_bm((0.0, 0, 0.125), (0.085, 0.052, 0.058), rot=(0, -0.45, 0), segs=16, rings=8)
    for f in body.faces:
        if f.normal.z < -0.2 and f.normal.x > -0.3:
            f.material_index = 1
    ctx.add_bmesh(body, (body_m, belly))
    ctx.add_bmesh(_ellipsoid_bm((0.068, 0, 0.19), (0.042, 0.038, 0.04), segs=14, rings=7), body_m)
    ctx.add_bmesh(_cone_bm((0.122, 0, 0.186), 0.013, 0.0, 0.04, rot=(0, math.pi / 2 + 0.15, 0), segs=8), beak)
    _eyes(ctx, black, (0.092, 0, 0.2), 0.008, 0.03)
    for s in (1, -1):
        wing = _ellipsoid_bm((-0.025, s * 0.046, 0.13), (0.08, 0.014, 0.036), rot=(s * 0.12, -0.35, 0), segs=14,
                             rings=7)
        ctx.add_bmesh(wing, wing_m)
        _leg(ctx, (leg_m,), (0.0, s * 0.018, 0.085), 0.085, 0.006, 0.005, False, segs=6, bend=0.01)
        for a in (-0.5, 0.0, 0.5):
            toe = _tube_bm([(0.0, s * 0.018, 0.004), (0.03 * math.cos(a), s * 0.018 + 0.03 * math.sin(a), 0.003)],
                           [0.004, 0.003], segs=6, per_span=1)
            ctx.add_bmesh(toe, leg_m)
    tail = _ellipsoid_bm((-0.125, 0, 0.085), (0.065, 0.03, 0.009), rot=(0, 0.5, 0), segs=12, rings=6)
    ctx.add_bmesh(tail, wing_m)
    return _finish(ctx)


@builder("comco.person")
def person(ctx):
    shirt = ctx.material("shirt", (0.75, 0.2, 0.2), primary=True)
    skin = ctx.material("skin", (0.87, 0.68, 0.55))
    jeans = ctx.material("trousers", (0.18, 0.23, 0.38))
    shoe = ctx.material("shoes", (0.12, 0.1, 0.09))
    hair = ctx.material("hair", (0.2, 0.12, 0.07))
    dark = ctx.material("eyes", (0.05, 0.04, 0.04))
    for s in (1, -1):
        x = s * 0.1
        ctx.add_bmesh(_ellipsoid_bm((x, -0.04, 0.045), (0.055, 0.13, 0.05), segs=12, rings=6), shoe)
        leg = _tube_bm([(x, 0, 0.96), (x * 1.0, 0.0, 0.5), (x, 0.0, 0.07)], [(0.085, 0.09), (0.065, 0.07), (0.052,
                                                                                                            0.057)],
                       segs=14, per_span=3, ref=(0, -1, 0))
        ctx.add_bmesh(leg, jeans)
    ctx.add_bmesh(_ellipsoid_bm((0, 0, 0.95), (0.175, 0.11, 0.1), segs=16, rings=8), jeans)
    torso = _tube_bm([(0, 0, 0.9), (0, 0, 0.98), (0, 0, 1.2), (0, 0, 1.42), (0, 0, 1.47), (0, 0, 1.48)],
                     [(0.165, 0.1), (0.17, 0.105), (0.175, 0.11), (0.2, 0.115), (0.16, 0.09), (0.06, 0.05)],
                     segs=20, per_span=3, ref=(0, -1, 0))
    ctx.add_bmesh(torso, shirt)
    ctx.add_bmesh(_tube_bm([(0, 0, 1.44), (0, 0, 1.57)], [0.05, 0.048], segs=10, per_span=1), skin)
    head = Vector((0, 0.0, 1.645))
    ctx.add_bmesh(_ellipsoid_bm(head, (0.08, 0.095, 0.11), segs=16, rings=8), skin)
    hb = _ellipsoid_bm(head + Vector((0, 0.012, 0.018)), (0.087, 0.1, 0.107), segs=16, rings=8)
    # the hair shell stays closed: its face-side faces take the skin colour
    _paint(hb, lambda c: 1 if c.z < head.z + 0.03 and c.y < -0.03 else None)
    ctx.add_bmesh(hb, (hair, skin))
    for s in (1, -1):
        ctx.add_bmesh(_ellipsoid_bm((s * 0.03, -0.088, head.z + 0.01), (0.011, 0.008, 0.008), segs=8, rings=4), dark)
        sx = s * 0.205
        sleeve = _tube_bm([(sx, 0, 1.43), (s * 0.222, 0, 1.3), (s * 0.228, 0, 1.22)], [0.058, 0.055, 0.05], segs=12,
                          per_span=2)
        ctx.add_bmesh(sleeve, shirt)
        arm = _tube_bm([(s * 0.226, 0, 1.25), (s * 0.232, -0.01, 1.08), (s * 0.236, -0.02, 0.88)], [0.042, 0.037,
                                                                                                    0.032],
                       segs=10, per_span=2)
        ctx.add_bmesh(arm, skin)
        ctx.add_bmesh(_ellipsoid_bm((s * 0.236, -0.02, 0.83), (0.028, 0.04, 0.055), segs=10, rings=5), skin)
    return ctx.finish()
