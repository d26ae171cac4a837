"""SimCO: 18 simple shapes, unit-sized, one primary (repaintable) material each.

Flat shapes (heart, moon, cross, snowflake, leaf, arrow, star) stand upright facing
the camera: their outline lies in the x-z plane and their thickness runs along y.
The helpers below add what parts.py lacks: rounded ("puffy") extrusions of an
outline, curved slabs, and smooth shading of the whole object split at sharp edges.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import bmesh
import bpy

from comco.scenes.outlines import arc, signed_area
from comco.scenes.parts import smooth_shading
from comco.scenes.registry import builder

BODY = (0.55, 0.55, 0.55)
SOIL = (0.24, 0.15, 0.08)
TAU = 2 * math.pi


# -- helpers -----------------------------------------------------------------------

def _body(ctx):
    return ctx.material("body", BODY, primary=True)


def _done(ctx, sharp_deg: float = 40.0) -> bpy.types.Object:
    """ctx.finish(), then smooth shading split at edges sharper than `sharp_deg` (0: all flat)."""
    ob = ctx.finish()
    bm = bmesh.new()
    bm.from_mesh(ob.data)
    smooth_shading(bm, sharp_deg, sharp_boundary=True)
    bm.to_mesh(ob.data)
    bm.free()
    return ob


def _seg_dist(p, a, b) -> float:
    ax, ay, bx, by = a[0], a[1], b[0], b[1]
    dx, dy = bx - ax, by - ay
    ll = dx * dx + dy * dy
    t = 0.0 if ll < 1e-18 else max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / ll))
    return math.hypot(p[0] - ax - t * dx, p[1] - ay - t * dy)


def _room(poly: Sequence[Sequence[float]], skip: float) -> list[float]:
    """Per vertex: distance to the nearest part of the outline farther than `skip` along it
    (about the local width of the shape: small near sharp tips and thin arms)."""
    n = len(poly)
    seg = [math.hypot(poly[(i + 1) % n][0] - poly[i][0], poly[(i + 1) % n][1] - poly[i][1]) for i in range(n)]
    total = sum(seg)
    cum = [0.0]
    for L in seg:
        cum.append(cum[-1] + L)
    out = []
    for i in range(n):
        best = float("inf")
        for j in range(n):
            # arc distance from vertex i to segment j (either way round)
            a0, a1 = cum[j], cum[j + 1]
            fwd = min(abs(a0 - cum[i]), abs(a1 - cum[i]))
            if a0 <= cum[i] <= a1:
                fwd = 0.0
            arc = min(fwd, total - max(abs(a0 - cum[i]), abs(a1 - cum[i])))
            if arc <= skip:
                continue
            best = min(best, _seg_dist(poly[i], poly[j], poly[(j + 1) % n]))
        out.append(best)
    return out


def _inset(poly: Sequence[Sequence[float]], d: float, clamp: float = 3.0,
           room: Sequence[float] | None = None) -> list[tuple[float, float]]:
    """Offset a CCW polygon inwards by d (mitred corners, miter length clamped; the
    offset of each vertex is limited to 40 % of its `room`)."""
    n = len(poly)
    out = []
    for i in range(n):
        p0, p1, p2 = poly[i - 1], poly[i], poly[(i + 1) % n]
        normals = []
        for a, b in ((p0, p1), (p1, p2)):
            ex, ey = b[0] - a[0], b[1] - a[1]
            ln = math.hypot(ex, ey) or 1.0
            normals.append((-ey / ln, ex / ln))  # left of the edge = inside for CCW
        mx, my = normals[0][0] + normals[1][0], normals[0][1] + normals[1][1]
        ln = math.hypot(mx, my)
        if ln < 1e-9:
            mx, my, ln = normals[0][0], normals[0][1], 1.0
        mx, my = mx / ln, my / ln
        cos_half = max(mx * normals[0][0] + my * normals[0][1], 1.0 / clamp)
        k = d / cos_half
        if room is not None:
            k = min(k, 0.4 * room[i])
        out.append((p1[0] + mx * k, p1[1] + my * k))
    return out


def _puffy(ctx, outline, thickness: float, mat, rounding: float = 0.0, steps: int = 3,
           upright: bool = True, offset=(0.0, 0.0, 0.0),
           warp: Callable[[float, float, float], tuple] | None = None) -> bpy.types.Object:
    """Extrude a 2-D outline (u, v) by `thickness` with rounded edges of radius `rounding`.

    outline: points, or a function inset -> points (same count) giving the outline shrunk
    by `inset`, for shapes whose mitred inset would fold over (sharp tips, cusps).

    upright: outline in the x-z plane (u = x, v = z), thickness along y, centred on y = 0;
    otherwise outline in the x-y plane, thickness along z from z = 0.
    """
    shape = outline if callable(outline) else None
    poly = [tuple(p) for p in (shape(0.0) if shape else outline)]
    flip = signed_area(poly) < 0
    if flip:
        poly.reverse()
    r = min(rounding, thickness / 2)
    half = thickness / 2
    layers = []  # (inset, w) from front (-w) to back (+w)
    if r > 0:
        for i in range(steps, -1, -1):
            th = (math.pi / 2) * i / steps
            layers.append((r * (1 - math.cos(th)), -half + r * (1 - math.sin(th))))
        for i in range(0, steps + 1):
            th = (math.pi / 2) * i / steps
            layers.append((r * (1 - math.cos(th)), half - r * (1 - math.sin(th))))
    else:
        layers = [(0.0, -half), (0.0, half)]
    room = _room(poly, 2.5 * r) if r > 0 and shape is None else None
    rings = []
    for inset, w in layers:
        if inset <= 1e-9:
            pts = poly
        elif shape is not None:  # the shape knows its own exact inset outline
            pts = list(shape(inset))
            if flip:
                pts.reverse()
        else:
            pts = _inset(poly, inset, room=room)
        ring = []
        for u, v in pts:
            if upright:
                co = (u + offset[0], w + offset[1], v + offset[2])
            else:
                co = (u + offset[0], v + offset[1], w + half + offset[2])
            ring.append(warp(*co) if warp is not None else co)
        rings.append(ring)
    return ctx.skin(rings, mat, name="puffy")


def _slab(ctx, grid, thickness: float, mat):
    """A thin closed sheet from a grid of top-surface points (rows x cols), thickness down z."""
    bm = bmesh.new()
    rows, cols = len(grid), len(grid[0])
    top = [[bm.verts.new(grid[i][j]) for j in range(cols)] for i in range(rows)]
    bot = [[bm.verts.new((grid[i][j][0], grid[i][j][1], grid[i][j][2] - thickness)) for j in range(cols)]
           for i in range(rows)]
    for i in range(rows - 1):
        for j in range(cols - 1):
            bm.faces.new((top[i][j], top[i][j + 1], top[i + 1][j + 1], top[i + 1][j]))
            bm.faces.new((bot[i][j], bot[i + 1][j], bot[i + 1][j + 1], bot[i][j + 1]))
    border = ([(0, j) for j in range(cols)] + [(i, cols - 1) for i in range(1, rows)]
              + [(rows - 1, j) for j in range(cols - 2, -1, -1)] + [(i, 0) for i in range(rows - 2, 0, -1)])
    for k in range(len(border)):
        (i0, j0), (i1, j1) = border[k], border[(k + 1) % len(border)]
        bm.faces.new((top[i0][j0], bot[i0][j0], bot[i1][j1], top[i1][j1]))
    return ctx.add_bmesh(bm, mat, "slab", recalc_normals=True)


# -- solids --------------------------------------------------------------------------

@builder("simco.cube")
def cube(ctx):
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.bevel(bm, geom=bm.edges[:], offset=0.03, segments=3, affect="EDGES", profile=0.5)
    bmesh.ops.translate(bm, verts=bm.verts[:], vec=(0, 0, 0.5))
    ctx.add_bmesh(bm, _body(ctx), "cube", recalc_normals=True)
    return _done(ctx, 35)


@builder("simco.sphere")
def sphere(ctx):
    ctx.sphere(0.5, (0, 0, 0.5), _body(ctx), segments=48, rings=24)
    return _done(ctx, 60)


@builder("simco.cylinder")
def cylinder(ctx):
    ctx.cylinder(0.5, 1.0, (0, 0, 0.5), _body(ctx), segments=64)
    return _done(ctx, 30)


@builder("simco.cone")
def cone(ctx):
    ctx.cone(0.5, 1.0, (0, 0, 0.5), _body(ctx), segments=64)
    return _done(ctx, 30)


@builder("simco.pyramid")
def pyramid(ctx):
    # a square pyramid turned corner-on to the camera, so two differently lit faces show
    ctx.cone(0.5, 0.8, (0, 0, 0.4), _body(ctx), segments=4)
    return _done(ctx, 0)


@builder("simco.torus")
def torus(ctx):
    ctx.torus(0.35, 0.15, (0, 0, 0.15), _body(ctx), segments=48, ring_segments=20)
    return _done(ctx, 60)


@builder("simco.diamond")
def diamond(ctx):
    """A cut gem lying tipped on its pavilion, table tilted away from the camera, so the
    elevated front camera sees the classic side view: a faceted crown over a pointed
    pavilion. Octagonal table, crown of alternating triangles, thin girdle, 16 pavilion facets."""
    from mathutils import Matrix

    bm = bmesh.new()
    n, hc, g, hp = 8, 0.2, 0.04, 0.68

    def ring(r, z, phase=0.0):
        return [bm.verts.new((r * math.cos(phase + TAU * k / n), r * math.sin(phase + TAU * k / n), z))
                for k in range(n)]

    table = ring(0.3, hc + g, TAU / (2 * n))
    gtop = ring(0.5, g)
    gbot = ring(0.5, 0.0)
    mid = ring(0.28, -0.5 * hp, TAU / (2 * n))
    culet = bm.verts.new((0, 0, -hp))
    bm.faces.new(table)
    for k in range(n):
        k1 = (k + 1) % n
        bm.faces.new((gtop[k], gtop[k1], table[k]))  # crown: girdle edge up to a table corner
        bm.faces.new((table[k], gtop[k1], table[k1]))  # table edge down to a girdle corner
        bm.faces.new((gtop[k], gbot[k], gbot[k1], gtop[k1]))
        bm.faces.new((gbot[k1], gbot[k], mid[k]))  # pavilion, upper
        bm.faces.new((mid[k], gbot[k1], mid[k1]))
        bm.faces.new((mid[k1], culet, mid[k]))  # pavilion, lower
    # a corner of the octagons towards the camera, then tip the top away (+y)
    bm.transform(Matrix.Rotation(math.radians(-38), 4, "X") @ Matrix.Rotation(TAU / 16 + TAU / 4, 4, "Z"))
    ctx.add_bmesh(bm, _body(ctx), "gem", recalc_normals=True)
    return _done(ctx, 0)


@builder("simco.pentagon")
def pentagon(ctx):
    """A regular pentagonal prism lying on the ground, one corner pointing away (+y)."""
    outline = [(math.cos(math.pi / 2 + TAU * k / 5), math.sin(math.pi / 2 + TAU * k / 5)) for k in range(5)]
    outline = [(0.5 * x, 0.5 * y) for x, y in outline]
    _puffy(ctx, outline, 0.26, _body(ctx), rounding=0.025, steps=2, upright=False)
    return _done(ctx, 40)


# -- upright flat shapes -------------------------------------------------------------

def _heart_outline(d: float, n: int = 36, k: int = 6) -> list[tuple[float, float]]:
    """A heart: two round lobes, straight flanks to a bottom point, a small fillet in the
    top notch; shrunk by d (lobes and fillet are offset exactly, the point moves up)."""
    rho, a, zc, L, e = 0.27, 0.23, 0.63, 0.63, 0.02
    D = math.hypot(a, L)
    phi = math.atan2(L, a) - math.asin(rho / D)  # direction of the right flank
    tip_z = zc - L + d / math.cos(phi)
    fz = zc + math.sqrt((rho + e) ** 2 - a * a)  # centre of the notch fillet, on x = 0
    th_t = phi - math.pi / 2
    th_f = math.atan2(fz - zc, -a)
    r = rho - d
    pts = [(0.0, tip_z)]
    pts += [(a + r * math.cos(th_t + (th_f - th_t) * i / n), zc + r * math.sin(th_t + (th_f - th_t) * i / n))
            for i in range(n + 1)]
    f0 = th_f - math.pi
    pts += [((e + d) * math.cos(f0 + (-math.pi / 2 - f0) * i / k),
             fz + (e + d) * math.sin(f0 + (-math.pi / 2 - f0) * i / k))
            for i in range(1, k + 1)]
    pts += [(-x, z) for x, z in reversed(pts[1:-1])]
    return pts


@builder("simco.heart")
def heart(ctx):
    _puffy(ctx, _heart_outline, 0.4, _body(ctx), rounding=0.15, steps=4)
    return _done(ctx, 40)


def _moon_outline(d: float) -> list[tuple[float, float]]:
    """A crescent (disc minus an offset disc), tips pointing right, shrunk by d."""
    c = 0.268
    R, r = 0.5 - d, c + 0.25 + d
    x = (R * R - r * r + c * c) / (2 * c)
    z = math.sqrt(max(R * R - x * x, 1e-12))
    a_out = math.atan2(z, x)
    a_in = math.atan2(z, x - c)
    outer = arc(R, a_out, TAU - a_out, 64)
    inner = arc(r, TAU - a_in, a_in, 48, cx=c)
    return outer + inner[1:-1]


@builder("simco.moon")
def moon(ctx):
    _puffy(ctx, _moon_outline, 0.3, _body(ctx), rounding=0.05, steps=3)
    return _done(ctx, 40)


@builder("simco.cross")
def cross(ctx):
    a, b = 1 / 6, 0.5
    pts = [(-a, -b), (a, -b), (a, -a), (b, -a), (b, a), (a, a), (a, b), (-a, b), (-a, a), (-b, a), (-b, -a),
           (-a, -a)]
    _puffy(ctx, pts, 0.3, _body(ctx), rounding=0.05, steps=2)
    return _done(ctx, 40)


@builder("simco.snowflake")
def snowflake(ctx):
    """Six arms with two pairs of side branches, a hexagonal hub; arms up and down."""
    body = _body(ctx)
    hexagon = [(0.13 * math.cos(TAU * k / 6), 0.13 * math.sin(TAU * k / 6)) for k in range(6)]
    _puffy(ctx, hexagon, 0.15, body, rounding=0.02, steps=1)

    def bar(cx, cz, angle, length, width, thick):
        # a box along direction (sin angle, cos angle) in x-z, centred at (cx, cz)
        ctx.box((width, thick, length), (cx, 0, cz), body, rotation=(0, angle, 0))

    for k in range(6):
        a = TAU * k / 6
        dx, dz = math.sin(a), math.cos(a)
        bar(dx * 0.25, dz * 0.25, a, 0.5, 0.075, 0.12)
        # a small diamond at the tip
        ctx.box((0.07, 0.11, 0.07), (dx * 0.47, 0, dz * 0.47), body, rotation=(0, a + math.pi / 4, 0))
        for s, length in ((0.21, 0.16), (0.34, 0.11)):
            for side in (-1, 1):
                b = a + side * math.pi / 3
                ex, ez = math.sin(b), math.cos(b)
                cx, cz = dx * s + ex * length / 2, dz * s + ez * length / 2
                bar(cx, cz, b, length, 0.055, 0.1)
    return _done(ctx, 40)


@builder("simco.leaf")
def leaf(ctx):
    """An ovate leaf standing on its stem, with a raised midrib and side veins, gently curved."""
    body = _body(ctx)
    z0, z1, W = 0.16, 1.0, 0.275
    n = 40

    def half_width(s):
        return W * math.sin(math.pi * s ** 0.8) ** 0.85 * (1 - 0.15 * s)

    right = [(half_width(i / n), z0 + (z1 - z0) * i / n) for i in range(1, n)]
    pts = [(0.0, z0)] + right + [(0.0, z1)] + [(-x, z) for x, z in reversed(right)]

    def warp(x, y, z):  # cup the blade and bend the tip back
        s = (z - z0) / (z1 - z0)
        return (x, y + 0.5 * x * x + 0.06 * max(s, 0) ** 2, z)

    _puffy(ctx, pts, 0.035, body, rounding=0.015, steps=2, warp=warp)
    # stem + midrib
    path, radii = [], []
    for i in range(25):
        z = 0.0 + (0.93 - 0.0) * i / 24
        path.append(warp(0, 0, z))
        radii.append(0.022 if z < z0 else 0.022 - 0.012 * (z - z0) / (0.93 - z0))
    ctx.tube(path, radii, body, sides=10)
    # side veins
    for s in (0.16, 0.32, 0.48, 0.64):
        zs = z0 + (z1 - z0) * s
        reach = 0.8 * half_width(s + 0.08)
        for side in (-1, 1):
            vp = []
            for i in range(8):
                t = i / 7
                x = side * reach * t
                vp.append(warp(x, 0, zs + 0.12 * t ** 1.2))
            ctx.tube(vp, 0.011, body, sides=8)
    return _done(ctx, 40)


@builder("simco.arrow")
def arrow(ctx):
    """A block arrow pointing right (+x)."""
    head_x, h = 0.06, 0.55
    s0, s1 = 0.15, 0.40
    pts = [(-0.5, s0), (head_x, s0), (head_x, 0.0), (0.5, h / 2), (head_x, h), (head_x, s1), (-0.5, s1)]
    _puffy(ctx, pts, 0.3, _body(ctx), rounding=0.05, steps=2)
    return _done(ctx, 40)


@builder("simco.star")
def star(ctx):
    """A five-pointed star, point up, with faceted ridges rising to the centre on both sides."""
    R, r = 0.5, 0.5 * 0.42
    outline = []
    for k in range(10):
        a = math.pi / 2 + math.pi * k / 5
        rad = R if k % 2 == 0 else r
        outline.append((rad * math.cos(a), rad * math.sin(a)))
    bm = bmesh.new()
    rim = 0.05
    front = [bm.verts.new((x, -rim, z)) for x, z in outline]
    back = [bm.verts.new((x, rim, z)) for x, z in outline]
    cf = bm.verts.new((0, -0.15, 0))
    cb = bm.verts.new((0, 0.15, 0))
    for i in range(10):
        j = (i + 1) % 10
        bm.faces.new((front[i], front[j], cf))
        bm.faces.new((back[j], back[i], cb))
        bm.faces.new((front[j], front[i], back[i], back[j]))
    ctx.add_bmesh(bm, _body(ctx), "star", recalc_normals=True)
    return _done(ctx, 0)


# -- everyday things -----------------------------------------------------------------

@builder("simco.mug")
def mug(ctx):
    """A hollow mug (rounded rim, inner floor) with a D-shaped handle on the right (+x)."""
    body = _body(ctx)
    R, H, w = 0.35, 0.85, 0.045
    prof = [(0.0, 0.0), (R - 0.03, 0.0), (R - 0.009, 0.009), (R, 0.03), (R, H - w / 2)]
    prof += arc(w / 2, 0.0, math.pi, 6, R - w / 2, H - w / 2)[1:]
    prof += [(R - w, 0.12), (R - w - 0.025, 0.095), (0.0, 0.095)]
    ctx.revolve(prof, body, segments=48, sharp=None, recalc_normals=True, name="lathe")
    # handle: a rounded D from the upper to the lower body, sticking out ~0.3
    path = []
    for i in range(25):
        t = math.pi * (0.5 - i / 24)  # +90 deg .. -90 deg
        c, s = math.cos(t), math.sin(t)
        x = R - 0.03 + 0.30 * abs(c) ** 0.7
        z = 0.45 + 0.24 * (abs(s) ** 0.8) * (1 if s >= 0 else -1)
        path.append((x, 0.0, z))
    ctx.tube(path, 0.05, body, sides=12)
    return _done(ctx, 40)


@builder("simco.pot")
def pot(ctx):
    """A tapered flower pot with a thick rolled rim, filled with soil."""
    body = _body(ctx)
    soil = ctx.material("soil", SOIL)
    r0, r1, rr, H, band = 0.30, 0.385, 0.45, 0.8, 0.17
    w = 0.04
    prof = [(0.0, 0.0), (r0 - 0.015, 0.0), (r0, 0.015), (r1, H - band - 0.01), (rr - 0.01, H - band),
            (rr, H - band + 0.01), (rr, H - 0.02), (rr - 0.02, H), (rr - w - 0.02, H), (rr - w - 0.03, H - 0.02),
            (r0 - w, 0.07), (0.0, 0.07)]
    ctx.revolve(prof, body, segments=48, sharp=None, recalc_normals=True, name="lathe")
    soil_z = H - 0.09
    soil_r = rr - w - 0.03 - 0.01 - (H - 0.02 - soil_z) * (r1 - r0) / (H - band)
    ctx.cylinder(soil_r, 0.05, (0, 0, soil_z - 0.025), soil, segments=48)
    # a few clods so the soil reads as soil, not as a lid
    for i, (a, d) in enumerate(((0.3, 0.12), (2.0, 0.2), (3.9, 0.15), (5.1, 0.24), (1.2, 0.26), (4.6, 0.05))):
        ctx.sphere(0.035 + 0.008 * (i % 3), (d * math.cos(a), d * math.sin(a), soil_z), soil,
                   scale=(1, 1, 0.55), segments=10, rings=6)
    return _done(ctx, 40)


@builder("simco.cap")
def cap(ctx):
    """A baseball cap: a six-panel dome with a button, and a curved bill facing -y."""
    body = _body(ctx)
    Rx, Ry, Hc, cy = 0.375, 0.35, 0.4, 0.14
    n = 14

    def dome(ph):  # (radius, height) on the crown profile
        return Rx * math.cos(ph) ** 0.75, Hc * math.sin(ph) ** 0.95

    prof = [(0.0, 0.0)] + [dome((math.pi / 2) * i / n) for i in range(n)] + [(0.0, Hc)]
    k = Ry / Rx  # the oval crown
    ctx.revolve([(r, r * k, z) for r, z in prof], body, segments=48, centre=(0, cy, 0), sharp=None,
                recalc_normals=True, name="lathe")
    ctx.sphere(0.04, (0, cy, Hc), body, scale=(1, 1, 0.6), segments=12, rings=6)
    # panel seams: six raised meridians from the button to the band
    for k in range(6):
        a = TAU * k / 6 + TAU / 12
        path = []
        for i in range(n, 0, -1):
            rr, z = dome((math.pi / 2) * i / n)
            rr += 0.004
            path.append((rr * math.cos(a), cy + rr * math.sin(a) * Ry / Rx, z + 0.004))
        ctx.tube(path, 0.008, body, sides=6)
    # sweatband edge round the bottom of the crown
    band = []
    for k in range(48):
        a = TAU * k / 48
        band.append((Rx * math.cos(a), cy + Ry * math.sin(a), 0.012))
    ctx.tube(band, 0.014, body, sides=8, closed=True)
    # bill: a sheet out of the front of the crown, curved down at the sides
    rows, cols = 8, 25
    span = math.radians(64)
    grid = []
    for i in range(rows):
        v = i / (rows - 1)
        row = []
        for j in range(cols):
            u = -1 + 2 * j / (cols - 1)
            ph = u * span
            ix, iy = 0.95 * Rx * math.sin(ph), cy - 0.95 * Ry * math.cos(ph)
            length = 0.36 * math.sqrt(max(1 - (ph / (span * 1.01)) ** 2, 0.0)) + 0.01
            x = ix * (1 - 0.12 * v)
            y = iy - length * v
            z = 0.1 - 0.09 * u * u - 0.03 * v
            row.append((x, y, z))
        grid.append(row)
    _slab(ctx, grid, 0.03, body)
    return _done(ctx, 40)
