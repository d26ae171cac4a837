"""ComCO everyday items: axe, backpack, book, clock, handbag, hat, keyboard, laptop,
mirror, mouse, remote, scissors, shoe, suitcase, tie, toothbrush, tv, umbrella.

Each builder models at roughly real size in metres (front towards -y, resting on
z = 0) and lets `ctx.finish()` scale to the manifest's exact dimensions. Features
that identify an object (keys, clock face, pages, screen picture, umbrella gores)
are geometry with their own materials so the Workbench draft preset shows them.
"""

from __future__ import annotations

import math

import bmesh
from mathutils import Matrix, Vector

from comco.scenes.outlines import at_height, ellipse, rounded_rect, superellipse
from comco.scenes.registry import builder

PI = math.pi


# -- helpers ---------------------------------------------------------------------------
def _mesh(ctx, verts, faces, mat, smooth=False, name="part", recalc=True):
    """One mesh part from raw vertices and faces (indices), added to the builder's parts."""
    bm = bmesh.new()
    vs = [bm.verts.new(v) for v in verts]
    for f in faces:
        try:
            face = bm.faces.new([vs[i] for i in f])
        except ValueError:
            continue
        face.smooth = smooth
    return ctx.add_bmesh(bm, mat, name, recalc_normals=recalc)


def _ring_prism(ctx, outer, inner, depth, mat, location=(0, 0, 0), rotation=(0, 0, 0), smooth=False):
    """A flat ring between two closed 2-D outlines of equal point count, extruded along +z."""
    n = len(outer)
    verts = ([(x, y, 0) for x, y in outer] + [(x, y, 0) for x, y in inner]
             + [(x, y, depth) for x, y in outer] + [(x, y, depth) for x, y in inner])
    o0, i0, o1, i1 = 0, n, 2 * n, 3 * n
    faces = []
    for j in range(n):
        k = (j + 1) % n
        faces += [(o0 + j, i0 + j, i0 + k, o0 + k), (o1 + j, o1 + k, i1 + k, i1 + j),
                  (o0 + j, o0 + k, o1 + k, o1 + j), (i0 + j, i1 + j, i1 + k, i0 + k)]
    ob = _mesh(ctx, verts, faces, mat, smooth=smooth)
    ob.location = location
    ob.rotation_euler = rotation
    return ob


def _plate_xz(ctx, outline, y_center, depth, mat):
    """An outline drawn in the x-z plane (points (x, z)), extruded along y around y_center."""
    return ctx.prism(outline, depth, location=(0, y_center + depth / 2, 0), mat=mat, rotation=(PI / 2, 0, 0))


def _ring_xz(ctx, outer, inner, y_center, depth, mat, smooth=False):
    return _ring_prism(ctx, outer, inner, depth, mat, location=(0, y_center + depth / 2, 0),
                       rotation=(PI / 2, 0, 0), smooth=smooth)


def _tube(ctx, path, radius, mat, segments=8, caps=True, smooth=True, flat=1.0):
    """A round tube along a polyline (parallel-transport frames). `flat` squashes it along the normal.

    Not `Ctx.tube`: its frames start a quarter turn round from that one's (normal = tangent x up,
    the axis `flat` squashes), so the same path gives slightly different vertices."""
    pts = [Vector(p) for p in path]
    tangents = []
    for i in range(len(pts)):
        a, b = pts[max(i - 1, 0)], pts[min(i + 1, len(pts) - 1)]
        tangents.append((b - a).normalized())
    t0 = tangents[0]
    helper = Vector((0, 0, 1)) if abs(t0.z) < 0.9 else Vector((1, 0, 0))
    normal = t0.cross(helper).normalized()
    rings = []
    for i, p in enumerate(pts):
        t = tangents[i]
        normal = (normal - t * normal.dot(t)).normalized()
        binormal = t.cross(normal)
        ring = []
        for j in range(segments):
            a = 2 * PI * j / segments
            ring.append(p + radius * (math.cos(a) * normal * flat + math.sin(a) * binormal))
        rings.append(ring)
    return ctx.skin(rings, mat, cap_start=caps, cap_end=caps, smooth=smooth)


def _boxes(ctx, items, mat, taper=0.0):
    """Many axis-aligned boxes as one mesh part: items are (centre, size); taper shrinks the top."""
    verts, faces = [], []
    for c, s in items:
        cx, cy, cz = c
        sx, sy, sz = s[0] / 2, s[1] / 2, s[2] / 2
        tx, ty = max(sx - taper, sx * 0.3), max(sy - taper, sy * 0.3)
        b = len(verts)
        verts += [(cx - sx, cy - sy, cz - sz), (cx + sx, cy - sy, cz - sz), (cx + sx, cy + sy, cz - sz),
                  (cx - sx, cy + sy, cz - sz), (cx - tx, cy - ty, cz + sz), (cx + tx, cy - ty, cz + sz),
                  (cx + tx, cy + ty, cz + sz), (cx - tx, cy + ty, cz + sz)]
        faces += [(b, b + 3, b + 2, b + 1), (b + 4, b + 5, b + 6, b + 7), (b, b + 1, b + 5, b + 4),
                  (b + 1, b + 2, b + 6, b + 5), (b + 2, b + 3, b + 7, b + 6), (b + 3, b, b + 4, b + 7)]
    return _mesh(ctx, verts, faces, mat, recalc=False)


def _clip_convex(poly, clip):
    """Sutherland-Hodgman: polygon `poly` clipped by convex CCW polygon `clip` (2-D points)."""
    out = list(poly)
    for i in range(len(clip)):
        a, b = clip[i], clip[(i + 1) % len(clip)]
        inp, out = out, []
        if not inp:
            break

        def side(p, a=a, b=b):  # this edge's line
            return (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])

        for j in range(len(inp)):
            p, q = inp[j], inp[(j + 1) % len(inp)]
            sp, sq = side(p), side(q)
            if sp >= 0:
                out.append(p)
            if (sp >= 0) != (sq >= 0):
                t = sp / (sp - sq)
                out.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
    return out


def _arch_ring(w, h, y, count=12, z0=0.0, n=2.6):
    """A closed section in the x-z plane at depth y: a superelliptic arch over a flat bottom."""
    pts = []
    for i in range(count + 1):
        a = PI * i / count
        c, s = math.cos(a), math.sin(a)
        x = w / 2 * math.copysign(abs(c) ** (2 / n), c)
        z = z0 + h * abs(s) ** (2 / n)
        pts.append((x, y, z))
    return pts


