"""The camera factor: elevation, azimuth, focal length and distance drawn per image from
ranges around ComCO's camera (40 degrees, from the front, 45 mm, 16 units: the default).

Sizes and slots live in the image (comco/plan/placement.py): an object is scaled so it covers
its planned share at its slot, whatever the camera. So each image is placed with the camera of
its drawn elevation and focal length, and the azimuth and the distance then turn and scale the
whole placed scene about the look-at point (objects, their turns and sizes, and the camera):
the picture of the objects is the one placed, while the floor, the lights and the world are
seen from elsewhere. Upper-left stays upper-left in the image, and planned shares hold.

Elevation and focal length are drawn on a grid from the range's low end (ELEVATION_STEP
degrees, LENS_STEP mm), so a
plan has a bounded number of placement cameras (each solves its own size tables, kept in a
cache); azimuth and distance are continuous. One camera per image, drawn from its own
stream of the image's first attempt, so a retry keeps it (a camera that is hard to fill is
not under-represented). Recorded as the record's camera's `elevation_deg`, `azimuth_deg` and
`distance` only when a camera option is given, so datasets without them stay byte-identical.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, fields

import numpy as np

from comco.errors import UserError
from comco.plan import placement as pl
from comco.plan.camera import DEFAULT_DISTANCE, DEFAULT_ELEVATION_DEG, DEFAULT_LENS_MM, Camera
from comco.plan.factors import stream
from comco.plan.rng import Reseedable, image_seed

# Each placement camera solves its own size tables (~0.3 s for 72 objects, ~2 MB): a grid of
# 5 degrees and 5 mm keeps a wide range (30..60 x 35..70) to 56 of them, all cached.
ELEVATION_STEP = 5.0  # degrees
LENS_STEP = 5.0  # mm
CACHED = 64  # placement cameras kept
# The highest image row an upper-slot object's foot takes (TOP_ROW) must meet the ground
# within this many default distances: past it the upper slots lie near the horizon and
# their objects would be giants far away.
FARTHEST = 4.0
TOP_ROW = 0.15  # of the image height: the upper slots' centres (0.2) less their jitter
OPTIONS = ("camera_elevation", "camera_azimuth", "camera_lens", "camera_distance")


@dataclass(frozen=True)
class View:
    """One image's camera: the placement camera's elevation and lens, and the turn and the
    distance the placed scene is seen from."""

    elevation: float
    azimuth: float
    lens: float
    distance: float

    @property
    def key(self) -> tuple[float, float]:
        return self.elevation, self.lens

    @property
    def scale(self) -> float:
        return self.distance / DEFAULT_DISTANCE


def _grid(lo: float, hi: float, step: float) -> np.ndarray:
    """The grid from the low end: lo, lo + step, ... up to hi (rounded to 0.01)."""
    return np.round(lo + step * np.arange(int(math.floor((hi - lo) / step + 1e-9)) + 1), 2)


class CameraPlacers:
    """Per image, its View and the Placer of its placement camera (`for_images`)."""

    def __init__(self, cfg, objects, default: pl.Placer):
        self.cfg, self.objects, self.default = cfg, objects, default
        self.recorded = any(getattr(cfg, o) != _default(o) for o in OPTIONS)
        self.elevations = _grid(*cfg.camera_elevation, ELEVATION_STEP)
        self.lenses = _grid(*cfg.camera_lens, LENS_STEP)
        self._cache: OrderedDict[tuple[float, float], pl.Placer] = OrderedDict()
        self._views: dict[int, View] = {}
        self._rng = Reseedable()
        if self.recorded:
            self.check_horizon()

    def view(self, index: int) -> View:
        v = self._views.get(index)
        if v is None:
            if len(self._views) > 1 << 16:
                self._views.clear()
            cfg = self.cfg
            rng = stream(image_seed(cfg.seed, index, 0), "camera", self._rng)
            u = rng.random(4)  # four draws always
            el = float(self.elevations[min(int(u[0] * len(self.elevations)), len(self.elevations) - 1)])
            lens = float(self.lenses[min(int(u[2] * len(self.lenses)), len(self.lenses) - 1)])
            az = round(cfg.camera_azimuth[0] + u[1] * (cfg.camera_azimuth[1] - cfg.camera_azimuth[0]), 3)
            dist = round(cfg.camera_distance[0] + u[3] * (cfg.camera_distance[1] - cfg.camera_distance[0]), 4)
            v = self._views[index] = View(el, az, lens, dist)
        return v

    def camera(self, key: tuple[float, float]) -> Camera:
        w, h = self.cfg.resolution
        return Camera.default(w, h, elevation_deg=key[0], lens_mm=key[1])

    def placer(self, key: tuple[float, float]) -> pl.Placer:
        if key == (DEFAULT_ELEVATION_DEG, DEFAULT_LENS_MM):
            return self.default
        p = self._cache.get(key)
        if p is None:
            p = self._cache[key] = pl.Placer(self.camera(key), self.objects)
            if len(self._cache) > CACHED:
                self._cache.popitem(last=False)
        self._cache.move_to_end(key)
        return p

    def for_images(self, indices: list[int]):
        """A placer for a batch whose row a is image indices[a]: the default one when the camera
        is today's, else one that places each row with its image's camera."""
        if not self.recorded:
            return self.default
        return _Grouped(self, [self.view(i).key for i in indices])

    def record(self, index: int) -> dict | None:
        """The record's camera of image `index`, or None (today's camera, from the planner)."""
        if not self.recorded:
            return None
        v = self.view(index)
        cam = self.camera(v.key)
        x, y, _ = turn(np.array(cam.location[0]), np.array(cam.location[1]), v)
        rec = cam.to_record()
        rec["location"] = [round(float(x), 6), round(float(y), 6), round(cam.location[2] * v.scale, 6)]
        rec.update(elevation_deg=v.elevation, azimuth_deg=v.azimuth, distance=v.distance)
        return rec

    def corners(self) -> list[tuple[float, float]]:
        """The placement cameras at the ranges' ends (elevation, lens)."""
        return [(float(el), float(lens)) for el in sorted({self.elevations[0], self.elevations[-1]})
                for lens in sorted({self.lenses[0], self.lenses[-1]})]

    def check_horizon(self) -> None:
        """Refuse (one line naming the option) a range whose extreme cameras see the upper slots
        at or near the horizon, where no object can stand in view at its planned share."""
        for el, lens in self.corners():
            cam = self.camera((el, lens))
            _, up, forward = cam.basis
            y = (cam.height / 2 - TOP_ROW * cam.height) / cam.focal_px
            ray_z = forward[2] + y * up[2]
            if ray_z >= 0 or cam.location[2] / -ray_z > FARTHEST * DEFAULT_DISTANCE:
                flag = "--camera-elevation" if self.cfg.camera_elevation[0] < DEFAULT_ELEVATION_DEG else "--camera-lens"
                raise UserError(f"{flag}: at {el:g} degrees and {lens:g} mm the top of the image looks at or near "
                                f"the horizon, so the upper slots cannot hold objects in view; raise "
                                f"--camera-elevation or lengthen --camera-lens")

    def check(self, check_large_fraction) -> None:
        """Every extreme camera must let some object be the large one (`check_large_fraction`
        of its Placer and a description of the camera)."""
        if self.recorded:
            for el, lens in self.corners():
                check_large_fraction(self.placer((el, lens)), f"{el:g} degrees, {lens:g} mm")


