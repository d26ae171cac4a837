"""ComCO vehicles, boards and furniture: procedural low-poly builders.

Coordinates are metres at roughly the manifest's real size; `ctx.finish()` scales
to the exact `dimensions_m`. The canonical front looks towards -y (the camera),
so vehicles are modelled nose-first along -y and furniture with its usable face
(drawers, doors, seat) towards -y.
"""

from __future__ import annotations

import math

from mathutils import Matrix, Vector

from comco.scenes.outlines import at_height, ellipse, rounded_rect
from comco.scenes.registry import builder

# -- shared colours (sRGB) ----------------------------------------------------------
GLASS = (0.07, 0.09, 0.13)
TYRE = (0.04, 0.04, 0.04)
HUB = (0.62, 0.63, 0.66)
CHROME = (0.78, 0.79, 0.82)
DARK = (0.12, 0.12, 0.13)
HEADLIGHT = (1.0, 0.96, 0.8)
TAILLIGHT = (0.85, 0.05, 0.04)
WHITE = (0.93, 0.93, 0.91)
WOOD = (0.55, 0.34, 0.17)
WOOD_LIGHT = (0.66, 0.45, 0.24)


# -- geometry helpers ---------------------------------------------------------------
def rod(ctx, p0, p1, r, mat, segments=8):
    """A cylinder from point p0 to point p1."""
    a, b = Vector(p0), Vector(p1)
    d = b - a
    rot = d.to_track_quat("Z", "Y").to_euler()
    return ctx.cylinder(r, d.length, (a + b) / 2, mat, rotation=rot, segments=segments)


def tbox(ctx, z0, z1, bottom, top, mat):
    """A hexahedron: rectangle `bottom` (x0, x1, y0, y1) at z0, rectangle `top` at z1."""
    return ctx.skin([((x0, y0, z), (x1, y0, z), (x1, y1, z), (x0, y1, z)) for z, (x0, x1, y0, y1) in
                     ((z0, bottom), (z1, top))], mat, name="tbox")


def side_prism(ctx, profile, x0, x1, mat):
    """Extrude a side profile of (y, z) points along x from x0 to x1."""
    return ctx.skin([[(x, y, z) for y, z in profile] for x in (x0, x1)], mat, name="side")


def slab(ctx, corners, t, mat, out=(0, -1, 0)):
    """A thin slab on a planar quad of 4 corners, thickened by t towards `out`."""
    c = [Vector(p) for p in corners]
    n = (c[1] - c[0]).cross(c[3] - c[0]).normalized()
    if n.dot(Vector(out)) < 0:
        n = -n
    return ctx.skin([c, [p + n * t for p in c]], mat, name="slab")


def wheel(ctx, x, y, z, r, w, tyre, hub, hub_frac=0.6, segments=20):
    """A car-like wheel turning about the x axis: tyre plus a hub cap either side."""
    rot = (0, math.pi / 2, 0)
    ctx.cylinder(r, w, (x, y, z), tyre, rotation=rot, segments=segments)
    ctx.cylinder(r * hub_frac, w + 0.02 * r, (x, y, z), hub, rotation=rot, segments=segments)


def spoked_wheel(ctx, y, z, r, tube, tyre, rim, spokes=12, spoke_mat=None, x=0.0, hub_r=None):
    """A bicycle/motorcycle wheel in the y-z plane: torus tyre, rim, spokes, hub."""
    rot = (0, math.pi / 2, 0)
    ctx.torus(r, tube, (x, y, z), tyre, rotation=rot, segments=32, ring_segments=8)
    ctx.torus(r - tube * 1.1, tube * 0.45, (x, y, z), rim, rotation=rot, segments=28, ring_segments=6)
    sm = spoke_mat or rim
    hr = hub_r or r * 0.08
    ctx.cylinder(hr, hr * 2.5, (x, y, z), sm, rotation=rot, segments=10)
    for i in range(spokes):
        a = 2 * math.pi * i / spokes
        p = (x, y + (r - tube) * math.cos(a), z + (r - tube) * math.sin(a))
        rod(ctx, (x, y, z), p, max(tube * 0.12, 0.003), sm, segments=4)


def arc_band(ctx, yc, zc, r, a0, a1, width, thick, mat, n=10):
    """A curved strip (mudguard) around the x axis at (yc, zc); angles in degrees from +z towards -y."""
    rings = []
    for i in range(n + 1):
        a = math.radians(a0 + (a1 - a0) * i / n)
        dy, dz = -math.sin(a), math.cos(a)
        ring = []
        for x, rr in ((-width / 2, r), (width / 2, r), (width / 2, r + thick), (-width / 2, r + thick)):
            ring.append((x, yc + rr * dy, zc + rr * dz))
        rings.append(ring)
    return ctx.skin(rings, mat, name="loft")


def board(ctx, y0, y1, n, half_w, z_bot, thick, mat, round_edge=True):
    """A lofted board along y: half width, bottom height and thickness as functions of y."""
    rings = []
    for i in range(n + 1):
        y = y0 + (y1 - y0) * i / n
        w, zb, t = max(half_w(y), 1e-3), z_bot(y), max(thick(y), 1e-4)
        if round_edge:
            ring = [(-0.75 * w, y, zb), (0.75 * w, y, zb), (w, y, zb + 0.45 * t), (0.8 * w, y, zb + t),
                    (-0.8 * w, y, zb + t), (-w, y, zb + 0.45 * t)]
        else:
            ring = [(-w, y, zb), (w, y, zb), (w, y, zb + t), (-w, y, zb + t)]
        rings.append(ring)
    return ctx.skin(rings, mat, name="loft")


def interp(points):
    """A piecewise-linear function through sorted (x, value) points."""
    def f(x):
        if x <= points[0][0]:
            return points[0][1]
        for (xa, va), (xb, vb) in zip(points, points[1:]):
            if x <= xb:
                return va + (vb - va) * (x - xa) / (xb - xa)
        return points[-1][1]
    return f


# =================================================================================
# vehicles
# =================================================================================
@builder("comco.car")
def car(ctx):
    body = ctx.material("body", (0.72, 0.08, 0.07), primary=True, look="glossy")
    glass = ctx.material("glass", GLASS, look="glossy")
    tyre = ctx.material("tyre", TYRE)
    hub = ctx.material("hub", HUB, look="metal")
    lamp = ctx.material("headlight", HEADLIGHT, look="glossy", emission=1.5)
    tail = ctx.material("taillight", TAILLIGHT, look="glossy", emission=1.0)
    dark = ctx.material("trim", DARK, look="plastic")
    plate = ctx.material("plate", WHITE, look="plastic")
    # lower body with sloping bonnet
    side_prism(ctx, [(-2.25, 0.3), (2.2, 0.3), (2.25, 0.88), (2.05, 0.97), (-1.3, 0.98), (-2.15, 0.86),
                     (-2.27, 0.6)], -0.86, 0.86, body)
    # glass house and roof
    tbox(ctx, 0.97, 1.38, (-0.8, 0.8, -1.3, 1.95), (-0.66, 0.66, -0.42, 1.4), glass)
    tbox(ctx, 1.37, 1.45, (-0.69, 0.69, -0.45, 1.43), (-0.64, 0.64, -0.38, 1.36), body)
    for sx in (-1, 1):
        rod(ctx, (sx * 0.79, -1.28, 0.97), (sx * 0.665, -0.42, 1.39), 0.045, body, 6)   # A pillar
        rod(ctx, (sx * 0.79, 0.35, 0.97), (sx * 0.665, 0.45, 1.39), 0.05, body, 6)      # B pillar
        rod(ctx, (sx * 0.79, 1.93, 0.97), (sx * 0.665, 1.38, 1.39), 0.06, body, 6)      # C pillar
        ctx.box((0.34, 0.05, 0.13), (sx * 0.58, -2.245, 0.74), lamp, bevel=0.02)
        ctx.box((0.3, 0.05, 0.12), (sx * 0.6, 2.235, 0.78), tail, bevel=0.02)
        ctx.box((0.1, 0.14, 0.1), (sx * 0.86, -1.05, 1.02), body)                       # mirror
        for y in (-1.42, 1.42):
            wheel(ctx, sx * 0.8, y, 0.33, 0.33, 0.22, tyre, hub)
    ctx.box((0.7, 0.05, 0.2), (0, -2.27, 0.62), dark)          # grille
    ctx.box((1.76, 0.16, 0.16), (0, -2.27, 0.38), dark, bevel=0.03)  # bumpers
    ctx.box((1.76, 0.16, 0.16), (0, 2.22, 0.38), dark, bevel=0.03)
    ctx.box((0.42, 0.02, 0.11), (0, -2.355, 0.38), plate)
    return ctx.finish()