# -- axe --------------------------------------------------------------------------------
@builder("comco.axe")
def axe(ctx):
    wood = ctx.material("handle", (0.62, 0.38, 0.17))
    steel = ctx.material("head", (0.42, 0.43, 0.46), look="plastic")
    edge = ctx.material("edge", (0.9, 0.91, 0.93), look="plastic")
    grip = ctx.material("grip", (0.12, 0.08, 0.05))
    h = ctx.cylinder(0.017, 0.86, (0, 0, 0.43), wood, segments=12, radius_top=0.015)
    h.scale = (1.0, 1.35, 1.0)
    ctx.cylinder(0.021, 0.03, (0, 0, 0.015), wood, segments=12).scale = (1.0, 1.3, 1.0)  # knob
    ctx.cylinder(0.019, 0.16, (0, 0, 0.13), grip, segments=12).scale = (1.0, 1.3, 1.0)  # grip wrap
    edge_pts = [(0.195 + 0.03 * math.sin(PI * t), 0.705 + 0.205 * t) for t in [i / 8 for i in range(9)]]
    outline = [(-0.075, 0.795), (0.035, 0.795), (0.09, 0.78), (0.15, 0.74)]
    outline += edge_pts
    outline += [(0.13, 0.885), (0.07, 0.872), (0.035, 0.872), (-0.075, 0.872)]
    head = _plate_xz(ctx, outline, 0.0, 0.044, steel)
    for v in head.data.vertices:  # taper towards the cutting edge (local y is world z here)
        x = v.co.x
        k = 1.0 if x < 0.05 else max(0.18, 1.0 - 0.82 * (x - 0.05) / 0.17)
        v.co.z = 0.022 + (v.co.z - 0.022) * k
    band = [(x + 0.0015, z) for x, z in edge_pts] + [(x - 0.03, z) for x, z in reversed(edge_pts)]
    _plate_xz(ctx, band, 0.0, 0.017, edge)  # the ground edge, a bright band along the bit
    return ctx.finish()


# -- backpack ---------------------------------------------------------------------------
@builder("comco.backpack")
def backpack(ctx):
    body = ctx.material("body", (0.16, 0.32, 0.62), primary=True)
    trim = ctx.material("trim", (0.06, 0.06, 0.07))
    zip_m = ctx.material("zipper", (0.75, 0.75, 0.78), look="metal")
    W, D = 0.30, 0.13
    rings = []
    for z, k in [(0.0, 0.93), (0.02, 1.0), (0.2, 1.0), (0.36, 0.99), (0.40, 0.94), (0.43, 0.84),
                 (0.455, 0.68), (0.47, 0.46), (0.476, 0.2)]:
        rings.append(at_height(superellipse(W / 2 * k, D / 2 * min(1.0, 0.55 + 0.45 * k), 3.2, 28), z))
    ctx.skin(rings, body, smooth=True)
    # front pocket
    pr = []
    for z, k in [(0.05, 0.92), (0.06, 1.0), (0.2, 1.0), (0.225, 0.93), (0.24, 0.75)]:
        pr.append(at_height(superellipse(0.115 * k, 0.022, 3.0, 20, cy=-D / 2 - 0.005), z))
    ctx.skin(pr, body, smooth=True)
    # pocket zipper and main zipper
    _tube(ctx, [(0.11 * math.cos(a), -D / 2 - 0.02 - 0.008 * math.sin(a), 0.205 + 0.025 * math.sin(a))
                for a in [PI * i / 12 for i in range(13)]], 0.0035, trim, segments=6)
    zpath = []
    for i in range(17):
        a = PI * i / 16
        zpath.append((0.146 * math.cos(a), -0.045, 0.30 + 0.165 * math.sin(a)))
    _tube(ctx, zpath, 0.004, trim, segments=6)
    ctx.box((0.012, 0.01, 0.03), (0.03, -D / 2 - 0.034, 0.212), zip_m)  # pull tabs
    ctx.box((0.012, 0.012, 0.03), (0.125, -0.06, 0.42), zip_m, rotation=(0, 0.6, 0))
    # top grab handle
    _tube(ctx, [(0.035 * math.cos(a) * 1.0, 0.015, 0.47 + 0.03 * math.sin(a))
                for a in [PI * i / 10 for i in range(11)]], 0.006, trim, segments=6)
    # shoulder straps on the back, bulging out; visible at the top and sides
    for s in (-1, 1):
        path = []
        for i in range(13):
            t = i / 12
            x = s * (0.055 + 0.075 * t)
            z = 0.44 - 0.40 * t
            y = D / 2 + 0.005 + 0.045 * math.sin(PI * min(1.0, t * 1.1))
            path.append((x, y, z))
        _tube(ctx, path, 0.014, trim, segments=8, flat=0.35)
        ctx.box((0.03, 0.01, 0.025), (s * 0.13, D / 2 + 0.01, 0.045), trim)
    # side compression straps
    for s in (-1, 1):
        ctx.box((0.012, 0.10, 0.02), (s * W / 2, 0.0, 0.18), trim)
    return ctx.finish()


# -- book -------------------------------------------------------------------------------
@builder("comco.book")
def book(ctx):
    cover = ctx.material("cover", (0.55, 0.1, 0.12), primary=True)
    pages = ctx.material("pages", (0.96, 0.95, 0.9))
    lines = ctx.material("page_lines", (0.72, 0.70, 0.64))
    gold = ctx.material("title", (0.9, 0.75, 0.3), look="metal")
    W, D, H, t = 0.17, 0.24, 0.05, 0.0045
    ctx.box((W, D, t), (0, 0, t / 2), cover)
    ctx.box((W, D, t), (0, 0, H - t / 2), cover)
    sp = ctx.cylinder(H / 2, D, (-W / 2 + 0.004, 0, H / 2), cover, rotation=(PI / 2, 0, 0), segments=16)
    sp.scale = (0.32, 1.0, 1.0)
    pw, pd = W - 0.01, D - 0.01
    ctx.box((pw, pd, H - 2 * t), (-W / 2 + 0.004 + pw / 2, 0, H / 2), pages)
    # page-edge lines on the three open sides
    items = []
    for k in range(1, 6):
        z = t + (H - 2 * t) * k / 6
        items.append(((-W / 2 + 0.004 + pw / 2, -pd / 2 - 0.0004, z), (pw - 0.004, 0.001, 0.0009)))
        items.append(((-W / 2 + 0.004 + pw + 0.0004, 0, z), (0.001, pd - 0.004, 0.0009)))
    _boxes(ctx, items, lines)
    # title panel and bands on the cover
    ctx.box((0.09, 0.05, 0.0012), (0.01, 0.04, H + 0.0006), gold)
    ctx.box((0.11, 0.006, 0.0012), (0.01, -0.02, H + 0.0006), gold)
    ctx.box((0.11, 0.006, 0.0012), (0.01, 0.09, H + 0.0006), gold)
    return ctx.finish()


# -- clock ------------------------------------------------------------------------------
_SEG = {"1": "bc", "2": "abged", "3": "abgcd", "6": "afgedc", "9": "abcdfg"}


