"""ComCO food and kitchen objects: fruit, vegetables, dishes, cutlery and appliances.

Each builder models the object at roughly its real size (metres) with its front
towards -y; `ctx.finish()` then scales it to the manifest's exact dimensions.
Identifying details (toppings, icing, sprinkles, labels, slots, tines) are geometry
with their own materials, so the Workbench draft preset shows them too.
"""

from __future__ import annotations

import math
import random

import bmesh
from mathutils import Euler, Matrix, Vector

from comco.scenes.outlines import arc, rounded_rect, signed_area
from comco.scenes.parts import skin_rings, smooth_shading
from comco.scenes.registry import builder

TAU = 2 * math.pi


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _metal(ctx, name, rgb, primary=False):
    """A metal material whose Workbench (draft) view stays light: full metallic renders it
    near-black there, so the viewport metallic is lowered (Cycles uses the node values)."""
    mat = ctx.material(name, rgb, primary=primary, look="metal")
    mat.metallic = 0.3
    mat.roughness = 0.3
    return mat


class Batch:
    """Many small primitives of one material in one bmesh (fast for sprinkles, beads, florets)."""

    def __init__(self):
        self.bm = bmesh.new()

    @staticmethod
    def _m(loc, rot, scale):
        return Matrix.Translation(Vector(loc)) @ Euler(rot).to_matrix().to_4x4() @ Matrix.Diagonal((*scale, 1.0))

    def box(self, size, loc, rot=(0, 0, 0)):
        bmesh.ops.create_cube(self.bm, size=1.0, matrix=self._m(loc, rot, size))

    def sphere(self, r, loc, scale=(1, 1, 1), rot=(0, 0, 0), segs=10, rings=6):
        # built vertex by vertex: bmesh.ops.create_uvsphere slows down as the bmesh grows
        M = self._m(loc, rot, scale)
        bm = self.bm
        south = bm.verts.new(M @ Vector((0, 0, -r)))
        north = bm.verts.new(M @ Vector((0, 0, r)))
        grid = []
        for i in range(1, rings):
            th = math.pi * i / rings
            z, rr = -r * math.cos(th), r * math.sin(th)
            grid.append([bm.verts.new(M @ Vector((rr * math.cos(TAU * k / segs), rr * math.sin(TAU * k / segs), z)))
                         for k in range(segs)])
        faces = []
        for k in range(segs):
            k2 = (k + 1) % segs
            faces.append(bm.faces.new((south, grid[0][k2], grid[0][k])))
            faces.append(bm.faces.new((north, grid[-1][k], grid[-1][k2])))
            for i in range(len(grid) - 1):
                faces.append(bm.faces.new((grid[i][k], grid[i][k2], grid[i + 1][k2], grid[i + 1][k])))
        for f in faces:
            f.smooth = True

    def cyl(self, r, depth, loc, rot=(0, 0, 0), segs=12, r_top=None, scale=(1, 1, 1)):
        bmesh.ops.create_cone(self.bm, cap_ends=True, segments=segs, radius1=r,
                              radius2=r if r_top is None else r_top, depth=depth,
                              matrix=self._m(loc, rot, scale))

    def prism(self, outline, z0, z1, loc=(0, 0, 0), rot=(0, 0, 0)):
        M = self._m(loc, rot, (1, 1, 1))
        skin_rings(self.bm, [[M @ Vector((x, y, z)) for x, y in outline] for z in (z0, z1)])

    def emit(self, ctx, mat, name="batch"):
        return ctx.add_bmesh(self.bm, mat, name)


def prism(ctx, outline, z0, z1, mat, loc=(0, 0, 0), rot=(0, 0, 0), name="prism"):
    b = Batch()
    b.prism(outline, z0, z1, loc, rot)
    return b.emit(ctx, mat, name)


def sector(r, a0, a1, n=32, r_in=0.0, noise=None):
    """Outline (ccw) of a pie slice from angle a0 to a1, or of an annular sector when r_in > 0."""
    outer = arc(r, a0, a1, n, noise=noise)
    if r_in <= 0:
        return [(0.0, 0.0)] + outer
    return outer + list(reversed(arc(r_in, a0, a1, n)))


def _offset_poly(poly, dists):
    """Offset each edge i (poly[i] -> poly[i+1]) of a ccw convex polygon outward by dists[i]."""
    n = len(poly)
    lines = []
    for i in range(n):
        p, q = Vector(poly[i]), Vector(poly[(i + 1) % n])
        d = (q - p).normalized()
        nrm = Vector((d.y, -d.x))  # outward for ccw
        lines.append((p + nrm * dists[i], d))
    out = []
    for i in range(n):
        (p1, d1), (p2, d2) = lines[i - 1], lines[i]
        den = d1.x * d2.y - d1.y * d2.x
        t = ((p2.x - p1.x) * d2.y - (p2.y - p1.y) * d2.x) / den
        x = p1 + d1 * t
        out.append((x.x, x.y))
    return out


def _leaf_outline(length, width, n=8):
    """A pointed leaf along +x from the origin (ccw)."""
    top = [(length * i / n, width * math.sin(math.pi * i / n) ** 0.8) for i in range(n + 1)]
    bot = [(length * i / n, -width * math.sin(math.pi * i / n) ** 0.8) for i in range(n - 1, 0, -1)]
    return top + bot


def leaf(ctx, length, width, mat, loc, rot, thick=0.0012, bend=0.3, n=8):
    """A slightly curled leaf: a thin pointed blade along local +x, bent upwards along its length."""
    bm = bmesh.new()
    out = _leaf_outline(length, width, n)
    top = [bm.verts.new((x, y, thick / 2)) for x, y in out]
    bot = [bm.verts.new((x, y, -thick / 2)) for x, y in out]
    bm.faces.new(top)
    bm.faces.new(list(reversed(bot)))
    m = len(out)
    for k in range(m):
        k2 = (k + 1) % m
        bm.faces.new((bot[k], bot[k2], top[k2], top[k]))
    bmesh.ops.triangulate(bm, faces=bm.faces[:])
    for v in bm.verts:
        u = v.co.x / length
        v.co.z += bend * length * u * u  # curl upwards towards the tip
        v.co.z += 0.25 * abs(v.co.y)  # V-shaped midrib
    smooth_shading(bm)
    return ctx.add_bmesh(bm, mat, "leaf", loc, rot)


