"""A pinhole camera in pure Python that matches Blender's perspective camera.

The planner uses it to place objects inside the view before Blender runs, and
the renderer builds the Blender camera from the same numbers, so what the plan
expects to be in frame is what Blender sees. Conventions: world z is up, the
ground is z = 0, image u grows to the right and v grows downwards (pixels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

Vec3 = tuple[float, float, float]

# ComCO's look: a camera tilted down at the ground from the front (-y side).
DEFAULT_ELEVATION_DEG = 40.0
DEFAULT_DISTANCE = 16.0
DEFAULT_LENS_MM = 45.0
SENSOR_MM = 36.0


def _sub(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _dot(a: Vec3, b: Vec3) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a: Vec3, b: Vec3) -> Vec3:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _unit(a: Vec3) -> Vec3:
    n = math.sqrt(_dot(a, a))
    return (a[0] / n, a[1] / n, a[2] / n)


@dataclass(frozen=True)
class Camera:
    location: Vec3
    look_at: Vec3
    lens_mm: float
    width: int
    height: int
    sensor_mm: float = SENSOR_MM

    @classmethod
    def default(cls, width: int, height: int, elevation_deg: float = DEFAULT_ELEVATION_DEG,
                distance: float = DEFAULT_DISTANCE, lens_mm: float = DEFAULT_LENS_MM) -> "Camera":
        el = math.radians(elevation_deg)
        loc = (0.0, -distance * math.cos(el), distance * math.sin(el))
        return cls(location=loc, look_at=(0.0, 0.0, 0.0), lens_mm=lens_mm, width=width, height=height)

    def to_record(self) -> dict:
        return {"location": [round(c, 6) for c in self.location],
                "look_at": list(self.look_at), "lens_mm": self.lens_mm, "sensor_mm": self.sensor_mm}

    @classmethod
    def from_record(cls, rec: dict, width: int, height: int) -> "Camera":
        return cls(location=tuple(rec["location"]), look_at=tuple(rec["look_at"]),
                   lens_mm=rec["lens_mm"], width=width, height=height, sensor_mm=rec.get("sensor_mm", SENSOR_MM))

    # Blender fits the sensor width to the larger image side (sensor_fit AUTO).
    @cached_property
    def focal_px(self) -> float:
        return self.lens_mm / self.sensor_mm * max(self.width, self.height)

    @cached_property
    def basis(self) -> tuple[Vec3, Vec3, Vec3]:
        """(right, up, forward) unit vectors of the camera in world space."""
        forward = _unit(_sub(self.look_at, self.location))
        right = _unit(_cross(forward, (0.0, 0.0, 1.0)))
        up = _cross(right, forward)
        return right, up, forward

    def project(self, p: Vec3) -> tuple[float, float, float]:
        """World point -> (u, v, depth) in pixels; depth > 0 in front of the camera."""
        right, up, forward = self.basis
        d = _sub(p, self.location)
        z = _dot(d, forward)
        f = self.focal_px
        u = self.width / 2 + f * _dot(d, right) / z
        v = self.height / 2 - f * _dot(d, up) / z
        return u, v, z

    def ground_point(self, u: float, v: float) -> Vec3:
        """Where the ray through pixel (u, v) meets the ground plane z = 0."""
        right, up, forward = self.basis
        f = self.focal_px
        x = (u - self.width / 2) / f
        y = -(v - self.height / 2) / f
        ray = tuple(forward[i] + x * right[i] + y * up[i] for i in range(3))
        if ray[2] >= 0:
            raise ValueError(f"pixel ({u}, {v}) looks above the horizon")
        t = -self.location[2] / ray[2]
        return tuple(self.location[i] + t * ray[i] for i in range(3))  # type: ignore[return-value]

    @cached_property
    def _rows(self) -> tuple:
        """Projection rows premultiplied by the focal length (hot path of the planner)."""
        right, up, forward = self.basis
        f = self.focal_px
        return (tuple(f * c for c in right), tuple(-f * c for c in up), forward, self.location,
                self.width / 2, self.height / 2)

    def box_bounds(self, center: Vec3, dims: Vec3, yaw: float) -> tuple[float, float, float, float]:
        """Image-space bounding box (u0, v0, u1, v1) of a yawed box resting on the ground."""
        us, vs = self.box_corners(center, dims, yaw)
        return min(us), min(vs), max(us), max(vs)

    def box_corners(self, center: Vec3, dims: Vec3, yaw: float) -> tuple[list[float], list[float]]:
        """Image positions (us, vs) of the 8 corners of a yawed box resting on the ground."""
        (rx, ry, rz), (ux, uy, uz), (fx, fy, fz), (lx, ly, lz), cu, cv = self._rows
        c, s = math.cos(yaw), math.sin(yaw)
        hw, hd = dims[0] / 2, dims[1] / 2
        bx, by, z0 = center[0] - lx, center[1] - ly, center[2] - lz
        us, vs = [], []
        for dx, dy in ((-hw, -hd), (-hw, hd), (hw, -hd), (hw, hd)):
            x = bx + c * dx - s * dy
            y = by + s * dx + c * dy
            for z in (z0, z0 + dims[2]):
                depth = x * fx + y * fy + z * fz
                us.append(cu + (x * rx + y * ry + z * rz) / depth)
                vs.append(cv + (x * ux + y * uy + z * uz) / depth)
        return us, vs


def hull_area(us: list[float], vs: list[float]) -> float:
    """Area of the convex hull of 2-D points (monotone chain): a box's silhouette."""
    pts = sorted(zip(us, vs))

    def half(points):
        chain: list = []
        for p in points:
            while len(chain) >= 2 and ((chain[-1][0] - chain[-2][0]) * (p[1] - chain[-2][1])
                                       - (chain[-1][1] - chain[-2][1]) * (p[0] - chain[-2][0])) <= 0:
                chain.pop()
            chain.append(p)
        return chain

    hull = half(pts)[:-1] + half(pts[::-1])[:-1]
    return abs(sum(hull[i][0] * hull[i - 1][1] - hull[i - 1][0] * hull[i][1] for i in range(len(hull)))) / 2
