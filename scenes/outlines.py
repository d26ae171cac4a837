"""Pure point generators for procedural builders: 2-D outlines and their 3-D rings.

No bpy here: every function returns plain tuples of floats. Closed outlines run
counter-clockwise and do not repeat their first point; arcs include both ends.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

Point = tuple[float, float]
TAU = 2 * math.pi


def arc(r: float, a0: float, a1: float, n: int, cx: float = 0.0, cy: float = 0.0,
        noise: Callable[[float], float] | None = None) -> list[Point]:
    """n + 1 points on a circle of radius r around (cx, cy) from angle a0 to a1 (radians);
    `noise(angle)`, if given, is added to the radius."""
    out = []
    for i in range(n + 1):
        a = a0 + (a1 - a0) * i / n
        rr = r + (noise(a) if noise else 0.0)
        out.append((cx + rr * math.cos(a), cy + rr * math.sin(a)))
    return out


def ellipse(a: float, b: float, count: int = 24, cx: float = 0.0, cy: float = 0.0,
            start: float = 0.0) -> list[Point]:
    """`count` points of an ellipse with half axes a (x) and b (y), the first at angle `start`."""
    return superellipse(a, b, 2.0, count, cx, cy, start)


def superellipse(a: float, b: float, n: float = 4.0, count: int = 24, cx: float = 0.0, cy: float = 0.0,
                 start: float = 0.0) -> list[Point]:
    """`count` points of |x/a|^n + |y/b|^n = 1 (n = 2: an ellipse; larger n: squarer)."""
    out = []
    for i in range(count):
        t = start + TAU * i / count
        c, s = math.cos(t), math.sin(t)
        out.append((cx + a * math.copysign(abs(c) ** (2 / n), c), cy + b * math.copysign(abs(s) ** (2 / n), s)))
    return out


def rounded_rect(hx: float, hy: float, r: float, per_corner: int = 4, cx: float = 0.0, cy: float = 0.0,
                 start: float = 0.0) -> list[Point]:
    """A rectangle of half sizes hx, hy with corners rounded by radius r, per_corner + 1 points a
    corner. The first corner is the one whose arc begins at angle `start` (0: the top right
    corner, beginning at its right side; -pi/2: the bottom right one, beginning at its bottom)."""
    quarter = math.pi / 2
    pts = []
    for k in range(4):
        mid = start + (k + 0.5) * quarter
        ox = cx + (1 if math.cos(mid) > 0 else -1) * (hx - r)
        oy = cy + (1 if math.sin(mid) > 0 else -1) * (hy - r)
        for i in range(per_corner + 1):
            a = start + k * quarter + quarter * i / per_corner
            pts.append((ox + r * math.cos(a), oy + r * math.sin(a)))
    return pts


def at_height(points: Sequence[Sequence[float]], z: float) -> list[tuple[float, float, float]]:
    """2-D (x, y) points as a 3-D ring at height z."""
    return [(x, y, z) for x, y in points]


def signed_area(poly: Sequence[Sequence[float]]) -> float:
    """Area of a 2-D polygon: positive when its points run counter-clockwise."""
    return 0.5 * sum(poly[i - 1][0] * poly[i][1] - poly[i][0] * poly[i - 1][1] for i in range(len(poly)))