def strip(ctx, sections, mat, thick, round_end=True, name="strip"):
    """A flat strip along y: sections are (y, half_width, z_centre, [x_centre]); rectangular cross section."""
    rings = []
    t = thick / 2
    for s in sections:
        y, w, z = s[0], s[1], s[2]
        x = s[3] if len(s) > 3 else 0.0
        rings.append([(x - w, y, z - t), (x + w, y, z - t), (x + w, y, z + t), (x - w, y, z + t)])
    return ctx.skin(rings, mat, smooth=True, sharp=50, name=name)


def _rounded_end(y_end, w, z, direction, n=4, x=0.0):
    """Sections that round off a strip's end: direction -1 for the -y end."""
    out = []
    for i in range(n, 0, -1) if direction < 0 else range(1, n + 1):
        a = math.pi / 2 * i / (n + 1)
        out.append((y_end + direction * w * math.sin(a) * 0.9, w * math.cos(a), z, x))
    return out


# --------------------------------------------------------------------------------------
# fruit and vegetables
# --------------------------------------------------------------------------------------
@builder("comco.apple")
def apple(ctx):
    red = ctx.material("skin", (0.78, 0.07, 0.07), look="glossy")
    stem = ctx.material("stem", (0.36, 0.22, 0.09))
    green = ctx.material("leaf", (0.22, 0.55, 0.12))
    prof = [(0.0, 0.007), (0.010, 0.003), (0.02, 0.0), (0.030, 0.006), (0.037, 0.018), (0.041, 0.034),
            (0.042, 0.050), (0.040, 0.064), (0.034, 0.076), (0.025, 0.0835), (0.016, 0.0838),
            (0.008, 0.080), (0.0, 0.074)]
    ctx.revolve(prof, red, segments=28, sharp=None)
    ctx.tube([(0, 0, 0.072), (0.001, 0, 0.084), (0.004, 0, 0.095)], [0.0022, 0.002, 0.0018], stem, sides=6)
    leaf(ctx, 0.032, 0.011, green, (0.003, 0, 0.088), (0.25, 0.0, math.radians(-30)), bend=0.15)
    return ctx.finish()


@builder("comco.orange")
def orange(ctx):
    peel = ctx.material("peel", (0.98, 0.50, 0.04))
    green = ctx.material("calyx", (0.25, 0.45, 0.1))
    leafm = ctx.material("leaf", (0.16, 0.45, 0.1), look="glossy")
    rnd = random.Random(7)
    bm = bmesh.new()
    bmesh.ops.create_icosphere(bm, subdivisions=3, radius=0.04)
    for v in bm.verts:  # dimpled peel, slightly flattened
        k = 1.0 + rnd.uniform(-0.012, 0.012)
        v.co = Vector((v.co.x * k, v.co.y * k, v.co.z * k * 0.94))
    smooth_shading(bm)
    ctx.add_bmesh(bm, peel, "peel", (0, 0, 0.0376))
    star = []
    for i in range(10):
        r = 0.009 if i % 2 == 0 else 0.004
        a = TAU * i / 10
        star.append((r * math.cos(a), r * math.sin(a)))
    prism(ctx, star, 0.0745, 0.0765, green)
    ctx.cylinder(0.0018, 0.006, (0, 0, 0.078), green, segments=6)
    leaf(ctx, 0.034, 0.012, leafm, (0.001, 0.0, 0.078), (0.35, 0.0, math.radians(-140)), bend=0.1)
    return ctx.finish()


@builder("comco.banana")
def banana(ctx):
    yellow = ctx.material("peel", (0.98, 0.84, 0.12))
    brown = ctx.material("tip", (0.30, 0.18, 0.06))
    green = ctx.material("stem", (0.55, 0.62, 0.18))
    n = 16
    pts, radii = [], []
    for i in range(n + 1):
        t = i / n
        x = -0.088 + 0.176 * t
        z = 0.019 + 0.026 * (2 * t - 1) ** 2
        r = 0.019 * (math.sin(math.pi * (0.06 + 0.88 * t)) ** 0.55)
        pts.append((x, 0, z))
        radii.append(max(r, 0.004))
    ctx.tube(pts, radii, yellow, sides=5, ell=(1.0, 1.15), sharp=50)
    # stem end (left): a narrow neck with a cut brown end
    t0 = Vector(pts[0]) - Vector(pts[1])
    p0 = Vector(pts[0])
    neck = [p0 + t0 * 0.2, p0 + t0 * 1.2, p0 + t0 * 2.2 + Vector((0, 0, 0.004))]
    ctx.tube([tuple(p) for p in neck], [0.0046, 0.0042, 0.0042], green, sides=5)
    tip = neck[-1] + (neck[-1] - neck[-2]).normalized() * 0.003
    ctx.tube([tuple(neck[-1]), tuple(tip)], [0.0043, 0.0043], brown, sides=5)
    # blossom end (right): a dark nub
    t1 = (Vector(pts[-1]) - Vector(pts[-2])).normalized()
    p1 = Vector(pts[-1])
    ctx.tube([tuple(p1 - t1 * 0.002), tuple(p1 + t1 * 0.004), tuple(p1 + t1 * 0.006)], [0.0045, 0.0035, 0.0],
         brown, sides=5)
    return ctx.finish()