@builder("comco.bus")
def bus(ctx):
    body = ctx.material("body", (0.96, 0.72, 0.08), primary=True, look="glossy")
    roof = ctx.material("roof", WHITE, look="plastic")
    glass = ctx.material("glass", GLASS, look="glossy")
    tyre = ctx.material("tyre", TYRE)
    hub = ctx.material("hub", HUB, look="metal")
    lamp = ctx.material("headlight", HEADLIGHT, look="glossy", emission=1.5)
    dark = ctx.material("trim", DARK, look="plastic")
    sign = ctx.material("sign", (1.0, 0.6, 0.05), emission=1.0)
    L, hw = 6.0, 1.25
    ctx.box((2 * hw, 2 * L, 2.7), (0, 0, 0.45 + 1.35), body, bevel=0.12)
    tbox(ctx, 3.1, 3.2, (-hw + 0.06, hw - 0.06, -L + 0.1, L - 0.1), (-hw + 0.25, hw - 0.25, -L + 0.4, L - 0.3), body)
    ctx.box((1.6, 2.4, 0.25), (0, 1.5, 3.2), roof, bevel=0.05)       # roof A/C unit
    ctx.box((2 * hw + 0.02, 2 * L + 0.02, 0.3), (0, 0, 0.6), dark)   # bottom skirt
    # front: windscreen, destination sign, lamps
    ctx.box((2.25, 0.06, 1.45), (0, -L - 0.01, 2.08), glass)
    ctx.box((1.9, 0.06, 0.28), (0, -L - 0.01, 2.98), dark)
    ctx.box((1.3, 0.07, 0.13), (0, -L - 0.02, 2.98), sign)
    ctx.box((0.7, 0.06, 0.06), (0, -L - 0.02, 1.42), dark)          # wiper bar
    for sx in (-1, 1):
        ctx.box((0.4, 0.06, 0.18), (sx * 0.88, -L - 0.01, 0.98), lamp, bevel=0.02)
        ctx.box((0.3, 0.06, 0.14), (sx * 0.88, L + 0.01, 1.0), ctx.material("taillight", TAILLIGHT, emission=1.0))
        ctx.box((0.05, 0.3, 0.35), (sx * 1.33, -L + 0.25, 2.65), dark)  # mirrors
        # side windows
        n = 7
        y0 = -L + 1.6 if sx > 0 else -L + 0.5
        step = (2 * L - 0.8 - (y0 + L)) / n
        for i in range(n):
            yc = y0 + step * (i + 0.5)
            ctx.box((0.04, step - 0.22, 1.1), (sx * hw, yc, 2.25), glass)
        for y in (-L + 2.3, L - 2.6):
            wheel(ctx, sx * 1.05, y, 0.5, 0.5, 0.32, tyre, hub, segments=20)
    ctx.box((0.04, 1.0, 2.3), (hw, -L + 0.95, 1.7), glass)          # door
    ctx.box((2 * hw + 0.04, 0.18, 0.3), (0, -L - 0.05, 0.6), dark, bevel=0.04)  # bumper
    return ctx.finish()


@builder("comco.truck")
def truck(ctx):
    cab = ctx.material("cab", (0.75, 0.1, 0.08), primary=True, look="glossy")
    boxm = ctx.material("cargo", (0.9, 0.9, 0.88), look="plastic")
    glass = ctx.material("glass", GLASS, look="glossy")
    tyre = ctx.material("tyre", TYRE)
    hub = ctx.material("hub", HUB, look="metal")
    lamp = ctx.material("headlight", HEADLIGHT, look="glossy", emission=1.5)
    dark = ctx.material("trim", DARK, look="plastic")
    chrome = ctx.material("chrome", CHROME, look="metal")
    # cab
    side_prism(ctx, [(-3.5, 0.7), (-1.45, 0.7), (-1.45, 2.95), (-3.2, 2.95), (-3.45, 2.1)], -1.2, 1.2, cab)
    slab(ctx, [(-1.1, -3.462, 2.2), (1.1, -3.462, 2.2), (1.1, -3.22, 2.85), (-1.1, -3.22, 2.85)], 0.03, glass)
    for sx in (-1, 1):
        ctx.box((0.04, 0.9, 0.7), (sx * 1.2, -2.6, 2.4), glass)       # side windows
        ctx.box((0.04, 0.6, 0.05), (sx * 1.2, -2.2, 1.75), dark)      # door line
        ctx.box((0.5, 0.06, 0.22), (sx * 0.82, -3.52, 1.1), lamp, bevel=0.02)
        rod(ctx, (sx * 1.18, -3.0, 2.4), (sx * 1.3, -3.2, 2.4), 0.03, dark, 6)
        ctx.box((0.06, 0.12, 0.45), (sx * 1.32, -3.2, 2.25), dark)    # mirrors
        wheel(ctx, sx * 1.0, -2.55, 0.5, 0.5, 0.34, tyre, hub)
        for y in (1.6, 2.75):
            wheel(ctx, sx * 1.0, y, 0.5, 0.5, 0.42, tyre, hub)
        ctx.box((0.4, 1.2, 0.08), (sx * 1.05, -2.55, 1.05), dark)     # mudguard
    ctx.box((1.1, 0.06, 0.7), (0, -3.51, 1.35), chrome)               # grille
    for k in range(5):
        ctx.box((1.0, 0.07, 0.04), (0, -3.52, 1.07 + k * 0.13), dark)
    ctx.box((2.44, 0.25, 0.28), (0, -3.48, 0.62), dark, bevel=0.04)   # bumper
    # chassis and cargo box
    ctx.box((1.2, 6.6, 0.3), (0, 0.1, 0.75), dark)
    ctx.box((2.5, 4.85, 2.3), (0, 1.075, 2.05), boxm, bevel=0.04)
    ctx.box((2.52, 4.87, 0.08), (0, 1.075, 0.94), dark)
    return ctx.finish()


