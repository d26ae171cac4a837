"""Fit and place the objects of many planned scenes at once (numpy, no bpy).

The planner draws every random number of a scene first (comco/planner.py); this
module only computes with them, over arrays of shape (scenes, MAX_OBJECTS) where
scenes with fewer objects are padded and masked. A batch of a few hundred scenes
costs about as many numpy calls as one scene would, which is what makes 100,000
scenes a matter of seconds. Every element is computed on its own (elementwise
arithmetic, min, max, table look-ups), so a scene's numbers never depend on the
batch it was planned in.

Sizes are image fractions, not world sizes: an object's scale is solved so that
its projected box, times a typical fill, covers the planned share of the image at
its slot. A far slot therefore gets a larger world scale, and the one-large layout
looks the same in every slot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from comco.camera import Camera, silhouette_area
from comco.manifest import ObjectSpec

SLOTS = ("M", "UL", "UR", "BL", "BR")
# Slot centres in normalised image coordinates (u right, v down).
SLOT_UV = {"M": (0.5, 0.5), "UL": (0.2, 0.2), "UR": (0.8, 0.2), "BL": (0.2, 0.8), "BR": (0.8, 0.8)}
MAX_OBJECTS = len(SLOTS)
# An object fills about this share of the silhouette of its bounding box (only the
# planned fractions depend on it; the renderer measures the real ones).
FILL = 0.7
MAX_HEIGHT = 0.6  # of the camera's height above the ground
REF_FRACTION = 0.01  # the fraction at which scales are solved exactly and tabulated
MAX_SPAN = 0.6  # the most of the image width or height one object may span
SLOT_JITTER = 0.035  # of the image side
MARGIN = 0.015  # keep this share of the image side free at the borders
# Boxes may overlap by this share of the smaller one: a box is looser than the object
# inside it, and the renderer measures real occlusion (visible fraction) anyway.
BOX_OVERLAP = 0.3
PLACEMENT_TRIES = 15
TRIES_PER_ROUND = 3  # see Placer.place
YAWS = 361  # whole degrees -180..180: finer turns change nothing a person or a model sees

# Why a scene could not be placed (the planner turns codes into sentences).
OK, TOO_TALL, LOST_RANK, LARGE_TOO_SMALL, NO_ROOM = range(5)


@dataclass
class Placed:
    """What `Placer.place` found, per scene (A,) and per object (A, K)."""

    status: np.ndarray  # (A,) OK or the reason code
    culprit: np.ndarray  # (A,) the object behind a failure (-1 for NO_ROOM)
    scale: np.ndarray  # longest side in scene units
    x: np.ndarray  # ground position
    y: np.ndarray
    u: np.ndarray  # pixel of the ground position (left-to-right orders)
    fraction: np.ndarray  # planned fraction after shrinking too-wide objects


class Placer:
    """Scales, feet and jittered positions for batches of scenes of one object set."""

    def __init__(self, camera: Camera, objects: tuple[ObjectSpec, ...]):
        self.cam = camera
        self.w, self.h = camera.width, camera.height
        self.margin = MARGIN * max(self.w, self.h)
        self.unit_dims = np.array([o.normalized_dimensions(1.0) for o in objects], dtype=float)
        # Taller than this, the top comes so close to the camera that perspective explodes.
        self.cap = np.array([MAX_HEIGHT * camera.location[2] * o.longest_m / o.dimensions_m[2] for o in objects])
        degrees = np.radians(np.arange(-180, 181, dtype=float))
        self.cos, self.sin = np.cos(degrees), np.sin(degrees)
        self.slot_px = np.array([(u * self.w, v * self.h) for u, v in SLOT_UV.values()])
        self.slot_ground = np.stack(camera.ground_points(self.slot_px[:, 0], self.slot_px[:, 1]), axis=-1)
        self._unit = np.full((len(objects), MAX_OBJECTS, YAWS), np.nan)

    # -- scales at the reference fraction, solved once per (object, slot) for every yaw --
    def unit_scales(self, obj: np.ndarray, slot: np.ndarray, yaw: np.ndarray) -> np.ndarray:
        """The scale that covers REF_FRACTION at the slot centre; yaw indexes degrees + 180."""
        missing = np.isnan(self._unit[obj, slot, 0])
        if missing.any():
            for o, s in set(zip(obj[missing].tolist(), slot[missing].tolist())):
                self._unit[o, s] = self._solve(o, s)
        return self._unit[obj, slot, yaw]

    def _solve(self, obj: int, slot: int) -> np.ndarray:
        gx = np.full(YAWS, self.slot_ground[slot, 0])
        gy = np.full(YAWS, self.slot_ground[slot, 1])
        target = REF_FRACTION * self.w * self.h / FILL
        scale = np.ones(YAWS)
        for _ in range(3):  # area ~ scale^2, corrected for perspective by re-projecting
            us, vs = self.cam.box_corners(gx, gy, self.unit_dims[obj] * scale[:, None], self.cos, self.sin)
            scale = scale * np.sqrt(target / np.maximum(silhouette_area(us, vs), 1e-9))
        return scale

    # -- fitting at the slot centres ------------------------------------------------
    def fit(self, obj, slot, yaw, fraction, *, clamp_tall: bool = False):
        """Scale and foot pixel of each object so its box centre sits at its slot centre.

        Returns (scale, box (..., 4), foot_u, foot_v, fraction, too_tall). A too-wide
        object shrinks to span at most MAX_SPAN of the image (its fraction drops), and
        a big object near a corner moves inward until its box is inside the frame.
        With `clamp_tall`, an object taller than the cap is held at the cap instead
        of being reported.
        """
        cam, w, h = self.cam, self.w, self.h
        scale = self.unit_scales(obj, slot, yaw) * np.sqrt(fraction / REF_FRACTION)
        cap = self.cap[obj]
        too_tall = scale > cap
        if clamp_tall:
            scale, too_tall = np.minimum(scale, cap), np.zeros_like(too_tall)
        cos, sin, unit = self.cos[yaw], self.sin[yaw], self.unit_dims[obj]
        gx, gy = self.slot_ground[slot, 0], self.slot_ground[slot, 1]
        box = cam.box_bounds(gx, gy, unit * scale[..., None], cos, sin)
        span = np.maximum((box[..., 2] - box[..., 0]) / w, (box[..., 3] - box[..., 1]) / h)
        shrink = np.minimum(1.0, MAX_SPAN / span)  # flat, thin objects: cover less, not cross the image
        scale = scale * shrink
        dims = unit * scale[..., None]
        box = cam.box_bounds(gx, gy, dims, cos, sin)
        u, v = self.slot_px[slot, 0], self.slot_px[slot, 1]
        foot_u, foot_v = u, np.minimum(2 * v - (box[..., 1] + box[..., 3]) / 2, h * 0.999)
        edge = 2.5 * self.margin
        for _ in range(2):  # move a box that crosses the frame's edge inwards (twice: perspective)
            box = cam.box_bounds(*cam.ground_points(foot_u, foot_v), dims, cos, sin)
            du = np.maximum(0.0, edge - box[..., 0]) - np.maximum(0.0, box[..., 2] - (w - edge))
            dv = np.maximum(0.0, edge - box[..., 1]) - np.maximum(0.0, box[..., 3] - (h - edge))
            foot_u, foot_v = foot_u + du, np.minimum(foot_v + dv, h * 0.999)
        box = cam.box_bounds(*cam.ground_points(foot_u, foot_v), dims, cos, sin)
        return scale, box, foot_u, foot_v, fraction * shrink * shrink, too_tall

    # -- whole scenes ---------------------------------------------------------------
    def place(self, obj, slot, yaw, fraction, ranks, valid, jitter, *, one_large: bool,
              keep_ranks: bool) -> Placed:
        """Fit every object, check sizes, then try jittered positions until one fits.

        obj, slot, yaw, fraction, ranks, valid: (A, K) with K = MAX_OBJECTS (padding is
        masked by `valid`); jitter: (A, T, K, 2) in pixels, tried in order.
        """
        a_count = obj.shape[0]
        scale, box, foot_u, foot_v, frac, too_tall = self.fit(obj, slot, yaw, fraction)
        status = np.full(a_count, OK)
        culprit = np.full(a_count, -1)
        too_tall &= valid
        _fail(status, culprit, too_tall.any(axis=1), np.argmax(too_tall, axis=1), TOO_TALL)
        if keep_ranks:
            lost = (size_ranks(frac, valid) != ranks) & valid
            _fail(status, culprit, lost.any(axis=1), np.argmax(lost, axis=1), LOST_RANK)
        if one_large:
            # A flat or thin object cannot be ComCO's large one; the retry draws another
            # of the same objects to be large, so no object is dropped from the data.
            large = np.argmin(np.where(valid, ranks, MAX_OBJECTS), axis=1)
            rows = np.arange(a_count)
            small = frac[rows, large] < 0.95 * fraction[rows, large]
            _fail(status, culprit, small, large, LARGE_TOO_SMALL)

        # Tries go in rounds of TRIES_PER_ROUND for the scenes still unplaced (most need
        # one round). Within a round, each scene's earliest try whose box fits both as
        # moved and as re-projected exactly wins, as if tried one after another.
        m2 = 2.5 * self.margin  # clamp with a wider margin: the exact re-projection may grow a box
        tries = jitter.shape[1]
        first = np.where(status == OK, tries, -1)  # -1: failed before placement
        x, y, u = np.zeros(obj.shape), np.zeros(obj.shape), np.zeros(obj.shape)
        for lo in range(0, tries, TRIES_PER_ROUND):
            todo = np.flatnonzero(first == tries)
            if not todo.size:
                break
            b = box[todo][:, None]
            jit = jitter[todo, lo:lo + TRIES_PER_ROUND]
            du = np.minimum(np.maximum(jit[..., 0], m2 - b[..., 0]), self.w - m2 - b[..., 2])
            dv = np.minimum(np.maximum(jit[..., 1], m2 - b[..., 1]), self.h - m2 - b[..., 3])
            moved = b + np.stack([du, dv, du, dv], axis=-1)
            r_i, t_i = np.nonzero(self.boxes_fit(moved, np.broadcast_to(valid[todo][:, None], du.shape)))
            a_i = todo[r_i]
            fu = foot_u[a_i] + du[r_i, t_i]
            gx, gy = self.cam.ground_points(fu, np.minimum(foot_v[a_i] + dv[r_i, t_i], self.h * 0.999))
            dims = self.unit_dims[obj[a_i]] * scale[a_i][..., None]
            exact = self.cam.box_bounds(gx, gy, dims, self.cos[yaw[a_i]], self.sin[yaw[a_i]])
            ok = np.flatnonzero(self.boxes_fit(exact, valid[a_i]))
            # Rows come ordered by scene, then try: a scene's first ok row is its earliest try.
            rows = ok[np.unique(a_i[ok], return_index=True)[1]]
            won = a_i[rows]
            first[won] = lo + t_i[rows]
            x[won], y[won], u[won] = gx[rows], gy[rows], fu[rows]
        status[(status == OK) & (first == tries)] = NO_ROOM
        return Placed(status=status, culprit=culprit, scale=scale, x=x, y=y, u=u, fraction=frac)

    def boxes_fit(self, boxes: np.ndarray, valid: np.ndarray, margin: float | None = None) -> np.ndarray:
        return boxes_fit(boxes, valid, self.w, self.h, self.margin if margin is None else margin)


def boxes_fit(boxes: np.ndarray, valid: np.ndarray, w: float, h: float, margin: float) -> np.ndarray:
    """Per scene: every box inside the frame (less the margin) and no two overlapping much.

    boxes (..., K, 4) as (u0, v0, u1, v1); valid (..., K) masks padding.
    """
    b0, b1, b2, b3 = boxes[..., 0], boxes[..., 1], boxes[..., 2], boxes[..., 3]
    inside = (b0 >= margin) & (b1 >= margin) & (b2 <= w - margin) & (b3 <= h - margin)
    ok = (inside | ~valid).all(axis=-1)
    i, j = np.triu_indices(boxes.shape[-2], k=1)
    ow = np.minimum(b2[..., i], b2[..., j]) - np.maximum(b0[..., i], b0[..., j])
    oh = np.minimum(b3[..., i], b3[..., j]) - np.maximum(b1[..., i], b1[..., j])
    area = (b2 - b0) * (b3 - b1)
    clash = (ow > 0) & (oh > 0) & (ow * oh > BOX_OVERLAP * np.minimum(area[..., i], area[..., j]))
    return ok & ~(clash & valid[..., i] & valid[..., j]).any(axis=-1)


def size_ranks(fraction: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Size ranks (0 = largest) per scene; ties go to the lower index, padding last."""
    order = np.argsort(np.where(valid, -fraction, np.inf), axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(order.shape[1])[None, :].repeat(order.shape[0], 0), axis=1)
    return ranks


def _fail(status: np.ndarray, culprit: np.ndarray, failed: np.ndarray, who: np.ndarray, code: int) -> None:
    """Record the first reason each scene failed for."""
    new = failed & (status == OK)
    status[new] = code
    culprit[new] = who[new]