@builder("comco.carrot")
def carrot(ctx):
    orange_m = ctx.material("root", (0.96, 0.45, 0.05))
    ridge = ctx.material("ridge", (0.80, 0.33, 0.03))
    green = ctx.material("tops", (0.22, 0.58, 0.12))
    n = 14
    y0, y1 = -0.1, 0.045  # tip towards the camera, shoulder at the back
    pts, radii = [], []
    for i in range(n + 1):
        t = i / n
        y = y0 + (y1 - y0) * t
        r = 0.0185 * (t ** 0.75) if i < n else 0.015
        r = max(r, 0.0) if i > 0 else 0.0
        pts.append((0, y, max(r, 0.0015)))
        radii.append(r)
    pts.append((0, y1 + 0.002, 0.0185))
    radii.append(0.0)
    ctx.tube(pts, radii, orange_m, sides=12)
    b = Batch()  # fine ridges across the root
    for t in (0.25, 0.38, 0.52, 0.64, 0.77, 0.88):
        y = y0 + (y1 - y0) * t
        r = 0.0185 * (t ** 0.75)
        b.box((r * 1.3, 0.0012, 0.0012), (0.2 * r, y, r + r * 0.98), (0, 0.4, 0))
    b.emit(ctx, ridge)
    # leafy tops fanning out behind: stalks with small leaflets
    stalks, fronds = Batch(), Batch()
    for k, ang in enumerate((-0.33, -0.15, 0.0, 0.17, 0.34)):
        start = Vector((0, y1, 0.02))
        d = Vector((math.sin(ang), math.cos(ang), 0.12 + 0.1 * (k % 2))).normalized()
        ln = 0.055 + 0.012 * (k % 2)
        q = Vector((0, 0, 1)).rotation_difference(d)
        M = Matrix.Translation(start + d * ln / 2) @ q.to_matrix().to_4x4()
        bmesh.ops.create_cone(stalks.bm, cap_ends=True, segments=6, radius1=0.0018, radius2=0.0012,
                              depth=ln, matrix=M)
        for j in range(4):
            p = start + d * ln * (0.45 + 0.16 * j)
            side = 1 if j % 2 == 0 else -1
            fronds.sphere(0.0045, (p.x + side * 0.004, p.y, p.z), scale=(1.2, 1.6, 0.4), segs=8, rings=4)
    stalks.emit(ctx, green)
    fronds.emit(ctx, green)
    return ctx.finish()


@builder("comco.broccoli")
def broccoli(ctx):
    stalk = ctx.material("stalk", (0.56, 0.72, 0.33))
    head = ctx.material("florets", (0.12, 0.38, 0.10))
    bud = ctx.material("buds", (0.18, 0.48, 0.13))
    rnd = random.Random(3)
    ctx.tube([(0, 0, 0), (0, 0, 0.05), (0, 0, 0.095)], [0.02, 0.018, 0.024], stalk, sides=12)
    centres = [Vector((0, 0, 0.155))]
    for i in range(6):
        a = TAU * i / 6 + 0.3
        centres.append(Vector((0.045 * math.cos(a), 0.045 * math.sin(a), 0.128)))
    heads, buds = Batch(), Batch()
    for c in centres:
        base = Vector((c.x * 0.25, c.y * 0.25, 0.085))
        ctx.tube([tuple(base), tuple(base.lerp(c, 0.5)), tuple(c)], [0.009, 0.008, 0.007], stalk, sides=6)
        rad = 0.032
        heads.sphere(rad, tuple(c), scale=(1, 1, 0.8), segs=12, rings=8)
        up = (c - Vector((0, 0, 0.06))).normalized()
        for j in range(9):
            a = TAU * j / 9 + rnd.uniform(0, 0.5)
            tilt = 0.55 if j % 2 else 0.95
            v = Vector((math.cos(a) * math.sin(tilt), math.sin(a) * math.sin(tilt), math.cos(tilt)))
            v = (v + up * 0.4).normalized()
            p = c + Vector((v.x * rad, v.y * rad, v.z * rad * 0.8))
            buds.sphere(0.011 + rnd.uniform(0, 0.003), tuple(p), segs=8, rings=5)
    heads.emit(ctx, head)
    buds.emit(ctx, bud)
    return ctx.finish()


# --------------------------------------------------------------------------------------
# prepared food
# --------------------------------------------------------------------------------------
@builder("comco.donut")
def donut(ctx):
    dough = ctx.material("dough", (0.78, 0.52, 0.26))
    icing = ctx.material("icing", (0.96, 0.52, 0.68), look="glossy")
    R, r = 0.033, 0.0165
    ctx.torus(R, r, (0, 0, r), dough, segments=36, ring_segments=14)
    # icing: the upper part of a slightly bigger torus, with a wavy drip edge outside
    bm = bmesh.new()
    na, nb = 48, 12
    rows = []
    ri = r * 1.09
    for i in range(na):
        a = TAU * i / na
        lo = math.radians(-18 - 14 * (0.5 + 0.5 * math.sin(5 * a)) - 8 * (0.5 + 0.5 * math.sin(11 * a + 1)))
        hi = math.radians(200)
        radial = Vector((math.cos(a), math.sin(a), 0))
        row = []
        for j in range(nb + 1):
            b = lo + (hi - lo) * j / nb
            up = Vector((0, 0, math.sin(b)))
            p = Vector((R * math.cos(a), R * math.sin(a), r)) + ri * (math.cos(b) * radial + up)
            row.append(bm.verts.new(p))
        rows.append(row)
    for i in range(na):
        r0, r1 = rows[i], rows[(i + 1) % na]
        for j in range(nb):
            bm.faces.new((r0[j], r0[j + 1], r1[j + 1], r1[j]))
    bmesh.ops.recalc_face_normals(bm, faces=bm.faces[:])
    # face normals should point outwards (away from the torus core)
    f0 = bm.faces[0]
    c0 = f0.calc_center_median()
    a0 = math.atan2(c0.y, c0.x)
    core = Vector((R * math.cos(a0), R * math.sin(a0), r))
    if f0.normal.dot(c0 - core) < 0:
        bmesh.ops.reverse_faces(bm, faces=bm.faces[:])
    smooth_shading(bm)
    ctx.add_bmesh(bm, icing, "icing")
    # sprinkles
    rnd = random.Random(11)
    cols = [(0.95, 0.95, 0.95), (0.2, 0.45, 0.95), (0.98, 0.85, 0.1), (0.3, 0.75, 0.25), (0.9, 0.15, 0.15),
            (0.55, 0.25, 0.75)]
    batches = [Batch() for _ in cols]
    for k in range(70):
        a = rnd.uniform(0, TAU)
        b = math.radians(rnd.uniform(20, 160))
        radial = Vector((math.cos(a), math.sin(a), 0))
        up = Vector((0, 0, math.sin(b)))
        p = Vector((R * math.cos(a), R * math.sin(a), r)) + (ri + 0.0008) * (math.cos(b) * radial + up)
        batches[k % len(cols)].box((0.0065, 0.0016, 0.0016), tuple(p), (0, 0, rnd.uniform(0, math.pi)))
    for i, (bt, c) in enumerate(zip(batches, cols)):
        bt.emit(ctx, ctx.material(f"sprinkle{i}", c, look="glossy"))
    return ctx.finish()