@builder("comco.train")
def train(ctx):
    body = ctx.material("body", (0.15, 0.3, 0.7), primary=True, look="glossy")
    nose = ctx.material("nose", (1.0, 0.82, 0.1), look="glossy")
    roof = ctx.material("roof", (0.7, 0.71, 0.73), look="plastic")
    glass = ctx.material("glass", GLASS, look="glossy")
    lamp = ctx.material("headlight", HEADLIGHT, look="glossy", emission=1.5)
    dark = ctx.material("bogie", DARK)
    steel = ctx.material("rail", (0.6, 0.6, 0.62), look="metal")
    sleeper = ctx.material("sleeper", (0.36, 0.24, 0.14))
    white = ctx.material("stripe", WHITE, look="plastic")
    # track
    for sx in (-1, 1):
        ctx.box((0.08, 21.8, 0.16), (sx * 0.75, 0.9, 0.18), steel)
    for i in range(31):
        ctx.box((2.6, 0.26, 0.1), (0, -9.7 + i * (21.2 / 30), 0.05), sleeper)
    first = len(ctx.parts)
    z0, z1, hw = 1.15, 3.85, 1.42
    # locomotive with a sloped cab front
    prof = [(-9.95, z0), (-0.25, z0), (-0.25, z1), (-8.3, z1), (-9.45, 2.55), (-9.95, 2.3)]
    side_prism(ctx, prof, -hw, hw, body)
    side_prism(ctx, [(-9.98, z0 - 0.02), (-8.6, z0 - 0.02), (-8.6, 2.33), (-9.98, 2.33)], -hw - 0.01, hw + 0.01, nose)
    slab(ctx, [(-1.25, -9.42, 2.62), (1.25, -9.42, 2.62), (1.25, -8.42, 3.72), (-1.25, -8.42, 3.72)], 0.03, glass)
    ctx.box((0.06, 0.06, 1.5), (0, -8.95, 3.15), body, rotation=(math.radians(-42), 0, 0))  # centre pillar
    for sx in (-1, 1):
        ctx.cylinder(0.16, 0.06, (sx * 0.9, -10.0, 1.75), lamp, rotation=(math.pi / 2, 0, 0), segments=12)
        ctx.box((0.04, 1.0, 0.7), (sx * hw, -7.8, 3.05), glass)          # cab side window
    ctx.box((0.7, 0.3, 0.25), (0, -10.05, 1.25), dark)                   # coupler
    # carriage
    ctx.box((2 * hw, 9.75, z1 - z0), (0, 5.075, (z0 + z1) / 2), body)
    ctx.box((1.8, 0.6, 2.3), (0, 0, 2.4), dark)                          # gangway bellows
    for y0, y1 in ((-8.3, -0.25), (0.2, 9.95)):
        tbox(ctx, z1, 4.2, (-hw, hw, y0, y1), (-0.95, 0.95, y0 + 0.05, y1 - 0.05), roof)
    ctx.box((0.8, 2.2, 0.25), (0, -4.0, 4.25), dark)                     # roof equipment
    # side windows, doors, stripe
    for sx in (-1, 1):
        ctx.box((0.03, 19.6, 0.12), (sx * (hw + 0.005), 0, 2.05), white)
        for i in range(5):
            ctx.box((0.04, 1.2, 0.75), (sx * hw, 1.4 + i * 1.85, 2.95), glass)
        for y in (-6.0, -2.2):
            ctx.box((0.04, 1.4, 0.6), (sx * hw, y, 2.95), glass)
        ctx.box((0.04, 0.9, 2.2), (sx * hw, 0.85, 2.3), dark)            # doors
    # bogies and wheels
    for yc in (-7.8, -2.4, 2.6, 8.0):
        ctx.box((2.2, 2.6, 0.45), (0, yc, 0.9), dark)
        for dy in (-0.75, 0.75):
            for sx in (-1, 1):
                ctx.cylinder(0.45, 0.12, (sx * 0.8, yc + dy, 0.71), steel, rotation=(0, math.pi / 2, 0), segments=16)
    for p in ctx.parts[first:]:  # the train stands back on its track: rails and sleepers show in front
        p.location.y += 1.8
    return ctx.finish()


@builder("comco.airplane")
def airplane(ctx):
    white = ctx.material("body", (0.94, 0.94, 0.95), look="glossy")
    accent = ctx.material("tail", (0.1, 0.25, 0.7), look="glossy")
    glass = ctx.material("glass", GLASS, look="glossy")
    grey = ctx.material("engine", (0.7, 0.72, 0.75), look="metal")
    dark = ctx.material("intake", (0.08, 0.08, 0.09))
    tyre = ctx.material("tyre", TYRE)
    zc = 4.0
    rings = []
    n = 16
    prof = [(-19.0, 0.05, -0.6), (-18.6, 0.7, -0.45), (-17.8, 1.3, -0.25), (-16.5, 1.8, -0.08), (-15.0, 2.0, 0.0),
            (12.0, 2.0, 0.0), (15.0, 1.5, 0.5), (17.5, 0.9, 1.1), (19.0, 0.35, 1.5)]
    for y, r, dz in prof:
        rings.append([(r * math.cos(2 * math.pi * i / n), y, zc + dz + r * math.sin(2 * math.pi * i / n))
                      for i in range(n)])
    ctx.skin(rings, white)
    # cockpit windows
    slab(ctx, [(-1.0, -17.6, 4.9), (1.0, -17.6, 4.9), (0.85, -16.6, 5.5), (-0.85, -16.6, 5.5)], 0.08, glass,
         out=(0, -1, 1))
    # wings (swept), one prism each side, plus blue fin and stabilisers
    for sx in (-1, 1):
        wing = [(0, -3.5), (0, 4.5), (sx * 18.0, 8.0), (sx * 18.0, 5.8)]
        if sx < 0:
            wing = wing[::-1]
        ctx.prism(wing, 0.5, (0, 0, zc - 1.2), white)
        stab = [(0, 13.5), (0, 17.5), (sx * 6.5, 19.0), (sx * 6.5, 17.6)]
        if sx < 0:
            stab = stab[::-1]
        ctx.prism(stab, 0.3, (0, 0, zc + 1.4), white)
        # engines under the wings
        ex = sx * 6.5
        ey0, ey1, ez = -3.8, 0.6, zc - 2.3
        ctx.cylinder(1.05, ey1 - ey0, (ex, (ey0 + ey1) / 2, ez), grey, rotation=(math.pi / 2, 0, 0), segments=16,
                     radius_top=0.8)
        ctx.cylinder(0.85, 0.1, (ex, ey0 - 0.02, ez), dark, rotation=(math.pi / 2, 0, 0), segments=16)
        ctx.box((0.3, 2.0, 0.9), (ex, -0.8, zc - 1.4), grey)               # pylon
        # main gear
        ctx.cylinder(0.55, 0.4, (sx * 2.0, 2.0, 0.55), tyre, rotation=(0, math.pi / 2, 0), segments=12)
        rod(ctx, (sx * 2.0, 2.0, 0.55), (sx * 1.6, 2.0, zc - 1.5), 0.15, grey)
        # cabin windows: a dashed row along each side
        for i in range(18):
            ctx.box((0.1, 0.35, 0.35), (sx * 1.97, -14.0 + i * 1.4, zc + 0.65), glass)
    ctx.cylinder(0.45, 0.35, (0, -14.0, 0.45), tyre, rotation=(0, math.pi / 2, 0), segments=12)
    rod(ctx, (0, -14.0, 0.45), (0, -14.0, zc - 1.5), 0.13, grey)
    fin = [(12.5, 0.0), (18.9, 0.0), (19.6, 6.5), (17.2, 6.5)]
    ctx.prism(fin, 0.4, (-0.2, 0, zc + 1.2), accent, rotation=(math.pi / 2, 0, math.pi / 2))
    ctx.box((0.1, 26.0, 0.35), (2.0, -2.5, zc + 0.05), accent)          # cheat line stripe
    ctx.box((0.1, 26.0, 0.35), (-2.0, -2.5, zc + 0.05), accent)
    return ctx.finish()