def _digit_boxes(ch, cx, cz, y, w=0.016, h=0.03, s=0.0042):
    out = []
    segs = {"a": ((cx, cz + h / 2), (w, s)), "d": ((cx, cz - h / 2), (w, s)), "g": ((cx, cz), (w, s)),
            "b": ((cx + w / 2, cz + h / 4), (s, h / 2 + s)), "c": ((cx + w / 2, cz - h / 4), (s, h / 2 + s)),
            "f": ((cx - w / 2, cz + h / 4), (s, h / 2 + s)), "e": ((cx - w / 2, cz - h / 4), (s, h / 2 + s))}
    for seg in _SEG[ch]:
        (x, z), (sx, sz) = segs[seg]
        out.append(((x, y, z), (sx, 0.002, sz)))
    return out


@builder("comco.clock")
def clock(ctx):
    rim_m = ctx.material("rim", (0.1, 0.1, 0.11), primary=True)
    face = ctx.material("face", (0.97, 0.97, 0.95))
    ink = ctx.material("ink", (0.05, 0.05, 0.05))
    red = ctx.material("second", (0.85, 0.1, 0.08))
    R, zc = 0.175, 0.175
    ctx.cylinder(R - 0.012, 0.045, (0, 0.005, zc), face, rotation=(PI / 2, 0, 0), segments=48)
    ctx.torus(R - 0.014, 0.014, (0, -0.012, zc), rim_m, rotation=(PI / 2, 0, 0), segments=48, ring_segments=10)
    ctx.cylinder(R - 0.004, 0.035, (0, 0.012, zc), rim_m, rotation=(PI / 2, 0, 0), segments=48)  # case back
    yf = -0.0185  # face front
    items = []
    for i in range(60):
        a = 2 * PI * i / 60
        major = i % 5 == 0
        r = 0.136 if major else 0.142
        ln, wd = (0.022, 0.0055) if major else (0.008, 0.0018)
        x, z = r * math.sin(a), zc + r * math.cos(a)
        items.append((a, (x, yf - 0.001, z), (wd, 0.002, ln)))
    ticks = _mesh(ctx, [], [], ink)
    ticks_bm = bmesh.new()
    for a, c, s in items:
        geom = bmesh.ops.create_cube(ticks_bm, size=1.0)
        vs = geom["verts"]
        bmesh.ops.scale(ticks_bm, vec=s, verts=vs)
        bmesh.ops.rotate(ticks_bm, verts=vs, cent=(0, 0, 0),
                         matrix=Matrix.Rotation(a, 3, "Y"))
        bmesh.ops.translate(ticks_bm, verts=vs, vec=c)
    ticks_bm.to_mesh(ticks.data)
    ticks_bm.free()
    nums = []
    r = 0.098
    nums += _digit_boxes("1", -0.013, zc + r, yf - 0.001)
    nums += _digit_boxes("2", 0.009, zc + r, yf - 0.001)
    nums += _digit_boxes("3", r + 0.004, zc, yf - 0.001)
    nums += _digit_boxes("6", 0.0, zc - r, yf - 0.001)
    nums += _digit_boxes("9", -r - 0.004, zc, yf - 0.001)
    _boxes(ctx, nums, ink)
    # hands at 10:10: hour points to ~10, minute to 2
    def hand(length, width, angle, mat, y, tail=0.02):
        pts = [(-width / 2, -tail), (width / 2, -tail), (width / 2, length * 0.8), (0, length),
               (-width / 2, length * 0.8)]
        ob = ctx.prism(pts, 0.002, location=(0, y, zc), mat=mat, rotation=(PI / 2, -angle, 0))
        return ob

    hand(0.085, 0.011, math.radians(-60), ink, yf - 0.003)
    hand(0.125, 0.008, math.radians(60), ink, yf - 0.005)
    hand(0.13, 0.0025, math.radians(170), red, yf - 0.007, tail=0.03)
    ctx.cylinder(0.008, 0.006, (0, yf - 0.006, zc), ink, rotation=(PI / 2, 0, 0), segments=16)
    # little feet
    for s in (-1, 1):
        ctx.box((0.035, 0.05, 0.03), (s * 0.075, 0.005, 0.015), rim_m, bevel=0.004, profile=0.5)
    return ctx.finish()


# -- handbag ----------------------------------------------------------------------------
@builder("comco.handbag")
def handbag(ctx):
    leather = ctx.material("leather", (0.62, 0.16, 0.12), primary=True)
    dark = ctx.material("trim", (0.2, 0.07, 0.05))
    gold = ctx.material("clasp", (0.92, 0.74, 0.3), look="metal")
    rings = []
    for z, w, d in [(0.0, 0.30, 0.12), (0.01, 0.32, 0.13), (0.08, 0.31, 0.125), (0.2, 0.27, 0.09),
                    (0.215, 0.262, 0.07), (0.222, 0.24, 0.04)]:
        rings.append(at_height(superellipse(w / 2, d / 2, 3.4, 28), z))
    ctx.skin(rings, leather, smooth=True)
    # front flap on the slanted front face: an outline with a rounded lower edge, tilted with the face
    slope = math.atan2(0.13 / 2 - 0.09 / 2, 0.2 - 0.01)
    outline = [(0.13, 0.0), (0.13, -0.11)]
    outline += [(0.13 * math.cos(PI * i / 8), -0.11 - 0.03 * math.sin(PI * i / 8)) for i in range(1, 8)]
    outline += [(-0.13, -0.11), (-0.13, 0.0)]
    flap = _plate_xz(ctx, outline, 0.0, 0.006, dark)
    flap.rotation_euler = (PI / 2 - slope, 0, 0)
    flap.location = (0, -0.044, 0.205)
    ctx.box((0.03, 0.012, 0.022), (0, -0.064, 0.08), gold, bevel=0.003, profile=0.5)
    # two handles (front and back)
    for y in (-0.022, 0.022):
        path = []
        for i in range(17):
            a = PI * i / 16
            path.append((0.085 * math.cos(a), y, 0.205 + 0.135 * math.sin(a) ** 0.9))
        _tube(ctx, path, 0.008, dark, segments=8)
        for s in (-1, 1):
            ctx.torus(0.012, 0.003, (s * 0.085, y, 0.215), gold, rotation=(PI / 2, 0, 0), segments=12,
                      ring_segments=6)
    # seam piping along the top rim
    _tube(ctx, at_height(superellipse(0.135, 0.045, 3.4, 28), 0.2) + [(0.135, 0.0, 0.2)], 0.003,
          dark, segments=5)
    return ctx.finish()