@builder("comco.pizza")
def pizza(ctx):
    crust = ctx.material("crust", (0.86, 0.60, 0.28))
    sauce = ctx.material("sauce", (0.78, 0.16, 0.07))
    cheese = ctx.material("cheese", (0.99, 0.84, 0.42))
    pep = ctx.material("pepperoni", (0.62, 0.09, 0.07))
    olive = ctx.material("olive", (0.06, 0.06, 0.06))
    pepper = ctx.material("pepper", (0.18, 0.60, 0.14))
    rnd = random.Random(5)
    # one slice (of eight) missing, towards the camera
    gap0, gap1 = math.radians(-90 - 22.5), math.radians(-90 + 22.5)
    a0, a1 = gap1, gap0 + TAU
    R = 0.15
    prism(ctx, sector(R - 0.004, a0, a1, 56), 0.0, 0.009, crust)
    # raised rim: an arc of a torus, capped
    ctx.torus(R - 0.012, 0.0115, (0, 0, 0.0095), crust, segments=56, ring_segments=10,
              arc=a1 - a0, rotation=(0, 0, a0))
    prism(ctx, sector(R - 0.02, a0 + 0.01, a1 - 0.01, 56), 0.009, 0.0115, sauce)
    def wob(a):
        return 0.004 * math.sin(7 * a) + 0.003 * math.sin(13 * a + 1.0)

    prism(ctx, sector(R - 0.03, a0 + 0.03, a1 - 0.03, 72, noise=wob), 0.0115, 0.0135, cheese)

    def inside(x, y, margin):
        a = math.atan2(y, x)
        rr = math.hypot(x, y)
        da = (a - a0) % TAU
        if da > (a1 - a0):
            return False
        return rr < R - 0.045 and rr * math.sin(min(da, (a1 - a0) - da)) > margin

    pb, ob, gb = Batch(), Batch(), Batch()
    spots = [(0.0, 0.0)]
    for ring, count in ((0.055, 5), (0.092, 8)):
        for i in range(count):
            a = a0 + (a1 - a0) * (i + 0.5) / count + rnd.uniform(-0.1, 0.1)
            spots.append((ring * math.cos(a), ring * math.sin(a)))
    for x, y in spots:
        if inside(x, y, 0.02) or (x, y) == (0.0, 0.0):
            pb.cyl(0.0175, 0.003, (x, y, 0.0148), segs=16)
    for i in range(14):
        for _ in range(30):
            rr = rnd.uniform(0.03, 0.1)
            a = rnd.uniform(a0, a1)
            x, y = rr * math.cos(a), rr * math.sin(a)
            if inside(x, y, 0.008) and all(math.hypot(x - sx, y - sy) > 0.024 for sx, sy in spots):
                break
        if i % 2 == 0:
            ob.cyl(0.0065, 0.004, (x, y, 0.0155), segs=10)
        else:
            gb.box((0.016, 0.0035, 0.003), (x, y, 0.0152), (0, 0, rnd.uniform(0, math.pi)))
        spots.append((x, y))
    pb.emit(ctx, pep)
    ob.emit(ctx, olive)
    gb.emit(ctx, pepper)
    return ctx.finish()


@builder("comco.sandwich")
def sandwich(ctx):
    crumb = ctx.material("bread", (0.98, 0.88, 0.64))
    crust = ctx.material("crust", (0.70, 0.43, 0.17))
    lettuce = ctx.material("lettuce", (0.40, 0.75, 0.18))
    tomato = ctx.material("tomato", (0.85, 0.14, 0.10))
    cheese = ctx.material("cheese", (1.0, 0.80, 0.15))
    ham = ctx.material("ham", (0.93, 0.58, 0.60))
    # an isosceles triangle, the cut (long) side facing the camera
    tri = [(-0.06, -0.035), (0.06, -0.035), (0.0, 0.072)]
    c_out = _offset_poly(tri, [-0.0008, 0.0, 0.0])
    c_in = _offset_poly(tri, [0.0, -0.006, -0.006])

    def bread(z0, z1):
        prism(ctx, c_out, z0, z1, crust)
        prism(ctx, c_in, z0 - 0.0004, z1 + 0.0006, crumb)

    bread(0.0, 0.015)
    # lettuce: wavy, overhanging every side
    lt = _offset_poly(tri, [0.004, 0.006, 0.006])
    wavy = []
    for i in range(3):
        p, q = Vector(lt[i]), Vector(lt[(i + 1) % 3])
        d = q - p
        nrm = Vector((d.y, -d.x)).normalized()
        steps = 14
        for s in range(steps):
            t = s / steps
            w = 0.004 * math.sin(t * steps * math.pi / 1.0) ** 2
            pt = p + d * t + nrm * w
            wavy.append((pt.x, pt.y))
    prism(ctx, wavy, 0.015, 0.019, lettuce)
    b = Batch()
    for x in (-0.036, 0.0, 0.036):
        b.cyl(0.019, 0.005, (x, -0.028, 0.0215), segs=18)
    b.emit(ctx, tomato)
    ch = _offset_poly(tri, [0.003, 0.003, 0.003])
    prism(ctx, ch, 0.024, 0.0265, cheese, loc=(0.0, 0.0, 0), rot=(0, 0, 0.12))
    hm = _offset_poly(tri, [0.0015, 0.0, 0.0])
    prism(ctx, hm, 0.0265, 0.031, ham, rot=(0, 0, -0.07))
    bread(0.031, 0.047)
    return ctx.finish()