@builder("comco.bicycle")
def bicycle(ctx):
    frame = ctx.material("frame", (0.1, 0.35, 0.75), primary=True, look="glossy")
    tyre = ctx.material("tyre", TYRE)
    rim = ctx.material("rim", CHROME, look="metal")
    black = ctx.material("seat", (0.06, 0.06, 0.06), look="plastic")
    R, zc, yb = 0.34, 0.36, 0.52
    for y in (-yb, yb):
        spoked_wheel(ctx, y, zc, R, 0.025, tyre, rim, spokes=12)
    bb = (0, 0.02, 0.34)
    seat_top = (0, 0.2, 0.83)
    head_top = (0, -0.37, 0.84)
    head_bot = (0, -0.41, 0.7)
    r = 0.018
    rod(ctx, bb, seat_top, r, frame)          # seat tube
    rod(ctx, bb, head_bot, r * 1.1, frame)    # down tube
    rod(ctx, seat_top, head_top, r, frame)    # top tube
    rod(ctx, head_bot, head_top, r * 1.3, frame)
    for sx in (-1, 1):
        rod(ctx, (sx * 0.05, yb, zc), (sx * 0.02, bb[1], bb[2]), r * 0.7, frame)      # chain stays
        rod(ctx, (sx * 0.05, yb, zc), (sx * 0.015, seat_top[1] - 0.01, seat_top[2] - 0.03), r * 0.7, frame)
        rod(ctx, (sx * 0.05, -yb, zc), (sx * 0.02, head_bot[1], head_bot[2]), r * 0.8, frame)  # fork
        # pedals and crank
        rod(ctx, (sx * 0.06, bb[1], bb[2]), (sx * 0.07, bb[1] + sx * 0.15, bb[2] - sx * 0.06), 0.012, rim)
        ctx.box((0.09, 0.05, 0.02), (sx * 0.11, bb[1] + sx * 0.15, bb[2] - sx * 0.06), black)
    ctx.cylinder(0.09, 0.02, (0.045, bb[1], bb[2]), rim, rotation=(0, math.pi / 2, 0), segments=16)  # chainring
    # handlebar
    stem = (0, -0.39, 0.99)
    rod(ctx, head_top, stem, r, rim)
    rod(ctx, (-0.27, -0.36, 0.99), (0.27, -0.36, 0.99), 0.013, rim)
    rod(ctx, (0, -0.36, 0.99), stem, 0.013, rim)
    for sx in (-1, 1):
        rod(ctx, (sx * 0.2, -0.36, 0.99), (sx * 0.3, -0.36, 0.99), 0.02, black)   # grips
    # seat post and saddle
    rod(ctx, seat_top, (0, 0.23, 0.92), 0.013, rim)
    saddle = [(0.0, -0.14), (0.03, -0.1), (0.08, 0.04), (0.07, 0.1), (-0.07, 0.1), (-0.08, 0.04), (-0.03, -0.1)]
    ctx.prism([(x, y) for x, y in saddle], 0.05, (0, 0.25, 0.91), black)
    return ctx.finish()


@builder("comco.motorcycle")
def motorcycle(ctx):
    paint = ctx.material("tank", (0.75, 0.08, 0.06), primary=True, look="glossy")
    tyre = ctx.material("tyre", TYRE)
    chrome = ctx.material("chrome", CHROME, look="metal")
    black = ctx.material("seat", (0.05, 0.05, 0.05), look="plastic")
    engine = ctx.material("engine", (0.35, 0.35, 0.37), look="metal")
    lamp = ctx.material("headlight", HEADLIGHT, look="glossy", emission=1.5)
    tail = ctx.material("taillight", TAILLIGHT, emission=1.0)
    R, tube, zc, yw = 0.26, 0.075, 0.335, 0.72
    for y in (-yw, yw):
        spoked_wheel(ctx, y, zc, R, tube, tyre, chrome, spokes=10)
        ctx.cylinder(R - tube * 1.3, 0.03, (0, y, zc), engine, rotation=(0, math.pi / 2, 0), segments=20)
    # front forks and fender
    for sx in (-1, 1):
        rod(ctx, (sx * 0.1, -yw, zc), (sx * 0.1, -0.52, 0.88), 0.025, chrome)
    arc_band(ctx, -yw, zc, R + 0.1, -80, 35, 0.2, 0.02, paint)
    arc_band(ctx, yw, zc, R + 0.1, -30, 100, 0.22, 0.02, paint)
    # headlight, handlebar with mirrors
    ctx.cylinder(0.1, 0.1, (0, -0.6, 0.85), chrome, rotation=(math.pi / 2, 0, 0), segments=16)
    ctx.cylinder(0.085, 0.02, (0, -0.66, 0.85), lamp, rotation=(math.pi / 2, 0, 0), segments=16)
    rod(ctx, (-0.36, -0.47, 1.0), (0.36, -0.47, 1.0), 0.016, chrome)
    rod(ctx, (0, -0.5, 0.9), (0, -0.47, 1.0), 0.02, chrome)
    for sx in (-1, 1):
        rod(ctx, (sx * 0.28, -0.47, 1.0), (sx * 0.39, -0.47, 1.0), 0.025, black)
        rod(ctx, (sx * 0.22, -0.47, 1.0), (sx * 0.27, -0.45, 1.08), 0.008, chrome)
        ctx.cylinder(0.04, 0.015, (sx * 0.27, -0.45, 1.08), black, rotation=(math.pi / 2, 0, 0), segments=10)
    # tank, seat, tail
    ctx.sphere(1.0, (0, -0.2, 0.82), paint, scale=(0.16, 0.3, 0.12), segments=16, rings=8)
    side_prism(ctx, [(0.05, 0.78), (0.68, 0.8), (0.72, 0.86), (0.3, 0.9), (0.08, 0.86)], -0.14, 0.14, black)
    side_prism(ctx, [(0.6, 0.72), (0.95, 0.8), (0.98, 0.86), (0.65, 0.82)], -0.1, 0.1, paint)
    ctx.box((0.12, 0.03, 0.05), (0, 0.985, 0.83), tail)
    # frame, engine, exhaust
    rod(ctx, (0, -0.5, 0.85), (0, 0.1, 0.72), 0.03, black)
    rod(ctx, (0, -0.48, 0.8), (0, -0.1, 0.32), 0.03, black)
    rod(ctx, (0, 0.1, 0.72), (0, yw, zc), 0.03, black)
    ctx.box((0.3, 0.38, 0.3), (0, -0.08, 0.45), engine, bevel=0.03)
    for sx in (-1, 1):
        ctx.cylinder(0.08, 0.22, (sx * 0.12, -0.16, 0.64), chrome, rotation=(0, math.radians(sx * 35), 0), segments=10)
    rod(ctx, (0.16, -0.05, 0.3), (0.2, 0.9, 0.42), 0.045, chrome, 10)
    return ctx.finish()