# -- hat --------------------------------------------------------------------------------
@builder("comco.hat")
def hat(ctx):
    felt = ctx.material("felt", (0.08, 0.08, 0.09), primary=True)
    band = ctx.material("band", (0.55, 0.08, 0.1))
    n = 40

    def curl(theta, r):
        u = max(0.0, (r - 0.095) / 0.065)
        return 0.028 * u * u * math.cos(theta) ** 2

    rings = []
    for r, dz in [(0.09, 0.0), (0.16, 0.0), (0.16, 0.006), (0.09, 0.008)]:
        ring = []
        for i in range(n):
            th = 2 * PI * i / n
            ring.append((r * math.cos(th), r * 1.0 * math.sin(th), dz + curl(th, r)))
        rings.append(ring)
    ctx.skin(rings, felt, closed=True, smooth=True)
    # crown: oval, slightly flared towards the top
    crown = []
    for z, k in [(0.004, 1.0), (0.1, 1.03), (0.17, 1.08), (0.178, 1.04), (0.18, 0.6)]:
        crown.append(at_height(ellipse(0.078 * k, 0.092 * k, n), z))
    ctx.skin(crown, felt, smooth=True)
    br = []
    for z, k in [(0.01, 1.025), (0.045, 1.045)]:
        br.append(at_height(ellipse(0.078 * k, 0.092 * k, n), z))
    ctx.skin(br, band, smooth=True)
    return ctx.finish()


# -- keyboard ---------------------------------------------------------------------------
@builder("comco.keyboard")
def keyboard(ctx):
    case = ctx.material("case", (0.05, 0.05, 0.055), look="plastic")
    keys_m = ctx.material("keys", (0.22, 0.22, 0.24), look="plastic")
    light = ctx.material("leds", (0.3, 0.9, 0.4), emission=2.0)
    u = 0.0178
    gap = 0.0028
    x0 = -0.44 / 2 + 0.013
    y_top = 0.14 / 2 - 0.012
    ctx.box((0.44, 0.14, 0.02), (0, 0, 0.01), case, bevel=0.006, profile=0.5)
    keys = []

    def key(col, row, w=1.0, h=1.0, block_x=0.0, drow=0.0):
        cx = x0 + (block_x + col + w / 2) * u
        cy = y_top - (row + drow + h / 2) * u - (0.25 * u if row >= 1 else 0)
        keys.append(((cx, cy, 0.0235), (w * u - gap, h * u - gap, 0.007)))

    def row(r, widths, start=0.0):
        c = start
        for w in widths:
            if w > 0:
                key(c, r, w)
            c += abs(w)

    row(0, [1, -1, 1, 1, 1, 1, -0.5, 1, 1, 1, 1, -0.5, 1, 1, 1, 1])
    row(1, [1] * 13 + [2])
    row(2, [1.5] + [1] * 12 + [1.5])
    row(3, [1.75] + [1] * 11 + [2.25])
    row(4, [2.25] + [1] * 10 + [2.75])
    row(5, [1.25, 1.25, 1.25, 6.25, 1.25, 1.25, 1.25, 1.25])
    nx = 15.5
    row(0, [1, 1, 1], nx)
    row(1, [1, 1, 1], nx)
    row(2, [1, 1, 1], nx)
    key(1, 4, block_x=nx)
    row(5, [1, 1, 1], nx)
    px = 19.0
    row(1, [1, 1, 1, 1], px)
    row(2, [1, 1, 1], px)
    row(3, [1, 1, 1], px)
    row(4, [1, 1, 1], px)
    row(5, [2, 1], px)
    key(3, 2, 1, 2, block_x=px)
    key(3, 4, 1, 2, block_x=px)
    _boxes(ctx, keys, keys_m, taper=0.0012)
    for i in range(3):
        ctx.box((0.004, 0.003, 0.001), (x0 + (px + 0.7 + i * 1.1) * u, y_top - 0.5 * u, 0.0205), light)
    return ctx.finish()


# -- laptop -----------------------------------------------------------------------------
@builder("comco.laptop")
def laptop(ctx):
    shell = ctx.material("shell", (0.68, 0.69, 0.72), look="metal")
    keys_m = ctx.material("keys", (0.07, 0.07, 0.08))
    pad = ctx.material("touchpad", (0.55, 0.56, 0.59))
    bezel = ctx.material("bezel", (0.04, 0.04, 0.05), look="glossy")
    sky = ctx.material("screen", (0.16, 0.45, 0.9), emission=1.2)
    win = ctx.material("window", (0.95, 0.96, 0.98), emission=1.2)
    bar = ctx.material("titlebar", (0.25, 0.25, 0.3), emission=1.0)
    dock = ctx.material("dock", (0.95, 0.7, 0.15), emission=1.2)
    W, Db, Hb = 0.34, 0.215, 0.016
    ctx.box((W, Db, Hb), (0, -0.0, Hb / 2), shell, bevel=0.004, profile=0.5)
    # keys
    u = 0.0185
    keys = []
    y_top = Db / 2 - 0.022
    for r in range(6):
        n = 14 if r < 5 else 10
        if r == 5:
            widths = [1, 1, 1, 1, 5.4, 1, 1, 1, 1]
        else:
            widths = [1] * n
        tot = sum(widths)
        x = -tot * u / 2
        for w in widths:
            h = 0.6 if r == 0 else 1.0
            cy = y_top - (r * u if r == 0 else (0.6 + r - 1) * u + 0.002 * r) - h * u / 2
            keys.append(((x + w * u / 2, cy, Hb + 0.0008), (w * u - 0.003, h * u - 0.003, 0.002)))
            x += w * u
    _boxes(ctx, keys, keys_m)
    ctx.box((0.1, 0.06, 0.0012), (0, -Db / 2 + 0.042, Hb + 0.0004), pad)
    # lid, hinged at the back, tilted back
    a = math.radians(14)
    hinge = Vector((0, Db / 2 - 0.004, Hb))
    U = Vector((0, math.sin(a), math.cos(a)))
    N = Vector((0, -math.cos(a), math.sin(a)))
    L, T = 0.215, 0.008

    def on_lid(v, n):
        return tuple(hinge + v * U + n * N)

    rot = (-a, 0, 0)
    ctx.box((W, T, L), on_lid(L / 2, -T / 2), shell, rotation=rot, bevel=0.003, profile=0.5)
    ctx.box((W - 0.008, 0.002, L - 0.008), on_lid(L / 2, 0.0008), bezel, rotation=rot)
    sw, sh = W - 0.03, L - 0.04
    sc = L / 2 + 0.005
    ctx.box((sw, 0.002, sh), on_lid(sc, 0.0018), sky, rotation=rot)
    ctx.box((0.15, 0.002, 0.09), on_lid(sc + 0.015, 0.0028), win, rotation=rot)
    ctx.box((0.15, 0.002, 0.012), on_lid(sc + 0.015 + 0.045, 0.0032), bar, rotation=rot)
    ctx.box((0.12, 0.002, 0.014), on_lid(sc - sh / 2 + 0.012, 0.0028), dock, rotation=rot)
    return ctx.finish()