@builder("comco.cake")
def cake(ctx):
    sponge = ctx.material("sponge", (0.90, 0.66, 0.32))
    jam = ctx.material("filling", (0.85, 0.20, 0.32))
    icing = ctx.material("icing", (0.97, 0.95, 0.90))
    pink = ctx.material("piping", (0.96, 0.58, 0.72))
    cherry = ctx.material("cherry", (0.80, 0.03, 0.08), look="glossy")
    flame = ctx.material("flame", (1.0, 0.75, 0.1), emission=3.0)
    wick = ctx.material("wick", (0.1, 0.1, 0.1))
    R, H = 0.125, 0.1
    gap = math.radians(50)
    a0, a1 = -math.pi / 2 + gap / 2, -math.pi / 2 - gap / 2 + TAU
    t = 0.006
    prism(ctx, sector(R - t, a0, a1, 48), 0.0, 0.038, sponge)
    prism(ctx, sector(R - t, a0, a1, 48), 0.038, 0.05, jam)
    prism(ctx, sector(R - t, a0, a1, 48), 0.05, 0.088, sponge)
    prism(ctx, sector(R, a0, a1, 48, r_in=R - t), 0.0, H, icing)
    prism(ctx, sector(R, a0, a1, 48), 0.088, H, icing)
    beads, cher = Batch(), Batch()
    n = 26
    for i in range(n + 1):
        a = a0 + (a1 - a0) * i / n
        beads.sphere(0.0075, (0.113 * math.cos(a), 0.113 * math.sin(a), H + 0.003), scale=(1, 1, 0.8), segs=8, rings=5)
        beads.sphere(0.007, ((R + 0.002) * math.cos(a), (R + 0.002) * math.sin(a), 0.006), scale=(1, 1, 0.8),
                     segs=8, rings=5)
    for i in range(5):
        a = a0 + (a1 - a0) * (i + 0.5) / 5
        cher.sphere(0.0095, (0.085 * math.cos(a), 0.085 * math.sin(a), H + 0.012), segs=10, rings=7)
    beads.emit(ctx, pink)
    cher.emit(ctx, cherry)
    cols = [(0.25, 0.5, 0.95), (0.98, 0.85, 0.15), (0.95, 0.45, 0.7)]
    fl, wk = Batch(), Batch()
    for i, (x, y) in enumerate(((-0.03, 0.02), (0.03, 0.025), (0.0, -0.02))):
        cm = ctx.material(f"candle{i}", cols[i], look="glossy")
        ctx.cylinder(0.0055, 0.04, (x, y, H + 0.02), cm, segments=10)
        wk.cyl(0.0009, 0.005, (x, y, H + 0.0425), segs=5)
        fl.sphere(0.0045, (x, y, H + 0.05), scale=(1, 1, 1.8), segs=8, rings=6)
    fl.emit(ctx, flame)
    wk.emit(ctx, wick)
    return ctx.finish()


# --------------------------------------------------------------------------------------
# tableware and cutlery
# --------------------------------------------------------------------------------------
@builder("comco.plate")
def plate(ctx):
    china = ctx.material("china", (0.95, 0.95, 0.93), primary=True, look="glossy")
    band = ctx.material("band", (0.16, 0.30, 0.72), look="glossy")
    R, H = 0.13, 0.025
    slope = [(0.126 - 0.04 * u, H - 0.017 * u ** 0.8) for u in (0.0, 0.12, 0.2, 0.3, 0.45, 0.7, 1.0)]
    prof = [(0.0, 0.003), (0.066, 0.003), (0.068, 0.0), (0.076, 0.0), (0.08, 0.004), (0.11, 0.013),
            (R, 0.021), (R + 0.001, H - 0.001), (R - 0.002, H)] + slope + [(0.0, 0.008)]
    mats = [0] * (len(prof) - 1)
    i0 = 9  # first slope point index
    mats[i0 + 1] = 1  # a blue band just inside the rim
    mats[7] = 1  # and the very edge
    ctx.revolve(prof, [china, band], segments=48, seg_mats=mats, sharp=50)
    return ctx.finish()


@builder("comco.bowl")
def bowl(ctx):
    outer = ctx.material("outside", (0.22, 0.42, 0.78), primary=True, look="glossy")
    inner = ctx.material("inside", (0.96, 0.95, 0.92), look="glossy")
    prof = [(0.0, 0.002), (0.034, 0.002), (0.035, 0.0), (0.04, 0.0), (0.041, 0.008)]
    for i in range(1, 9):
        th = math.pi / 2 * i / 8
        prof.append((0.036 + 0.054 * math.sin(th), 0.008 + 0.072 * (1 - math.cos(th))))
    prof.append((0.0855, 0.0805))
    for i in range(8, -1, -1):
        th = math.pi / 2 * i / 8
        prof.append((0.0305 + 0.054 * math.sin(th) * 0.98, 0.014 + 0.066 * (1 - math.cos(th))))
    prof.append((0.0, 0.014))
    mats = [0] * (len(prof) - 1)
    for i in range(13, len(mats)):
        mats[i] = 1
    ctx.revolve(prof, [outer, inner], segments=40, seg_mats=mats, sharp=60)
    return ctx.finish()