@builder("comco.boat")
def boat(ctx):
    hull = ctx.material("hull", (0.93, 0.93, 0.92), primary=True, look="glossy")
    stripe = ctx.material("stripe", (0.1, 0.22, 0.6), look="glossy")
    deck = ctx.material("deck", WOOD_LIGHT)
    glass = ctx.material("glass", GLASS, look="glossy")
    cabin = ctx.material("cabin", WHITE, look="plastic")
    black = ctx.material("motor", (0.05, 0.05, 0.05), look="plastic")
    hw = interp([(-2.25, 0.02), (-2.0, 0.28), (-1.6, 0.5), (-1.0, 0.67), (0.0, 0.74), (2.05, 0.72)])
    zb = interp([(-2.25, 0.62), (-1.9, 0.3), (-1.3, 0.08), (-0.5, 0.0), (2.05, 0.02)])
    zt = interp([(-2.25, 0.92), (-1.5, 0.82), (0.0, 0.76), (2.05, 0.76)])
    ys = [-2.25, -2.1, -1.9, -1.6, -1.3, -1.0, -0.5, 0.0, 0.8, 1.6, 2.05]
    rings = []
    for y in ys:
        w, b, t = hw(y), zb(y), zt(y)
        rings.append([(0, y, b), (0.8 * w, y, b + 0.16), (w, y, t), (-w, y, t), (-0.8 * w, y, b + 0.16)])
    ctx.skin(rings, hull)
    # stripe band and deck
    rings = []
    for y in ys:
        w, t = hw(y) + 0.012, zt(y)
        rings.append([(-w, y, t - 0.17), (w, y, t - 0.17), (w, y, t - 0.09), (-w, y, t - 0.09)])
    ctx.skin(rings[1:], stripe)
    rings = []
    for y in ys:
        w, t = hw(y) * 0.93, zt(y)
        rings.append([(-w, y, t - 0.06), (w, y, t - 0.06), (w, y, t + 0.012), (-w, y, t + 0.012)])
    ctx.skin(rings[1:], deck)
    # cabin with windscreen and roof
    ctx.box((1.0, 1.3, 0.3), (0, 0.25, 0.9), cabin, bevel=0.04)
    slab(ctx, [(-0.52, -0.42, 0.95), (0.52, -0.42, 0.95), (0.45, -0.12, 1.16), (-0.45, -0.12, 1.16)], 0.02, glass)
    for sx in (-1, 1):
        ctx.box((0.03, 0.9, 0.14), (sx * 0.5, 0.25, 0.95), glass)
    ctx.box((1.1, 1.2, 0.05), (0, 0.4, 1.175), cabin, bevel=0.015)
    for sx in (-1, 1):
        rod(ctx, (sx * 0.48, -0.12, 1.16), (sx * 0.48, 0.95, 1.16), 0.02, cabin)
        rod(ctx, (sx * 0.48, 0.95, 1.16), (sx * 0.48, 0.95, 0.95), 0.02, cabin)
    # outboard motor
    ctx.box((0.3, 0.3, 0.4), (0, 2.1, 0.85), black, bevel=0.05)
    ctx.box((0.1, 0.12, 0.6), (0, 2.15, 0.45), black)
    return ctx.finish()


# =================================================================================
# boards (lying flat, long along y)
# =================================================================================
@builder("comco.skateboard")
def skateboard(ctx):
    deck = ctx.material("deck", (0.9, 0.35, 0.1), primary=True, look="plastic")
    grip = ctx.material("grip", (0.16, 0.16, 0.17))
    bolt = ctx.material("bolt", CHROME, look="metal")
    metal = ctx.material("truck", (0.72, 0.73, 0.76), look="metal")
    wheelm = ctx.material("wheel", (0.95, 0.9, 0.6), look="plastic")
    L, W = 0.4, 0.095

    def hw(y):
        a = abs(y)
        if a < L - W:
            return W
        return W * math.sqrt(max(0.0, 1 - ((a - (L - W)) / W) ** 2)) + 0.004

    def zb(y):
        a = abs(y)
        return 0.062 + (0.0 if a < 0.27 else ((a - 0.27) / 0.13) ** 1.5 * 0.03)

    board(ctx, -L, L, 40, hw, zb, lambda y: 0.012, deck, round_edge=False)
    board(ctx, -L + 0.02, L - 0.02, 40, lambda y: hw(y) - 0.008, lambda y: zb(y) + 0.012, lambda y: 0.0015, grip,
          round_edge=False)
    for y in (-0.25, 0.25):
        ctx.box((0.05, 0.06, 0.012), (0, y, 0.062), metal)
        ctx.box((0.04, 0.04, 0.025), (0, y, 0.045), metal)
        rod(ctx, (-0.1, y, 0.027), (0.1, y, 0.027), 0.006, metal)
        ctx.box((0.15, 0.025, 0.02), (0, y, 0.032), metal)
        for sx in (-1, 1):
            ctx.cylinder(0.027, 0.032, (sx * 0.09, y, 0.027), wheelm, rotation=(0, math.pi / 2, 0), segments=14)
            for dy in (-0.02, 0.02):
                ctx.cylinder(0.005, 0.003, (sx * 0.02, y + dy, zb(y) + 0.0135 + 0.0015), bolt, segments=8)
    return ctx.finish()


@builder("comco.skis")
def skis(ctx):
    top = ctx.material("ski", (0.85, 0.1, 0.1), primary=True, look="glossy")
    stripe = ctx.material("stripe", (0.95, 0.95, 0.95), look="glossy")
    binding = ctx.material("binding", (0.1, 0.1, 0.11), look="plastic")
    accent = ctx.material("accent", (0.85, 0.85, 0.88), look="metal")
    L = 0.85
    hw = interp([(-L, 0.01), (-0.82, 0.036), (-0.74, 0.05), (-0.6, 0.046), (0.0, 0.038), (0.6, 0.044),
                 (0.8, 0.045), (L, 0.03)])
    zb = interp([(-L, 0.045), (-0.8, 0.03), (-0.72, 0.012), (-0.62, 0.0), (0.75, 0.0), (L, 0.008)])
    for sx in (-1, 1):
        cx = sx * 0.075
        sk = board(ctx, -L, L, 34, hw, zb, lambda y: 0.012, top, round_edge=False)
        sk.location.x = cx
        st = board(ctx, -0.7, 0.78, 16, lambda y: 0.012, lambda y: zb(y) + 0.012, lambda y: 0.001, stripe,
                   round_edge=False)
        st.location.x = cx
        # bindings: toe piece, heel piece, plate
        ctx.box((0.07, 0.09, 0.03), (cx, -0.12, 0.027), binding, bevel=0.008)
        ctx.box((0.075, 0.11, 0.04), (cx, 0.2, 0.032), binding, bevel=0.01)
        ctx.box((0.06, 0.26, 0.006), (cx, 0.04, 0.015), accent)
        ctx.box((0.08, 0.03, 0.012), (cx, 0.16, 0.05), accent)
    return ctx.finish()


@builder("comco.snowboard")
def snowboard(ctx):
    top = ctx.material("board", (0.1, 0.55, 0.75), primary=True, look="glossy")
    graphic = ctx.material("graphic", (0.98, 0.85, 0.15), look="glossy")
    binding = ctx.material("binding", (0.08, 0.08, 0.09), look="plastic")
    strap = ctx.material("strap", (0.85, 0.15, 0.1), look="plastic")
    L, W = 0.775, 0.15

    def hw(y):
        a = abs(y)
        core = W - 0.02 * math.cos(math.pi * a / (2 * (L - W))) if a < L - W else W
        if a < L - W:
            return core
        return W * math.sqrt(max(0.0, 1 - ((a - (L - W)) / W) ** 2)) + 0.004

    def zb(y):
        a = abs(y)
        return 0.0 if a < 0.55 else ((a - 0.55) / 0.225) ** 2 * 0.03

    board(ctx, -L, L, 40, hw, zb, lambda y: 0.012, top, round_edge=False)
    for yc in (-0.42, 0.0, 0.42):
        board(ctx, yc - 0.05, yc + 0.05, 2, lambda y: hw(y) - 0.004, lambda y: zb(y) + 0.012, lambda y: 0.001,
              graphic, round_edge=False)
    for yc, ang in ((-0.26, 15), (0.26, -10)):
        rot = math.radians(ang)
        parts = []
        parts.append(ctx.box((0.22, 0.11, 0.012), (0, 0, 0.018), binding, bevel=0.004))
        parts.append(tbox(ctx, 0.012, 0.045, (-0.1, 0.1, 0.04, 0.065), (-0.08, 0.08, 0.075, 0.09), binding))  # highback
        for sx in (-1, 1):
            parts.append(ctx.box((0.012, 0.11, 0.02), (sx * 0.1, 0, 0.03), binding))
        parts.append(ctx.box((0.2, 0.05, 0.016), (0, -0.04, 0.036), strap, bevel=0.004))
        parts.append(ctx.box((0.2, 0.035, 0.016), (0, 0.025, 0.036), strap, bevel=0.004))
        for p in parts:
            m = Matrix.Translation((0, yc, 0)) @ Matrix.Rotation(rot, 4, "Z") @ p.matrix_basis
            p.matrix_basis = m
    return ctx.finish()