# -- mirror -----------------------------------------------------------------------------
@builder("comco.mirror")
def mirror(ctx):
    frame = ctx.material("frame", (0.78, 0.6, 0.25), look="metal")
    glass = ctx.material("glass", (0.82, 0.88, 0.93), look="glossy")
    shine = ctx.material("shine", (1.0, 1.0, 1.0), emission=0.6)
    back = ctx.material("back", (0.35, 0.22, 0.1))
    W, H, z0 = 0.5, 0.77, 0.03
    zc = z0 + H / 2
    outer = rounded_rect(W / 2, H / 2, 0.06, 6, cy=zc, start=-PI / 2)  # from the bottom right corner
    inner = rounded_rect((W - 0.09) / 2, (H - 0.09) / 2, 0.025, 6, cy=zc, start=-PI / 2)
    _ring_xz(ctx, outer, inner, -0.005, 0.03, frame)
    middle = rounded_rect((W - 0.04) / 2, (H - 0.04) / 2, 0.045, 6, cy=zc, start=-PI / 2)
    _ring_xz(ctx, middle, inner, -0.023, 0.01, frame)
    _plate_xz(ctx, list(reversed(inner)), 0.0, 0.012, glass)
    _plate_xz(ctx, outer, 0.015, 0.01, back)
    # classic diagonal highlight streaks on the pane, clipped to it
    pane = [(x, z) for x, z in inner]
    for off, wd in [(0.0, 0.05), (0.085, 0.022), (-0.30, 0.03)]:
        d = Vector((1, 1)).normalized()
        nrm = Vector((-d.y, d.x))
        c = Vector((-0.02, zc + 0.1)) + nrm * off
        strip = [c - d * 0.6 - nrm * wd / 2, c + d * 0.6 - nrm * wd / 2, c + d * 0.6 + nrm * wd / 2,
                 c - d * 0.6 + nrm * wd / 2]
        clip_poly = _clip_convex([tuple(p) for p in strip], [(x, z) for x, z in pane])
        if len(clip_poly) >= 3:
            _plate_xz(ctx, clip_poly, -0.0065, 0.001, shine)
    # feet
    for s in (-1, 1):
        ctx.box((0.09, 0.05, 0.035), (s * 0.17, 0.0, 0.0175), back, bevel=0.006, profile=0.5)
    return ctx.finish()


# -- mouse ------------------------------------------------------------------------------
@builder("comco.mouse")
def mouse(ctx):
    # Two-tone (dark body, light buttons) and its cable: what makes a mouse read as a
    # computer mouse from the side. Built nose towards -y; the manifest lays it along x,
    # so the camera sees it in profile with the cable running off along the floor.
    shell = ctx.material("shell", (0.07, 0.07, 0.08), look="plastic")
    buttons = ctx.material("buttons", (0.72, 0.73, 0.76), look="plastic")
    dark = ctx.material("groove", (0.03, 0.03, 0.035))
    wheel = ctx.material("wheel", (0.35, 0.36, 0.4), look="plastic")
    cable = ctx.material("cable", (0.12, 0.12, 0.13))
    L, W, H = 0.095, 0.058, 0.038
    y0 = 0.013  # body centre (the cable takes the front of the footprint)

    def width(t):  # t = 0 front .. 1 back
        return W * max(0.02, math.sin(PI * (0.04 + 0.92 * t))) ** 0.45 * (0.9 + 0.1 * t)

    def height(t):
        rise = 0.55 + 0.45 * math.sin(PI * min(1, t * 0.9 + 0.1)) ** 0.5
        return H * max(0.05, math.sin(PI * (0.03 + 0.94 * t)) ** 0.55) * rise

    rings = []
    stations = [0.0, 0.03, 0.08, 0.16, 0.26, 0.38, 0.5, 0.62, 0.74, 0.84, 0.92, 0.97, 1.0]
    for t in stations:
        y = y0 - L / 2 + L * t
        rings.append(_arch_ring(width(t), height(t), y, 14, n=2.3))
    split = stations.index(0.5)
    ctx.skin(rings[:split + 1], buttons, cap_end=False, smooth=True)  # the two buttons: front half of the top
    ctx.skin(rings[split:], shell, cap_start=False, smooth=True)
    # a dark band round the foot, so the light buttons sit on a dark body from the side
    band = [_arch_ring(width(t) * 1.015, height(t) * 0.32, y0 - L / 2 + L * t, 14, n=2.3) for t in stations[1:-1]]
    ctx.skin(band, shell, smooth=True)

    def top(x, t):
        w, h = width(t), height(t)
        u = min(1.0, abs(x) / (w / 2))
        return h * (1 - u ** 2.3) ** (1 / 2.3)

    # button split (front centre line) and back edge of the buttons
    path = []
    for t in [0.02 + 0.48 * i / 10 for i in range(11)]:
        path.append((0, y0 - L / 2 + L * t, top(0, t) + 0.0004))
    _tube(ctx, path, 0.0011, dark, segments=5)
    # scroll wheel, standing proud of the split
    tw = 0.22
    ctx.cylinder(0.0055, 0.0045, (0, y0 - L / 2 + L * tw, top(0, tw) - 0.0012), wheel, rotation=(0, PI / 2, 0),
                 segments=16)
    # cable out of the nose, down to the floor and off in a loose S
    yf = y0 - L / 2
    path = [(0, yf + 0.004, 0.012), (0, yf - 0.003, 0.0105), (0, yf - 0.008, 0.006), (0.0, yf - 0.011, 0.0026)]
    path += [(0.006 * math.sin(PI * k / 4), yf - 0.011 - 0.0045 * k, 0.0026) for k in range(1, 5)]
    _tube(ctx, path, 0.0026, cable, segments=8)
    return ctx.finish()


# -- remote -----------------------------------------------------------------------------
@builder("comco.remote")
def remote(ctx):
    body = ctx.material("body", (0.06, 0.06, 0.07), look="plastic")
    btn = ctx.material("buttons", (0.62, 0.63, 0.66), look="plastic")
    red = ctx.material("power", (0.85, 0.12, 0.1))
    blue = ctx.material("ring", (0.25, 0.45, 0.85))
    cols = [ctx.material(f"c{i}", c) for i, c in enumerate([(0.8, 0.15, 0.12), (0.15, 0.65, 0.2),
                                                            (0.95, 0.8, 0.15), (0.2, 0.4, 0.85)])]
    W, D, H = 0.05, 0.2, 0.02
    ctx.box((W, D, H), (0, 0, H / 2), body, bevel=0.007, profile=0.5)
    zt = H
    ctx.cylinder(0.0055, 0.004, (0.012, 0.082, zt + 0.001), red, segments=16)
    # colour keys
    for i, m in enumerate(cols):
        ctx.box((0.008, 0.005, 0.003), (-0.0165 + i * 0.011, 0.064, zt + 0.001), m, bevel=0.001, profile=0.5)
    # navigation ring + OK
    ctx.torus(0.0125, 0.0035, (0, 0.037, zt + 0.0005), blue, segments=24, ring_segments=6)
    ctx.cylinder(0.0065, 0.004, (0, 0.037, zt + 0.001), btn, segments=16)
    # volume / channel rockers
    for s in (-1, 1):
        ctx.box((0.009, 0.026, 0.004), (s * 0.015, 0.0, zt + 0.001), btn, bevel=0.0015, profile=0.5)
    ctx.box((0.009, 0.009, 0.003), (0, 0.0, zt + 0.001), btn, bevel=0.001, profile=0.5)
    # number pad
    items = []
    for r in range(4):
        for c in range(3):
            items.append(((-0.0135 + c * 0.0135, -0.028 - r * 0.0135, zt + 0.0008), (0.009, 0.008, 0.0035)))
    _boxes(ctx, items, btn, taper=0.001)
    return ctx.finish()