@builder("comco.cup")
def cup(ctx):
    body = ctx.material("body", (0.85, 0.30, 0.20), primary=True, look="glossy")
    inside = ctx.material("inside", (0.96, 0.95, 0.92), look="glossy")
    coffee = ctx.material("coffee", (0.28, 0.15, 0.07), look="glossy")
    R, H = 0.04, 0.1
    prof = [(0.0, 0.0), (R - 0.004, 0.0), (R, 0.004), (R, H - 0.002), (R - 0.0015, H), (R - 0.004, H - 0.0015),
            (R - 0.004, 0.082), (0.0, 0.082)]
    ctx.revolve(prof, [body, inside, coffee], segments=36, seg_mats=[0, 0, 0, 0, 1, 1, 2], sharp=50)
    pts = []
    for i in range(13):
        a = math.radians(-75 + 150 * i / 12)
        pts.append((R - 0.004 + 0.026 * math.cos(a), 0.0, 0.05 + 0.028 * math.sin(a)))
    ctx.tube(pts, 0.0065, body, sides=10, ell=(0.75, 1.2))
    return ctx.finish()


@builder("comco.fork")
def fork(ctx):
    steel = _metal(ctx, "steel", (0.80, 0.81, 0.84))
    th = 0.0024

    def zc(y):  # raised handle end, low neck, slightly raised tines
        if y < 0.0:
            return 0.0025 + 0.011 * (min(-y, 0.1) / 0.1) ** 1.6
        return 0.0025 + 0.004 * (y / 0.095) ** 2

    hand = [(-0.094, 0.0078), (-0.08, 0.0086), (-0.05, 0.0068), (-0.02, 0.0042), (0.0, 0.003), (0.02, 0.0028),
            (0.03, 0.0045), (0.04, 0.008), (0.048, 0.0115), (0.053, 0.0125)]
    secs = _rounded_end(-0.094, 0.0078, zc(-0.094), -1) + [(y, w, zc(y)) for y, w in hand]
    strip(ctx, secs, steel, th)
    tw, gap = 0.0045, 0.0023
    for k in range(4):
        x = (-1.5 + k) * (tw + gap)
        ys = [0.052, 0.065, 0.08, 0.09, 0.095]
        secs = [(y, tw / 2 * (1.0 if y < 0.088 else 0.7 if y < 0.094 else 0.4), zc(y), x) for y in ys]
        strip(ctx, secs, steel, th)
    return ctx.finish()


@builder("comco.spoon")
def spoon(ctx):
    steel = _metal(ctx, "steel", (0.80, 0.81, 0.84))
    th = 0.0024

    def zc(y):
        if y < 0.0:
            return 0.0075 + 0.0105 * (min(-y, 0.09) / 0.09) ** 1.6
        return 0.0075

    hand = [(-0.086, 0.0082), (-0.07, 0.0088), (-0.04, 0.0058), (-0.01, 0.0034), (0.015, 0.003), (0.026, 0.0042)]
    secs = _rounded_end(-0.086, 0.0082, zc(-0.086), -1) + [(y, w, zc(y)) for y, w in hand]
    strip(ctx, secs, steel, th)
    # the bowl: an egg-shaped, concave dish (top surface dips to the centre)
    cy, ry, rx, depth = 0.058, 0.034, 0.0195, 0.0065
    loop = []
    for k in range(32):
        a = TAU * k / 32
        s = math.sin(a)
        loop.append((math.cos(a) * (1.0 + 0.12 * s), s))  # egg shape: wider at the far end
    rings = []
    rings.append((0.0, 0.0, 0.0))
    for u in (0.35, 0.6, 0.8, 0.93, 1.0):
        rings.append((rx * u, ry * u, depth * u * u))
    rings.append((rx * 1.03, ry * 1.02, depth + 0.0016))
    for u in (1.0, 0.93, 0.8, 0.6, 0.35):
        rings.append((rx * u * 0.97, ry * u * 0.97, depth * u * u + 0.0018))
    rings.append((0.0, 0.0, 0.0018))
    ctx.revolve(rings, steel, loop=loop, location=(0, cy, 0.0008), sharp=70)
    return ctx.finish()


@builder("comco.knife")
def knife(ctx):
    steel = _metal(ctx, "blade", (0.82, 0.83, 0.86))
    edge = _metal(ctx, "edge", (0.55, 0.56, 0.60))
    handle = ctx.material("handle", (0.08, 0.07, 0.07), look="plastic")
    rivet = _metal(ctx, "rivet", (0.85, 0.85, 0.88))
    # handle towards the camera, blade pointing away (+y); the blade lies flat
    hz0, hz1 = 0.0, 0.016
    hl = [(-0.105, 0.0085), (-0.095, 0.0098), (-0.06, 0.009), (-0.03, 0.0088), (-0.012, 0.0092)]
    b = Batch()
    bm = bmesh.new()  # a bevelled, lofted grip
    skin_rings(bm, [[(-w, y, hz0 + 0.002), (w, y, hz0 + 0.002), (w * 0.9, y, hz1), (-w * 0.9, y, hz1)]
                    for y, w in hl])
    bmesh.ops.recalc_face_normals(bm, faces=bm.faces[:])
    bmesh.ops.bevel(bm, geom=[e for e in bm.edges], offset=0.0025, segments=2, affect="EDGES")
    smooth_shading(bm, 50)
    ctx.add_bmesh(bm, handle, "handle")
    # bolster
    ctx.box((0.0195, 0.008, 0.012), (0.0, -0.008, 0.009), steel, bevel=0.0015)
    for y in (-0.085, -0.055, -0.028):
        b.cyl(0.0022, 0.0012, (0.0, y, hz1 + 0.0004), segs=10)
    b.emit(ctx, rivet)
    # blade outline (top view): straight spine on +x, the edge curving up to the point
    spine_x, edge_x = 0.0095, -0.0115
    pts = [(spine_x, -0.004)]
    y0, y1 = -0.004, 0.125
    n = 14
    for i in range(n + 1):  # spine, straight then dropping to the point
        t = i / n
        y = y0 + (y1 - y0) * t
        x = spine_x - (0.0 if t < 0.7 else (spine_x - (-0.004)) * ((t - 0.7) / 0.3) ** 1.6)
        pts.append((x, y))
    for i in range(n - 1, -1, -1):  # cutting edge back from the point to the heel
        t = i / n
        y = y0 + (y1 - y0) * t
        x = edge_x + ((-0.004) - edge_x) * (t ** 2.6)
        pts.append((x, y))
    pts = pts[1:]
    if signed_area(pts) < 0:  # make it counter-clockwise
        pts.reverse()
    prism(ctx, pts, 0.0045, 0.0068, steel)
    # a bright bevel along the cutting edge
    ed = []
    for i in range(n + 1):
        t = i / n
        y = y0 + (y1 - y0) * t
        x = edge_x + ((-0.004) - edge_x) * (t ** 2.6)
        ed.append((x, y))
    inner = [(x + 0.0032 * (1 - (i / n) ** 3), y) for i, (x, y) in enumerate(ed)]
    poly = ed + list(reversed(inner))
    if signed_area(poly) < 0:
        poly.reverse()
    prism(ctx, poly, 0.0044, 0.0069, edge)
    return ctx.finish()