@builder("comco.surfboard")
def surfboard(ctx):
    top = ctx.material("board", (0.25, 0.75, 0.85), primary=True, look="glossy")
    stripe = ctx.material("stripe", (0.95, 0.45, 0.08), look="glossy")
    white = ctx.material("stringer", (0.97, 0.97, 0.95), look="glossy")
    fin = ctx.material("fin", (0.15, 0.15, 0.17), look="plastic")
    L = 1.05
    hw = interp([(-L, 0.004), (-1.0, 0.07), (-0.9, 0.14), (-0.7, 0.21), (-0.4, 0.26), (0.0, 0.275), (0.4, 0.26),
                 (0.7, 0.21), (0.9, 0.15), (L, 0.08)])
    zb = interp([(-L, 0.065), (-0.85, 0.04), (-0.6, 0.03), (0.8, 0.025), (L, 0.035)])
    th = interp([(-L, 0.01), (-0.8, 0.035), (0.0, 0.05), (0.8, 0.035), (L, 0.02)])
    board(ctx, -L, L, 36, hw, zb, th, top)
    # stripes proud of the deck: a long centre band plus two cross bands
    def top_z(y):
        return zb(y) + th(y)

    board(ctx, -0.95, 0.98, 30, lambda y: 0.045, top_z, lambda y: 0.0015, stripe, round_edge=False)
    board(ctx, -0.97, 1.0, 30, lambda y: 0.008, lambda y: top_z(y) + 0.0015, lambda y: 0.001, white, round_edge=False)
    for yc in (-0.6,):
        board(ctx, yc - 0.04, yc + 0.04, 2, lambda y: 0.8 * hw(y), lambda y: top_z(y) - 0.002, lambda y: 0.0035,
              stripe, round_edge=False)
    # fin under the tail
    fin_outline = [(0.83, 0.025), (0.98, 0.025), (0.99, 0.0), (0.9, 0.0)]
    ctx.prism(fin_outline, 0.008, (-0.004, 0, 0), fin, rotation=(math.pi / 2, 0, math.pi / 2))
    return ctx.finish()


# =================================================================================
# furniture
# =================================================================================
@builder("comco.bench")
def bench(ctx):
    wood = ctx.material("slats", WOOD, look="rubber")
    iron = ctx.material("iron", (0.08, 0.08, 0.09), look="metal")
    for y in (-0.24, -0.13, -0.02, 0.09):
        ctx.box((1.8, 0.09, 0.035), (0, y, 0.44), wood, bevel=0.008)
    tilt = math.radians(-15)
    for z in (0.56, 0.67, 0.78):
        ctx.box((1.8, 0.025, 0.08), (0, 0.2 + (z - 0.56) * 0.27, z), wood, rotation=(tilt, 0, 0), bevel=0.006)
    for x in (-0.8, 0.0, 0.8):
        arm = abs(x) > 0.1
        rod(ctx, (x, -0.24, 0.0), (x, -0.22, 0.43), 0.025, iron, 8)
        rod(ctx, (x, 0.18, 0.0), (x, 0.14, 0.43), 0.025, iron, 8)
        rod(ctx, (x, 0.14, 0.42), (x, 0.28, 0.85), 0.022, iron, 8)
        rod(ctx, (x, -0.25, 0.42), (x, 0.15, 0.42), 0.02, iron, 6)
        if arm:
            rod(ctx, (x, -0.22, 0.43), (x, -0.27, 0.64), 0.022, iron, 8)
            rod(ctx, (x, -0.3, 0.65), (x, 0.22, 0.66), 0.028, iron, 8)
        rod(ctx, (x, -0.24, 0.12), (x, 0.18, 0.12), 0.015, iron, 6)
    return ctx.finish()


@builder("comco.bed")
def bed(ctx):
    frame = ctx.material("frame", WOOD)
    sheet = ctx.material("sheet", (0.95, 0.95, 0.93), look="plastic")
    blanket = ctx.material("blanket", (0.22, 0.4, 0.72), primary=True)
    ctx.box((1.6, 0.08, 1.0), (0, 1.01, 0.5), frame, bevel=0.02)      # headboard
    ctx.box((1.6, 0.07, 0.5), (0, -1.015, 0.25), frame, bevel=0.02)   # footboard
    ctx.box((1.52, 1.96, 0.18), (0, 0, 0.22), frame)                  # side rails
    ctx.box((1.48, 1.94, 0.22), (0, -0.0, 0.42), sheet, bevel=0.04)   # mattress
    ctx.box((1.56, 1.42, 0.2), (0, -0.28, 0.47), blanket, bevel=0.05)  # blanket over the lower part
    ctx.box((1.57, 0.18, 0.05), (0, 0.4, 0.565), sheet, bevel=0.02)  # turned-down sheet
    for sx in (-1, 1):
        ctx.sphere(1.0, (sx * 0.36, 0.72, 0.6), sheet, scale=(0.32, 0.18, 0.08), segments=16, rings=8)
    return ctx.finish()


@builder("comco.couch")
def couch(ctx):
    fabric = ctx.material("fabric", (0.3, 0.45, 0.55), primary=True)
    cushion = ctx.material("cushion", (0.36, 0.52, 0.62), primary=True)
    legm = ctx.material("legs", (0.15, 0.1, 0.06))
    ctx.box((1.72, 0.9, 0.3), (0, 0, 0.25), fabric, bevel=0.03)          # base
    ctx.box((1.72, 0.22, 0.55), (0, 0.34, 0.6), fabric, bevel=0.06)      # back
    for k in (-1, 0, 1):
        ctx.box((0.56, 0.68, 0.14), (k * 0.57, -0.1, 0.47), cushion, bevel=0.04)
        ctx.box((0.56, 0.17, 0.38), (k * 0.57, 0.15, 0.7), cushion, rotation=(math.radians(-10), 0, 0), bevel=0.05)
    for sx in (-1, 1):
        ctx.box((0.16, 0.9, 0.5), (sx * 0.92, 0, 0.35), fabric, bevel=0.04)
        ctx.cylinder(0.1, 0.9, (sx * 0.92, 0, 0.6), fabric, rotation=(math.pi / 2, 0, 0), segments=14)
        for y in (-0.38, 0.38):
            ctx.cylinder(0.03, 0.1, (sx * 0.9, y, 0.05), legm, segments=8)
    return ctx.finish()