class _Grouped:
    """Placer's `can_be_large` and `place` for rows of different cameras: each group of rows
    with one camera goes to its Placer (elementwise, so a row's result is what it would be
    alone), and the results are put back in row order."""

    def __init__(self, placers: CameraPlacers, keys: list[tuple[float, float]]):
        self.placers = placers
        self.groups: dict[tuple[float, float], np.ndarray] = {}
        for a, k in enumerate(keys):
            self.groups.setdefault(k, []).append(a)
        self.groups = {k: np.asarray(v, dtype=np.intp) for k, v in self.groups.items()}
        self.rows = len(keys)

    def can_be_large(self, *arrays):
        out = None
        for key, rows in self.groups.items():
            got = self.placers.placer(key).can_be_large(*(a[rows] for a in arrays))
            if out is None:
                out = np.empty((self.rows, *got.shape[1:]), dtype=got.dtype)
            out[rows] = got
        return out

    def place(self, *arrays, **kw) -> pl.Placed:
        parts = [(rows, self.placers.placer(key).place(*(a[rows] for a in arrays), **kw))
                 for key, rows in self.groups.items()]
        merged = {}
        for f in fields(pl.Placed):
            first = getattr(parts[0][1], f.name)
            if first is None:
                merged[f.name] = None
                continue
            out = np.empty((self.rows, *first.shape[1:]), dtype=first.dtype)
            for rows, placed in parts:
                out[rows] = getattr(placed, f.name)
            merged[f.name] = out
        return pl.Placed(**merged)


def turn(x: np.ndarray, y: np.ndarray, view: View) -> tuple[np.ndarray, np.ndarray, float]:
    """Ground points of the placement frame turned by the view's azimuth and scaled by its distance."""
    phi = math.radians(view.azimuth)
    c, s, k = math.cos(phi), math.sin(phi), view.scale
    return k * (c * x - s * y), k * (s * x + c * y), k


def _default(name: str):
    from comco.plan.options import by_name

    return by_name()[name].default