@builder("comco.bottle")
def bottle(ctx):
    glass = ctx.material("glass", (0.10, 0.42, 0.16), primary=True, look="glossy")
    label = ctx.material("label", (0.96, 0.93, 0.80))
    stripe = ctx.material("stripe", (0.72, 0.10, 0.10))
    foil = _metal(ctx, "foil", (0.55, 0.06, 0.10))
    prof = [(0.0, 0.0), (0.034, 0.0), (0.037, 0.004), (0.038, 0.012), (0.038, 0.19), (0.036, 0.205),
            (0.03, 0.222), (0.02, 0.238), (0.0145, 0.252), (0.0128, 0.262), (0.0128, 0.288), (0.0145, 0.291),
            (0.0145, 0.297), (0.012, 0.3), (0.0, 0.3)]
    ctx.revolve(prof, glass, segments=32, sharp=50)
    ctx.revolve([(0.0388, 0.055), (0.0388, 0.145)], label, segments=32, cap=False)
    ctx.revolve([(0.0391, 0.118), (0.0391, 0.128)], stripe, segments=32, cap=False)
    ctx.revolve([(0.0391, 0.068), (0.0391, 0.072)], stripe, segments=32, cap=False)
    ctx.revolve([(0.0138, 0.258), (0.0138, 0.292), (0.0155, 0.292), (0.0155, 0.2985), (0.0128, 0.3015),
               (0.0, 0.3015)], foil, segments=24, sharp=50)
    return ctx.finish()


@builder("comco.vase")
def vase(ctx):
    glaze = ctx.material("glaze", (0.14, 0.32, 0.70), primary=True, look="glossy")
    band = ctx.material("band", (0.95, 0.93, 0.85), look="glossy")
    inside = ctx.material("inside", (0.08, 0.16, 0.36))
    stem = ctx.material("stem", (0.18, 0.50, 0.12))
    centre_m = ctx.material("centre", (0.98, 0.80, 0.1))
    prof = [(0.0, 0.0), (0.032, 0.0), (0.04, 0.006), (0.052, 0.025), (0.061, 0.05), (0.064, 0.075),
            (0.0635, 0.085), (0.0615, 0.095), (0.055, 0.118), (0.042, 0.14), (0.03, 0.158), (0.025, 0.172),
            (0.027, 0.186), (0.034, 0.198), (0.036, 0.2), (0.031, 0.2), (0.024, 0.187), (0.0, 0.175)]
    mats = [0] * (len(prof) - 1)
    mats[5] = 1
    mats[6] = 1
    mats[14] = 2
    mats[15] = 2
    mats[16] = 2
    ctx.revolve(prof, [glaze, band, inside], segments=36, seg_mats=mats, sharp=60)
    flowers = [((-0.045, -0.01, 0.255), (0.95, 0.15, 0.18)), ((0.045, -0.005, 0.265), (0.98, 0.9, 0.2)),
               ((0.0, -0.018, 0.295), (0.97, 0.45, 0.7)), ((-0.02, 0.03, 0.275), (0.95, 0.95, 0.95)),
               ((0.025, 0.03, 0.285), (0.6, 0.25, 0.85))]
    centres = Batch()
    for i, (head, col) in enumerate(flowers):
        h = Vector(head)
        base = Vector((h.x * 0.15, h.y * 0.15, 0.15))
        mid = base.lerp(h, 0.55) + Vector((0, 0, 0.012))
        ctx.tube([tuple(base), tuple(mid), tuple(h)], 0.0018, stem, sides=6)
        facing = Vector((h.x * 2.5, h.y * 2 - 0.04, 0.07)).normalized()  # outwards, up and to the camera
        q = Vector((0, 0, 1)).rotation_difference(facing)
        petals = Batch()
        for k in range(7):
            a = TAU * k / 7
            local = Vector((0.011 * math.cos(a), 0.011 * math.sin(a), 0.0))
            p = h + q @ local
            rot = (q.to_matrix().to_4x4() @ Matrix.Rotation(a, 4, "Z")).to_euler()
            petals.sphere(0.0105, tuple(p), scale=(1.0, 0.55, 0.22), rot=tuple(rot), segs=8, rings=5)
        petals.emit(ctx, ctx.material(f"petal{i}", col))
        centres.sphere(0.0055, tuple(h + q @ Vector((0, 0, 0.002))), scale=(1, 1, 0.55), segs=8, rings=5)
    centres.emit(ctx, centre_m)
    for a, h in ((0.8, 0.2), (3.6, 0.19)):
        leaf(ctx, 0.05, 0.011, stem, (0.006 * math.cos(a), 0.006 * math.sin(a), h), (0.0, -0.7, a), bend=0.2)
    return ctx.finish()


