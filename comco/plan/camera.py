"""A pinhole camera (Python and numpy, no bpy) that matches Blender's perspective camera.

The planner uses it to place objects inside the view before Blender runs, and
the renderer builds the Blender camera from the same numbers, so what the plan
expects to be in frame is what Blender sees. Conventions: world z is up, the
ground is z = 0, image u grows to the right and v grows downwards (pixels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

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

    # -- many at once (numpy): the planner fits and places whole batches of scenes ------
    # Only elementwise arithmetic, min and max: an element's result does not depend on
    # the shape of the batch it was computed in, so plans stay identical however they
    # are chunked over processes.

    def ground_points(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) where the rays through pixels (u, v) meet the ground z = 0 (any shape)."""
        (rx, ry, rz), (ux, uy, uz), (fx, fy, fz) = self.basis
        f = self.focal_px
        x = (u - self.width / 2) / f
        y = -(v - self.height / 2) / f
        t = -self.location[2] / (fz + x * rz + y * uz)
        return self.location[0] + t * (fx + x * rx + y * ux), self.location[1] + t * (fy + x * ry + y * uy)

    def box_corners(self, x: np.ndarray, y: np.ndarray, dims: np.ndarray, cos: np.ndarray,
                    sin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pixels (us, vs), shape (..., 8), of the corners of yawed boxes standing on the ground.

        x, y, cos, sin: shape (...); dims (..., 3) = width, depth, height. Corner k has
        signs (CORNER_X, CORNER_Y) and sits on the top face when CORNER_TOP[k] is 1.
        """
        right, up, forward = self.basis
        f = self.focal_px
        lx, ly, lz = self.location
        dx = dims[..., 0:1] * (0.5 * CORNER_X)
        dy = dims[..., 1:2] * (0.5 * CORNER_Y)
        c, s = cos[..., None], sin[..., None]
        px = (x[..., None] - lx) + c * dx - s * dy
        py = (y[..., None] - ly) + s * dx + c * dy
        pz = dims[..., 2:3] * CORNER_TOP - lz
        depth = px * forward[0] + py * forward[1] + pz * forward[2]
        us = self.width / 2 + f * (px * right[0] + py * right[1] + pz * right[2]) / depth
        vs = self.height / 2 - f * (px * up[0] + py * up[1] + pz * up[2]) / depth
        return us, vs

    def box_bounds(self, x: np.ndarray, y: np.ndarray, dims: np.ndarray, cos: np.ndarray,
                   sin: np.ndarray) -> np.ndarray:
        """Image boxes (..., 4) = (u0, v0, u1, v1) of yawed boxes standing on the ground."""
        us, vs = self.box_corners(x, y, dims, cos, sin)
        return np.stack([us.min(-1), vs.min(-1), us.max(-1), vs.max(-1)], axis=-1)

    def box_bounds_one(self, center: Vec3, dims: Vec3, yaw: float) -> tuple[float, float, float, float]:
        """`box_bounds` for a single box (checks and tests)."""
        b = self.box_bounds(np.array(center[0]), np.array(center[1]), np.asarray(dims, dtype=float),
                            np.array(math.cos(yaw)), np.array(math.sin(yaw)))
        return tuple(float(c) for c in b)  # type: ignore[return-value]


# The 8 corners of a box, in the order the faces below index them.
CORNER_X = np.array([-1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 1.0])
CORNER_Y = np.array([-1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, 1.0])
CORNER_TOP = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0])
BOX_FACES = np.array([[0, 2, 3, 1], [4, 6, 7, 5], [0, 4, 5, 1], [2, 6, 7, 3], [0, 4, 6, 2], [1, 5, 7, 3]])


def silhouette_area(us: np.ndarray, vs: np.ndarray) -> np.ndarray:
    """Area of the projected outline of boxes from their corner pixels (..., 8).

    Seen from outside a convex body, every point of its outline is covered once by a
    front face and once by a back face, so the outline's area is half the summed
    areas of the six projected faces (shoelace formula per face).
    """
    fu, fv = us[..., BOX_FACES], vs[..., BOX_FACES]  # (..., 6, 4)
    nu, nv = np.roll(fu, -1, axis=-1), np.roll(fv, -1, axis=-1)
    cross = fu * nv - nu * fv
    faces = np.abs(cross[..., 0] + cross[..., 1] + cross[..., 2] + cross[..., 3]) / 2
    return (faces[..., 0] + faces[..., 1] + faces[..., 2] + faces[..., 3] + faces[..., 4] + faces[..., 5]) / 2