@builder("comco.chair")
def chair(ctx):
    wood = ctx.material("wood", WOOD, primary=True)
    for sx in (-1, 1):
        ctx.box((0.04, 0.04, 0.45), (sx * 0.21, -0.21, 0.225), wood)
        ctx.box((0.04, 0.04, 0.9), (sx * 0.21, 0.21, 0.45), wood, rotation=(math.radians(-4), 0, 0))
        ctx.box((0.025, 0.4, 0.03), (sx * 0.21, 0, 0.16), wood)
    ctx.box((0.4, 0.025, 0.03), (0, -0.21, 0.16), wood)
    ctx.box((0.5, 0.5, 0.045), (0, 0, 0.46), wood, bevel=0.012)
    ctx.box((0.44, 0.03, 0.11), (0, 0.225, 0.82), wood, rotation=(math.radians(-4), 0, 0), bevel=0.008)
    ctx.box((0.44, 0.025, 0.04), (0, 0.215, 0.6), wood, rotation=(math.radians(-4), 0, 0))
    for x in (-0.1, 0.0, 0.1):
        ctx.box((0.035, 0.02, 0.22), (x, 0.218, 0.71), wood, rotation=(math.radians(-4), 0, 0))
    return ctx.finish()


@builder("comco.desk")
def desk(ctx):
    wood = ctx.material("wood", WOOD)
    front = ctx.material("drawer", WOOD_LIGHT)
    metal = ctx.material("handle", CHROME, look="metal")
    ctx.box((1.4, 0.7, 0.04), (0, 0, 0.74), wood, bevel=0.008)
    ctx.box((0.44, 0.64, 0.72), (0.46, 0.0, 0.36), wood)                      # drawer pedestal
    ctx.box((0.04, 0.64, 0.72), (-0.66, 0.0, 0.36), wood)                     # side panel
    ctx.box((0.9, 0.03, 0.4), (-0.2, 0.3, 0.5), wood)                         # modesty panel
    for z0, h in ((0.04, 0.24), (0.3, 0.18), (0.5, 0.18)):
        ctx.box((0.4, 0.02, h - 0.02), (0.46, -0.325, z0 + h / 2), front, bevel=0.004)
        ctx.box((0.14, 0.025, 0.02), (0.46, -0.345, z0 + h / 2 + (0.04 if h > 0.2 else 0)), metal)
    ctx.box((0.82, 0.02, 0.09), (-0.22, -0.31, 0.665), front, bevel=0.004)   # centre drawer
    ctx.box((0.16, 0.025, 0.02), (-0.22, -0.33, 0.665), metal)
    return ctx.finish()


@builder("comco.door")
def door(ctx):
    leaf = ctx.material("leaf", (0.5, 0.3, 0.15), primary=True)
    panel = ctx.material("panel", (0.44, 0.26, 0.12), primary=True)
    frame = ctx.material("frame", (0.93, 0.92, 0.88), look="plastic")
    brass = ctx.material("handle", (0.85, 0.68, 0.25), look="metal")
    for sx in (-1, 1):
        ctx.box((0.06, 0.08, 2.05), (sx * 0.42, 0, 1.025), frame)
    ctx.box((0.78, 0.08, 0.06), (0, 0, 2.02), frame)
    ctx.box((0.78, 0.045, 1.99), (0, 0, 0.995), leaf)
    for sx in (-1, 1):
        for z0, z1 in ((0.12, 0.9), (1.05, 1.85)):
            ctx.box((0.26, 0.02, z1 - z0), (sx * 0.18, -0.027, (z0 + z1) / 2), panel, bevel=0.008)
    # handle: rose plus lever, and a keyhole plate
    ctx.cylinder(0.03, 0.03, (0.3, -0.04, 1.0), brass, rotation=(math.pi / 2, 0, 0), segments=12)
    rod(ctx, (0.3, -0.06, 1.0), (0.18, -0.07, 1.0), 0.012, brass, 8)
    rod(ctx, (0.3, -0.04, 1.0), (0.3, -0.075, 1.0), 0.012, brass, 8)
    ctx.box((0.03, 0.01, 0.07), (0.3, -0.028, 0.9), brass)
    return ctx.finish()


@builder("comco.window")
def window(ctx):
    frame = ctx.material("frame", (0.95, 0.95, 0.93), look="plastic")
    glass = ctx.material("glass", (0.55, 0.75, 0.92), look="glossy")
    shine = ctx.material("shine", (0.88, 0.95, 1.0), look="glossy")
    t = 0.08
    ctx.box((1.04, 0.02, 1.24), (0, 0.0, 0.7), glass)
    for sx in (-1, 1):
        ctx.box((t, t, 1.4), (sx * (0.6 - t / 2), 0.0, 0.7), frame, bevel=0.01)
    for z in (t / 2, 1.4 - t / 2):
        ctx.box((1.2 - 2 * t, t * 0.9, t), (0, 0.0, z), frame, bevel=0.01)
    ctx.box((0.05, 0.06, 1.25), (0, 0.0, 0.7), frame)             # mullion
    ctx.box((1.05, 0.054, 0.05), (0, 0.0, 0.78), frame)           # transom
    ctx.box((1.2, 0.12, 0.04), (0, -0.02, 0.02), frame, bevel=0.008)  # sill
    # reflections on the panes
    for cx, cz in ((-0.3, 1.1), (0.28, 0.4)):
        for k, w in enumerate((0.05, 0.025)):
            off = k * 0.09
            ctx.box((w, 0.004, 0.3), (cx + off, -0.012, cz - off), shine, rotation=(0, math.radians(40), 0))
    return ctx.finish()


@builder("comco.toilet")
def toilet(ctx):
    china = ctx.material("china", (0.96, 0.96, 0.95), look="glossy")
    seat = ctx.material("seat", (0.9, 0.9, 0.88), look="plastic")
    water = ctx.material("water", (0.55, 0.7, 0.8), look="glossy")
    chrome = ctx.material("chrome", CHROME, look="metal")
    # tank
    ctx.box((0.4, 0.17, 0.36), (0, 0.26, 0.6), china, bevel=0.02)
    ctx.box((0.42, 0.19, 0.035), (0, 0.26, 0.79), china, bevel=0.012)
    rod(ctx, (-0.14, 0.17, 0.72), (-0.07, 0.16, 0.72), 0.01, chrome)
    # bowl: a loft of ellipses from pedestal to rim
    rings = [at_height(ellipse(rx, ry, 20, cy=cy), z) for rx, ry, cy, z in
             ((0.11, 0.16, 0.05, 0.0), (0.1, 0.15, 0.03, 0.14), (0.15, 0.22, -0.02, 0.28), (0.18, 0.25, -0.05, 0.36),
              (0.18, 0.25, -0.05, 0.38))]
    ctx.skin(rings, china)
    ctx.box((0.26, 0.2, 0.36), (0, 0.12, 0.18), china, bevel=0.02)       # back of pedestal
    ctx.skin([at_height(ellipse(0.12, 0.16, 20, cy=-0.07), z) for z in (0.381, 0.384)], water)
    # seat ring and raised lid
    ctx.torus(1.0, 0.16, (0, -0.05, 0.4), seat, segments=28, ring_segments=8)
    ctx.parts[-1].scale = (0.16, 0.225, 0.16)
    lid = ctx.cylinder(1.0, 0.02, (0, 0.15, 0.58), seat, rotation=(math.radians(-82), 0, 0), segments=24)
    lid.scale = (0.18, 0.24, 1.0)
    return ctx.finish()