# -- scissors ---------------------------------------------------------------------------
@builder("comco.scissors")
def scissors(ctx):
    handle = ctx.material("handles", (0.92, 0.38, 0.08), primary=True, look="plastic")
    steel = ctx.material("blades", (0.8, 0.81, 0.84), look="plastic")
    screw = ctx.material("screw", (0.35, 0.35, 0.37), look="metal")
    pivot = Vector((0, 0.025, 0))
    ang = math.radians(5)
    for side, layer in ((1, 0), (-1, 1)):
        rot = -side * ang
        c, s = math.cos(rot), math.sin(rot)

        def place(p, c=c, s=s):  # this blade's turn
            x, y = p
            return (pivot.x + x * c - y * s, pivot.y + x * s + y * c)

        # blade on `side`, pointing +y; its handle on the other side
        blade = [(0.0, -0.012), (side * 0.013, -0.01), (side * 0.013, 0.02), (side * 0.0095, 0.05),
                 (side * 0.0045, 0.068), (0.0, 0.075)]
        if side < 0:
            blade = list(reversed(blade))
        z = 0.0045 + layer * 0.0032
        ctx.prism([place(p) for p in blade], 0.0032, location=(0, 0, z), mat=steel)
        # shank from pivot to the loop
        lx, ly = -side * 0.021, -0.1 + 0.028 - 0.025
        arm = [(side * 0.006, -0.004), (-side * 0.0045, 0.004), (lx - side * 0.006, ly + 0.02),
               (lx + side * 0.009, ly + 0.02)]
        if side > 0:
            arm = list(reversed(arm))
        ctx.prism([place(p) for p in arm], 0.006, location=(0, 0, 0.003 + layer * 0.002), mat=handle)
        outer = [place((lx + x, ly + y)) for x, y in ellipse(0.0175, 0.023, 20)]
        inner = [place((lx + x, ly + y)) for x, y in ellipse(0.0105, 0.0155, 20)]
        _ring_prism(ctx, outer, inner, 0.011, handle)
    ctx.cylinder(0.0035, 0.013, (pivot.x, pivot.y, 0.0085), screw, segments=12)
    return ctx.finish()


# -- shoe -------------------------------------------------------------------------------
@builder("comco.shoe")
def shoe(ctx):
    upper = ctx.material("upper", (0.18, 0.35, 0.75), primary=True)
    sole = ctx.material("sole", (0.95, 0.95, 0.93))
    lace = ctx.material("laces", (0.98, 0.98, 0.98))
    lining = ctx.material("lining", (0.08, 0.08, 0.09))
    L, SW = 0.3, 0.11

    def hw(t):  # half width of the footprint; t = 0 toe .. 1 heel
        base = 0.5 * SW * (0.98 - 0.18 * math.exp(-((t - 0.62) / 0.14) ** 2) - 0.1 * t)
        end = min(1.0, (t / 0.16) ** 0.5, ((1 - t) / 0.09) ** 0.5)
        return max(0.002, base * end)

    ts = [i / 32 for i in range(33)]
    right = [(hw(t), -L / 2 + L * t) for t in ts]
    left = [(-hw(t), -L / 2 + L * t) for t in reversed(ts)]
    outline = right[1:-1] + [(0.0, L / 2)] + left[1:-1] + [(0.0, -L / 2)]
    outline = list(reversed(outline))  # ccw
    SH = 0.026
    sole_ob = ctx.prism(outline, SH, mat=sole)
    for v in sole_ob.data.vertices:  # toe spring
        t = (v.co.y + L / 2) / L
        if t < 0.22:
            v.co.z += 0.014 * ((0.22 - t) / 0.22) ** 2

    def height(t):
        pts = [(0.0, 0.018), (0.05, 0.034), (0.16, 0.046), (0.3, 0.058), (0.45, 0.075), (0.6, 0.092),
               (0.68, 0.094), (0.8, 0.086), (0.92, 0.094), (1.0, 0.07)]
        for (a, ha), (b, hb) in zip(pts, pts[1:]):
            if a <= t <= b:
                return ha + (hb - ha) * (t - a) / (b - a)
        return pts[-1][1]

    def spring(t):
        return 0.014 * ((0.22 - t) / 0.22) ** 2 if t < 0.22 else 0.0

    rings = []
    st = [0.0, 0.015, 0.04, 0.08, 0.13, 0.2, 0.28, 0.36, 0.44, 0.52, 0.6, 0.68, 0.76, 0.84, 0.9, 0.95, 0.98,
          1.0]
    for t in st:
        w = max(0.004, 2 * hw(t) * 0.97)
        rings.append(_arch_ring(w, height(t) - 0.004 * (t in (0.0, 1.0)), -L / 2 + L * t + (0.004 if t == 0 else 0)
                                - (0.004 if t == 1.0 else 0), 14, z0=SH - 0.003 + spring(t), n=2.4))
    ctx.skin(rings, upper, smooth=True)

    def ztop(t):
        return SH - 0.003 + spring(t) + height(t)

    # collar opening (dark) with a padded rim
    tc, ry, rx = 0.78, 0.05, 0.034
    yc = -L / 2 + L * tc
    op = ctx.sphere(1.0, (0, yc, ztop(tc) - 0.004), lining, scale=(rx, ry, 0.009), segments=20, rings=8)
    op.rotation_euler = (math.radians(-4), 0, 0)
    collar = ctx.torus(1.0, 0.12, (0, yc, ztop(tc) - 0.003), upper, segments=28, ring_segments=8)
    collar.scale = (rx + 0.002, ry + 0.002, 0.06)
    # tongue and laces across the instep
    t0, t1 = 0.34, 0.66
    tongue = [(0, -L / 2 + L * t, ztop(t) + 0.002) for t in [t0 + (t1 - t0) * i / 8 for i in range(9)]]
    _tube(ctx, tongue, 0.014, upper, segments=10, flat=0.3)
    items = []
    for i in range(6):
        t = 0.37 + 0.048 * i
        y = -L / 2 + L * t
        items.append((t, y))
    for t, y in items:
        slope = math.atan2(ztop(t + 0.01) - ztop(t - 0.01), 0.02 * L)
        ctx.box((0.042, 0.006, 0.003), (0, y, ztop(t) + 0.006), lace, rotation=(slope, 0, 0))
    # white side stripes
    for s in (-1, 1):
        path = [(s * (hw(t) * 0.97 + 0.0005), -L / 2 + L * t, SH + 0.012 + 0.03 * (t - 0.3)) for t in
                [0.3 + 0.5 * i / 8 for i in range(9)]]
        _tube(ctx, path, 0.005, sole, segments=6, flat=0.4)
    # heel tab
    ctx.box((0.022, 0.012, 0.03), (0, L / 2 - 0.014, ztop(0.95) - 0.004), sole, bevel=0.003, profile=0.5)
    return ctx.finish()