# --------------------------------------------------------------------------------------
# appliances
# --------------------------------------------------------------------------------------
@builder("comco.toaster")
def toaster(ctx):
    shell = _metal(ctx, "shell", (0.80, 0.81, 0.83), primary=True)
    black = ctx.material("black", (0.06, 0.06, 0.06), look="plastic")
    slot = ctx.material("slot", (0.02, 0.02, 0.02))
    crumb = ctx.material("toast", (0.90, 0.70, 0.40))
    crust = ctx.material("crust", (0.55, 0.30, 0.10))
    hx, hy, z0, z1 = 0.13, 0.08, 0.008, 0.135
    loop = [(x / hx, y / hy) for x, y in rounded_rect(hx, hy, 0.035, 5)]  # unit half sizes
    rings = [(hx - 0.01, hy - 0.01, z0), (hx - 0.002, hy - 0.002, z0 + 0.004), (hx, hy, z0 + 0.015),
             (hx, hy, z1 - 0.015), (hx - 0.003, hy - 0.003, z1 - 0.004), (hx - 0.012, hy - 0.012, z1)]
    ctx.revolve(rings, shell, loop=loop, sharp=45)
    b = Batch()
    for x in (-0.1, 0.1):
        for y in (-0.055, 0.055):
            b.cyl(0.008, 0.01, (x, y, 0.005), segs=10)
    b.emit(ctx, black)
    sb = Batch()
    ys = (-0.03, 0.03)
    for y in ys:
        sb.box((0.2, 0.022, 0.003), (0.0, y, z1 + 0.0005))
    sb.emit(ctx, slot)
    # two slices of toast popping up
    slice_out = []
    w, hgt = 0.085, 0.115
    slice_out = [(-w, 0.0), (w, 0.0), (w, hgt * 0.72)]
    for i in range(1, 10):
        a = math.pi * i / 10
        slice_out.append((w * math.cos(a) * (1.0 + 0.06 * math.sin(a)), hgt * 0.72 + 0.045 * math.sin(a) +
                          0.006 * math.sin(2 * a) ** 2))
    slice_out.append((-w, hgt * 0.72))

    def shrink(poly, d):
        cx = sum(p[0] for p in poly) / len(poly)
        cz = sum(p[1] for p in poly) / len(poly)
        out = []
        for x, z in poly:
            v = Vector((x - cx, z - cz))
            k = max(v.length - d, 0.0) / max(v.length, 1e-9)
            out.append((cx + v.x * k, cz + v.y * k))
        return out

    inner = shrink(slice_out, 0.007)
    for i, y in enumerate(ys):
        rot = (math.pi / 2, 0, 0)
        zb = 0.074 - 0.006 * i
        prism(ctx, slice_out, -0.0055, 0.0055, crust, loc=(0.0, y, zb), rot=rot)
        prism(ctx, inner, -0.0062, 0.0062, crumb, loc=(0.0, y, zb), rot=rot)
    # lever in a slot on the front-right, and a browning dial on the front-left
    ctx.box((0.008, 0.004, 0.085), (0.095, -hy - 0.001, 0.085), slot)
    ctx.box((0.028, 0.026, 0.012), (0.095, -hy - 0.013, 0.112), black, bevel=0.003)
    ctx.cylinder(0.014, 0.012, (-0.085, -hy - 0.005, 0.075), black, rotation=(math.pi / 2, 0, 0), segments=16)
    ctx.box((0.003, 0.004, 0.012), (-0.085, -hy - 0.012, 0.081), shell)
    return ctx.finish()


@builder("comco.blender")
def blender(ctx):
    base_m = ctx.material("base", (0.12, 0.12, 0.13), primary=True, look="plastic")
    chrome = _metal(ctx, "chrome", (0.80, 0.81, 0.84))
    glass = ctx.material("jar", (0.80, 0.88, 0.92), look="glossy")
    juice = ctx.material("smoothie", (0.92, 0.36, 0.45))
    lid = ctx.material("lid", (0.06, 0.06, 0.06), look="plastic")
    button = ctx.material("button", (0.92, 0.92, 0.92), look="plastic")
    loop = rounded_rect(1.0, 1.0, 0.35)
    ctx.revolve([(0.072, 0.072, 0.0), (0.085, 0.085, 0.004), (0.085, 0.085, 0.02), (0.07, 0.07, 0.115),
               (0.062, 0.062, 0.12)], base_m, loop=loop, sharp=35)
    ctx.revolve([(0.058, 0.058, 0.118), (0.058, 0.058, 0.132)], chrome, loop=loop, sharp=35)
    # jar: lower part filled with smoothie, upper part empty glass
    jar = [(0.05, 0.05, 0.13), (0.055, 0.055, 0.18), (0.06, 0.06, 0.23)]
    jar_top = [(0.06, 0.06, 0.23), (0.066, 0.066, 0.30), (0.072, 0.072, 0.37)]
    ctx.revolve(jar, juice, loop=loop, sharp=35)
    ctx.revolve(jar_top, glass, loop=loop, sharp=35)
    ctx.revolve([(0.075, 0.075, 0.365), (0.075, 0.075, 0.385), (0.07, 0.07, 0.39)], lid, loop=loop, sharp=35)
    ctx.cylinder(0.022, 0.018, (0, 0, 0.397), lid, segments=16)
    # handle on the right
    ctx.tube([(0.058, 0, 0.34), (0.095, 0, 0.33), (0.1, 0, 0.29), (0.09, 0, 0.21), (0.06, 0, 0.19)],
         [0.009, 0.009, 0.009, 0.009, 0.009], lid, sides=8, ell=(0.8, 1.2))
    # measuring marks on the jar
    mk = Batch()
    for i, z in enumerate((0.25, 0.28, 0.31, 0.34)):
        yz = 0.062 + (z - 0.23) / 0.14 * 0.012
        mk.box((0.02 if i % 2 else 0.012, 0.002, 0.0025), (-0.025, -yz - 0.0005, z), (-0.08, 0, 0))
    mk.emit(ctx, lid)
    # control panel: a dial and buttons on the front of the base
    ctx.cylinder(0.017, 0.012, (0.0, -0.08, 0.06), chrome, rotation=(math.pi / 2 - 0.13, 0, 0), segments=18)
    bt = Batch()
    for x in (-0.05, -0.032, 0.032, 0.05):
        bt.box((0.012, 0.01, 0.009), (x, -0.079, 0.065), (-0.13, 0, 0))
    bt.emit(ctx, button)
    return ctx.finish()