@builder("comco.sink")
def sink(ctx):
    china = ctx.material("china", (0.96, 0.96, 0.95), look="glossy")
    basin = ctx.material("basin", (0.74, 0.78, 0.82), look="glossy")
    chrome = ctx.material("chrome", CHROME, look="metal")
    dark = ctx.material("drain", (0.2, 0.2, 0.22), look="metal")
    hot = ctx.material("hot", (0.8, 0.1, 0.1), look="plastic")
    cold = ctx.material("cold", (0.1, 0.3, 0.85), look="plastic")
    ctx.skin([at_height(ellipse(rx, ry, 20, cy=cy), z) for rx, ry, cy, z in
              ((0.13, 0.1, 0.06, 0.0), (0.09, 0.07, 0.06, 0.25), (0.09, 0.07, 0.06, 0.5), (0.14, 0.1, 0.04,
                                                                                           0.7))], china)
    rings = [at_height(rounded_rect(hx, hy, r), z) for hx, hy, r, z in
             ((0.26, 0.19, 0.1, 0.66), (0.3, 0.225, 0.12, 0.78), (0.3, 0.225, 0.12, 0.84))]
    ctx.skin(rings, china)
    ctx.skin([at_height(ellipse(0.22, 0.14, 28, cy=-0.035), z) for z in (0.8405, 0.8425)], basin)
    ctx.cylinder(0.02, 0.004, (0, -0.035, 0.844), dark, segments=12)
    # tap: column, spout, handles
    ctx.cylinder(0.022, 0.08, (0, 0.16, 0.88), chrome, segments=12)
    rod(ctx, (0, 0.16, 0.91), (0, 0.07, 0.915), 0.014, chrome)
    ctx.cylinder(0.016, 0.03, (0, 0.07, 0.9), chrome, segments=10)
    for sx, m in ((-1, hot), (1, cold)):
        ctx.cylinder(0.02, 0.04, (sx * 0.11, 0.16, 0.86), chrome, segments=10)
        ctx.box((0.06, 0.015, 0.015), (sx * 0.11, 0.16, 0.885), chrome)
        ctx.cylinder(0.012, 0.01, (sx * 0.11, 0.16, 0.895), m, segments=10)
    return ctx.finish()


@builder("comco.refrigerator")
def refrigerator(ctx):
    body = ctx.material("body", (0.92, 0.92, 0.9), primary=True, look="plastic")
    doorm = ctx.material("door", (0.95, 0.95, 0.93), primary=True, look="plastic")
    handle = ctx.material("handle", (0.45, 0.46, 0.48), look="metal")
    dark = ctx.material("plinth", (0.15, 0.15, 0.16))
    ctx.box((0.7, 0.66, 1.74), (0, 0.02, 0.93), body, bevel=0.02)
    ctx.box((0.66, 0.04, 0.06), (0, -0.3, 0.03), dark)
    for z0, z1, hz0, hz1 in ((0.07, 1.19, 0.75, 1.12), (1.22, 1.79, 1.26, 1.55)):
        ctx.box((0.68, 0.05, z1 - z0), (0, -0.325, (z0 + z1) / 2), doorm, bevel=0.015)
        ctx.box((0.035, 0.04, hz1 - hz0), (0.27, -0.38, (hz0 + hz1) / 2), handle, bevel=0.008)
        for hz in (hz0 + 0.02, hz1 - 0.02):
            ctx.box((0.025, 0.04, 0.02), (0.27, -0.355, hz), handle)
    ctx.box((0.66, 0.02, 0.015), (0, -0.35, 1.205), dark)        # gap between doors
    return ctx.finish()


@builder("comco.oven")
def oven(ctx):
    white = ctx.material("body", (0.94, 0.94, 0.93), look="plastic")
    glass = ctx.material("window", (0.1, 0.1, 0.12), look="glossy")
    black = ctx.material("hob", (0.06, 0.06, 0.07), look="glossy")
    chrome = ctx.material("handle", CHROME, look="metal")
    knob = ctx.material("knob", (0.15, 0.15, 0.16), look="plastic")
    ctx.box((0.6, 0.58, 0.82), (0, 0.01, 0.41), white, bevel=0.01)
    ctx.box((0.6, 0.05, 0.12), (0, 0.275, 0.84), white, bevel=0.01)          # backsplash
    ctx.box((0.56, 0.02, 0.06), (0, -0.285, 0.03), black)                    # kickplate
    ctx.box((0.58, 0.56, 0.008), (0, 0.0, 0.824), black)                      # hob top
    for x, y, r in ((-0.14, -0.12, 0.085), (0.14, -0.12, 0.065), (-0.14, 0.13, 0.065), (0.14, 0.13, 0.085)):
        ctx.cylinder(r, 0.012, (x, y, 0.832), ctx.material("burner", (0.3, 0.3, 0.32), look="metal"), segments=20)
        ctx.cylinder(r * 0.55, 0.014, (x, y, 0.833), black, segments=16)
    # door with window and handle
    ctx.box((0.56, 0.03, 0.5), (0, -0.295, 0.37), white, bevel=0.008)
    ctx.box((0.4, 0.01, 0.28), (0, -0.312, 0.35), glass)
    rod(ctx, (-0.22, -0.35, 0.58), (0.22, -0.35, 0.58), 0.012, chrome)
    for sx in (-1, 1):
        rod(ctx, (sx * 0.2, -0.35, 0.58), (sx * 0.2, -0.3, 0.58), 0.008, chrome)
    # control panel with knobs
    ctx.box((0.56, 0.02, 0.12), (0, -0.29, 0.73), black)
    for x in (-0.21, -0.12, 0.12, 0.21):
        ctx.cylinder(0.025, 0.03, (x, -0.31, 0.73), knob, rotation=(math.pi / 2, 0, 0), segments=14)
        ctx.box((0.006, 0.01, 0.03), (x, -0.326, 0.74), chrome)
    ctx.box((0.1, 0.01, 0.04), (0, -0.302, 0.73), ctx.material("clock", (0.2, 0.8, 0.35), emission=1.0))
    return ctx.finish()


@builder("comco.microwave")
def microwave(ctx):
    white = ctx.material("body", (0.94, 0.94, 0.93), look="plastic")
    glass = ctx.material("window", (0.1, 0.1, 0.12), look="glossy")
    panel = ctx.material("panel", (0.2, 0.2, 0.22), look="plastic")
    key = ctx.material("key", (0.82, 0.83, 0.85), look="plastic")
    display = ctx.material("display", (0.2, 0.85, 0.4), emission=1.0)
    ctx.box((0.5, 0.36, 0.3), (0, 0.01, 0.15), white, bevel=0.015)
    ctx.box((0.36, 0.015, 0.26), (-0.06, -0.175, 0.15), white, bevel=0.006)   # door
    ctx.box((0.27, 0.008, 0.18), (-0.075, -0.184, 0.15), glass)
    ctx.box((0.015, 0.02, 0.2), (0.1, -0.19, 0.15), panel)                    # handle
    ctx.box((0.1, 0.01, 0.26), (0.185, -0.173, 0.15), panel)
    ctx.box((0.08, 0.01, 0.03), (0.185, -0.179, 0.255), display)
    for r in range(4):
        for c in range(3):
            ctx.box((0.018, 0.008, 0.018), (0.16 + c * 0.025, -0.18, 0.205 - r * 0.03), key)
    ctx.box((0.07, 0.008, 0.025), (0.185, -0.18, 0.06), ctx.material("start", (0.15, 0.7, 0.25), look="plastic"))
    for sx in (-1, 1):
        for y in (-0.14, 0.16):
            ctx.cylinder(0.015, 0.01, (sx * 0.21, y, 0.005), panel, segments=8)
    return ctx.finish()