# -- suitcase ---------------------------------------------------------------------------
@builder("comco.suitcase")
def suitcase(ctx):
    shell = ctx.material("shell", (0.12, 0.3, 0.55), primary=True, look="plastic")
    dark = ctx.material("trim", (0.07, 0.07, 0.08))
    metal = ctx.material("metal", (0.7, 0.7, 0.73), look="metal")
    W, D, H, zb = 0.42, 0.23, 0.5, 0.05
    ctx.box((W, D, H), (0, 0, zb + H / 2), shell, bevel=0.035, segments=3, profile=0.5)
    seam_o = rounded_rect((W + 0.006) / 2, (H + 0.006) / 2, 0.038, 4, cy=zb + H / 2, start=-PI / 2)
    seam_i = rounded_rect((W - 0.02) / 2, (H - 0.02) / 2, 0.025, 4, cy=zb + H / 2, start=-PI / 2)
    _ring_xz(ctx, seam_o, seam_i, 0.0, 0.012, dark)  # zip seam around the shell
    for y in (-D / 2, D / 2):  # raised ribs on the front and back
        for x in (-0.12, 0.0, 0.12):
            ctx.box((0.045, 0.014, H - 0.1), (x, y, zb + H / 2), shell, bevel=0.006, profile=0.5)
    # wheels: caster housings and black wheels
    for sx in (-1, 1):
        for sy in (-1, 1):
            x, y = sx * (W / 2 - 0.04), sy * (D / 2 - 0.04)
            ctx.box((0.045, 0.045, 0.02), (x, y, zb - 0.006), dark, bevel=0.006, profile=0.5)
            ctx.cylinder(0.023, 0.02, (x, y, 0.023), dark, rotation=(0, PI / 2, 0), segments=16)
            ctx.cylinder(0.008, 0.022, (x, y, 0.023), metal, rotation=(0, PI / 2, 0), segments=8)
    # telescopic handle pulled out, and the carry handle on top
    zt = zb + H
    for sx in (-1, 1):
        ctx.box((0.022, 0.03, 0.012), (sx * 0.085, D / 2 - 0.035, zt + 0.004), dark)
        ctx.cylinder(0.008, 0.12, (sx * 0.085, D / 2 - 0.035, zt + 0.06), metal, segments=10)
    ctx.box((0.2, 0.03, 0.028), (0, D / 2 - 0.035, zt + 0.125), dark, bevel=0.01, profile=0.5)
    _tube(ctx, [(0.06 * math.cos(a), -0.02, zt + 0.024 * math.sin(a)) for a in [PI * i / 10 for i in range(11)]],
          0.009, dark, segments=8)
    return ctx.finish()


# -- tie --------------------------------------------------------------------------------
@builder("comco.tie")
def tie(ctx):
    silk = ctx.material("silk", (0.7, 0.1, 0.13), primary=True, look="glossy")
    stripe = ctx.material("stripes", (0.1, 0.13, 0.38), look="glossy")
    Lh = 0.25
    blade = [(0.0, -Lh), (0.045, -Lh + 0.05), (0.019, 0.18), (-0.019, 0.18), (-0.045, -Lh + 0.05)]
    T = 0.006
    ctx.prism(blade, T, mat=silk)
    # diagonal stripes clipped to the blade
    d = Vector((1, 0.9)).normalized()
    nrm = Vector((-d.y, d.x))
    for k in range(-6, 9):
        c = Vector((0, -0.2)) + nrm * (k * 0.045)
        for off, wd in ((0.0, 0.012),):
            cc = c + nrm * off
            strip = [cc - d * 0.3 - nrm * wd / 2, cc + d * 0.3 - nrm * wd / 2, cc + d * 0.3 + nrm * wd / 2,
                     cc - d * 0.3 + nrm * wd / 2]
            poly = _clip_convex([tuple(p) for p in strip], blade)
            if len(poly) >= 3:
                ctx.prism(poly, 0.0006, location=(0, 0, T), mat=stripe)
    # knot: a tapered, rounded wedge, wider at the top
    rings = []
    for y, w, h in [(0.168, 0.03, 0.012), (0.175, 0.036, 0.016), (0.2, 0.046, 0.019), (0.222, 0.052, 0.02),
                    (0.228, 0.05, 0.018)]:
        pts = superellipse(w / 2, h / 2, 2.6, 16)
        rings.append([(x, y, z + h / 2) for x, z in pts])
    ctx.skin(rings, silk, smooth=True)
    # the neckband leaving the knot (under a collar): two short strips splaying apart
    for s in (-1, 1):
        ctx.box((0.016, 0.03, 0.005), (s * 0.022, Lh - 0.016, 0.0025), silk, rotation=(0, 0, -s * 0.5))
    return ctx.finish()


# -- toothbrush -------------------------------------------------------------------------
@builder("comco.toothbrush")
def toothbrush(ctx):
    plastic = ctx.material("handle", (0.1, 0.55, 0.9), primary=True, look="glossy")
    grip = ctx.material("grip", (0.95, 0.95, 0.97))
    white = ctx.material("bristles", (0.97, 0.97, 0.97))
    blue = ctx.material("bristles2", (0.45, 0.8, 1.0))
    rings = []
    # (y, width, thickness, z bottom)
    prof = [(-0.095, 0.011, 0.008, 0.0), (-0.09, 0.015, 0.011, 0.0), (-0.06, 0.018, 0.012, 0.0),
            (-0.025, 0.016, 0.011, 0.0), (0.015, 0.01, 0.008, 0.0007), (0.04, 0.0065, 0.0065, 0.002),
            (0.054, 0.0065, 0.006, 0.0035), (0.06, 0.0135, 0.006, 0.004), (0.09, 0.0135, 0.006, 0.004),
            (0.095, 0.009, 0.005, 0.0045)]
    for y, w, h, z0 in prof:
        pts = superellipse(w / 2, h / 2, 2.4, 16)
        rings.append([(x, y, z0 + h / 2 + z) for x, z in pts])
    ctx.skin(rings, plastic, smooth=True)
    # thumb grip pads
    ctx.sphere(1.0, (0, -0.058, 0.011), grip, scale=(0.006, 0.02, 0.0025), segments=16, rings=8)
    ctx.sphere(1.0, (0, -0.02, 0.0095), grip, scale=(0.0038, 0.009, 0.0022), segments=12, rings=6)
    # bristle tufts, standing up from the head
    whites, blues = [], []
    for r in range(9):
        for c in range(3):
            x = (c - 1) * 0.0042
            y = 0.0625 + r * 0.0032
            h = 0.02 - 0.002 * (c != 1)
            tuft = ((x, y, 0.0095 + h / 2), (0.0034, 0.0026, h))
            (blues if r in (0, 1, 7, 8) else whites).append(tuft)
    _boxes(ctx, whites, white)
    _boxes(ctx, blues, blue)
    return ctx.finish()


# -- tv ---------------------------------------------------------------------------------
@builder("comco.tv")
def tv(ctx):
    frame = ctx.material("bezel", (0.04, 0.04, 0.045), look="glossy")
    stand = ctx.material("stand", (0.16, 0.16, 0.17), look="metal")
    sky = ctx.material("sky", (0.35, 0.68, 0.98), emission=1.0)
    hill1 = ctx.material("hill_far", (0.22, 0.55, 0.25), emission=1.0)
    hill2 = ctx.material("hill_near", (0.45, 0.8, 0.2), emission=1.0)
    sun = ctx.material("sun", (1.0, 0.88, 0.25), emission=1.5)
    cloud = ctx.material("cloud", (0.98, 0.98, 1.0), emission=1.0)
    W, H, z0 = 1.1, 0.63, 0.07
    zc = z0 + H / 2
    ctx.box((W, 0.05, H), (0, 0.0, zc), frame, bevel=0.006, profile=0.5)
    ctx.box((0.5, 0.04, 0.3), (0, 0.04, zc), frame, bevel=0.01, profile=0.5)  # back bulge
    sw, sh = W - 0.04, H - 0.04
    ctx.box((sw, 0.004, sh), (0, -0.026, zc), sky)
    zb = zc - sh / 2
    # far hills and near hills, drawn as outlines in x-z
    far = [(-sw / 2, zb)] + [(-sw / 2 + sw * i / 20, zb + 0.17 + 0.06 * math.sin(i * 0.7 + 1.0)) for i in
                             range(21)] + [(sw / 2, zb)]
    _plate_xz(ctx, far, -0.0285, 0.002, hill1)
    near = [(-sw / 2, zb)] + [(-sw / 2 + sw * i / 20, zb + 0.09 + 0.05 * math.sin(i * 0.45 + 2.5)) for i in
                              range(21)] + [(sw / 2, zb)]
    _plate_xz(ctx, near, -0.0305, 0.002, hill2)
    ctx.cylinder(0.06, 0.002, (0.3, -0.0285, zb + sh - 0.13), sun, rotation=(PI / 2, 0, 0), segments=24)
    for cx, cz, k in [(-0.28, zb + sh - 0.1, 1.0), (0.02, zb + sh - 0.07, 0.7)]:
        for dx, r in [(-0.045, 0.028), (0.0, 0.04), (0.045, 0.03)]:
            ctx.cylinder(r * k, 0.002, (cx + dx * k, -0.0285, cz + (r - 0.04) * k * 0.4), cloud,
                         rotation=(PI / 2, 0, 0), segments=16)
    # stand: neck and a flat foot
    ctx.box((0.08, 0.035, 0.07), (0, 0.03, 0.045), stand)
    ctx.box((0.42, 0.25, 0.014), (0, 0.0, 0.007), stand, bevel=0.005, profile=0.5)
    return ctx.finish()


# -- umbrella ---------------------------------------------------------------------------
@builder("comco.umbrella")
def umbrella(ctx):
    cloth = ctx.material("canopy", (0.82, 0.12, 0.12), primary=True)
    cloth2 = ctx.material("canopy2", (0.96, 0.96, 0.94))
    dark = ctx.material("ribs", (0.08, 0.08, 0.09), look="metal")
    seam = ctx.material("seams", (0.25, 0.25, 0.27))
    wood = ctx.material("handle", (0.4, 0.22, 0.1), look="glossy")
    R, ztop, dome = 0.5, 0.88, 0.3
    ribs = 8
    m, per = 7, 6

    def surf(r):
        u = r / R
        return ztop - dome * u ** 1.7

    for k in range(ribs):
        verts, faces = [(0, 0, ztop)], []
        a0 = 2 * PI * k / ribs
        da = 2 * PI / ribs
        for i in range(1, m + 1):
            u = i / m
            for j in range(per + 1):
                f = j / per
                a = a0 + da * f
                sag = math.sin(PI * f)
                # straight chords between rib tips, with a scallop at the hem
                chord = math.cos(da / 2) / math.cos(a - (a0 + da / 2))
                r = R * u * (1 - 0.02 * sag * u) * (chord ** u)
                r -= 0.035 * sag * u ** 6
                z = surf(R * u) + 0.01 * sag * u - 0.0 * (1 - chord)
                verts.append((r * math.cos(a), r * math.sin(a), z))
        row = per + 1
        for j in range(per):
            faces.append((0, 1 + j, 1 + j + 1))
        for i in range(m - 1):
            b0, b1 = 1 + i * row, 1 + (i + 1) * row
            for j in range(per):
                faces.append((b0 + j, b0 + j + 1, b1 + j + 1, b1 + j))
        _mesh(ctx, verts, faces, cloth if k % 2 == 0 else cloth2, smooth=True)
        # rib tip
        a = a0
        ctx.sphere(0.011, (R * math.cos(a), R * math.sin(a), surf(R) - 0.002), dark, segments=8, rings=4)
        # seam over the rib (keeps the gores visible whatever the colour)
        _tube(ctx, [(R * u * math.cos(a), R * u * math.sin(a), surf(R * u) + 0.002) for u in
                    [0.04 + 0.96 * i / 8 for i in range(9)]], 0.0045, seam, segments=4)
        # rib under the canopy
        _tube(ctx, [(R * u * math.cos(a), R * u * math.sin(a), surf(R * u) - 0.008) for u in
                    [i / 6 for i in range(7)]], 0.0035, dark, segments=4)
    # ferrule on top, shaft, and J handle
    ctx.cylinder(0.007, 0.05, (0, 0, ztop + 0.02), dark, segments=10, radius_top=0.003)
    ctx.cylinder(0.007, ztop - 0.1, (0, 0, 0.1 + (ztop - 0.1) / 2), dark, segments=10)
    hook = [(0, 0, 0.16), (0, 0, 0.06)]
    for i in range(1, 13):
        a = PI * i / 12
        hook.append((0.045 - 0.045 * math.cos(a), 0, 0.06 - 0.045 * math.sin(a) + 0.0))
    hook = [(x, y, z + 0.0) for x, y, z in hook]
    _tube(ctx, hook, 0.014, wood, segments=10)
    return ctx.finish()
