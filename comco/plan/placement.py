"""Fit and place the objects of many planned scenes at once (numpy, no bpy).

The planner draws every random number of a scene first (comco/planner.py); this
module only computes with them, over arrays of shape (scenes, MAX_OBJECTS) where
scenes with fewer objects are padded and masked. A batch of a few hundred scenes
costs about as many numpy calls as one scene would, which is what makes 100,000
scenes a matter of seconds. Every element is computed on its own (elementwise
arithmetic, min, max, table look-ups), so a scene's numbers never depend on the
batch it was planned in.

Sizes are image fractions, not world sizes: an object's scale is solved so that
its projected box, times the object's fill, covers the planned share of the image at
its slot. A far slot therefore gets a larger world scale, and the one-large layout
looks the same in every slot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from comco.manifest import ObjectSpec
from comco.plan.camera import Camera, silhouette_area
from comco.record import MAX_OBJECTS

# Slot centres in normalised image coordinates (u right, v down).
SLOT_UV = {"M": (0.5, 0.5), "UL": (0.2, 0.2), "UR": (0.8, 0.2), "BL": (0.2, 0.8), "BR": (0.8, 0.8)}
# An object covers about this share of the outline of its bounding box, unless its
# manifest says how much (`fill`, measured by `comco objects calibrate`). Only the
# planned sizes depend on it; the renderer measures the real ones.
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
# The one-large layout's large object must cover at least this many times the share of
# the largest small one (it asks for 7 % against 0.5-1 %, and a bicycle or a pair of
# skis that cannot cover 7 % without crossing the image still qualifies at 3 %).
LARGE_OVER_SMALL = 3.0
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
    fraction: np.ndarray  # planned fraction after holding too-tall and shrinking too-wide objects
    tries: np.ndarray | None = None  # (A,) the jitter try that fitted (pair variants reuse it)


class Placer:
    """Scales, feet and jittered positions for batches of scenes of one object set."""

    def __init__(self, camera: Camera, objects: tuple[ObjectSpec, ...]):
        self.cam = camera
        self.w, self.h = camera.width, camera.height
        self.margin = MARGIN * max(self.w, self.h)
        self.unit_dims = np.array([o.normalized_dimensions(1.0) for o in objects], dtype=float)
        self.fill = np.array([o.fill or FILL for o in objects])
        # Taller than this, the top comes so close to the camera that perspective explodes.
        self.cap = np.array([MAX_HEIGHT * camera.location[2] * o.longest_m / o.dimensions_m[2] for o in objects])
        degrees = np.radians(np.arange(-180, 181, dtype=float))
        self.cos, self.sin = np.cos(degrees), np.sin(degrees)
        self.slot_px = np.array([(u * self.w, v * self.h) for u, v in SLOT_UV.values()])
        self.slot_ground = np.stack(camera.ground_points(self.slot_px[:, 0], self.slot_px[:, 1]), axis=-1)
        self._unit = np.full((len(objects), MAX_OBJECTS, YAWS), np.nan)
        self._span = np.full((len(objects), MAX_OBJECTS, YAWS), np.nan)  # box span at that scale

    # -- scales at the reference fraction, solved once per (object, slot, yaw) when first asked --
    def unit_scales(self, obj: np.ndarray, slot: np.ndarray, yaw: np.ndarray) -> np.ndarray:
        """The scale that covers REF_FRACTION at the slot centre; yaw indexes degrees + 180.

        Only the (object, slot, turn) entries asked for are solved (each on its own: the same
        numbers whichever are solved together), so a camera of the camera factor
        (comco/plan/cameras.py) pays for the entries its images use, not for every turn."""
        missing = np.isnan(self._unit[obj, slot, yaw])
        if missing.any():
            asked = np.stack(np.broadcast_arrays(obj, slot, yaw), axis=-1)[missing]
            triples = np.unique(asked, axis=0)
            for group in np.array_split(triples, -(-len(triples) // 8192)):  # ~10 MB of temporaries
                o, s, y = group[:, 0], group[:, 1], group[:, 2]
                self._unit[o, s, y], self._span[o, s, y] = self._solve(o, s, y)
        return self._unit[obj, slot, yaw]

    def can_be_large(self, obj: np.ndarray, slot: np.ndarray, yaw: np.ndarray, fraction: np.ndarray,
                     floor: np.ndarray) -> np.ndarray:
        """Whether each object, asked to cover `fraction` at that slot and turn, would still
        cover `floor` once held at the height cap and shrunk to MAX_SPAN (by the tables and
        the square-root law; `place` checks exactly).

        Long flat things (skis) and sparse ones (a bicycle) often cannot be the large object
        of a one-large scene; the planner picks the large one among those that can, instead
        of finding out by failing.
        """
        grow = np.sqrt(fraction / REF_FRACTION)
        scale = self.unit_scales(obj, slot, yaw) * grow
        held = np.minimum(1.0, self.cap[obj] / scale)
        shrink = np.minimum(1.0, MAX_SPAN / (self._span[obj, slot, yaw] * grow * held))
        return fraction * (held * shrink) ** 2 >= floor

    def _solve(self, obj: np.ndarray, slot: np.ndarray, yaw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scales (n,) for (object, slot, turn) triples, and the span of the box at that scale
        (its larger side over the image's)."""
        gx, gy = self.slot_ground[slot, 0], self.slot_ground[slot, 1]
        cos, sin = self.cos[yaw], self.sin[yaw]
        target = REF_FRACTION * self.w * self.h / self.fill[obj]
        unit = self.unit_dims[obj]
        scale = np.ones(len(obj))
        for _ in range(3):  # area ~ scale^2, corrected for perspective by re-projecting
            us, vs = self.cam.box_corners(gx, gy, unit * scale[..., None], cos, sin)
            scale = scale * np.sqrt(target / np.maximum(silhouette_area(us, vs), 1e-9))
        us, vs = self.cam.box_corners(gx, gy, unit * scale[..., None], cos, sin)
        span = np.maximum((us.max(-1) - us.min(-1)) / self.w, (vs.max(-1) - vs.min(-1)) / self.h)
        return scale, span

    # -- fitting at the slot centres ------------------------------------------------
    def fit(self, obj, slot, yaw, fraction, *, clamp_tall: bool = False):
        """Scale and foot pixel of each object so its box centre sits at its slot centre.

        Returns (scale, box (..., 4), foot_u, foot_v, fraction, too_tall). A too-wide
        object shrinks to span at most MAX_SPAN of the image (its fraction drops), and
        a big object near a corner moves inward until its box is inside the frame.
        With `clamp_tall`, an object taller than the cap is held at the cap instead
        of being reported (its fraction drops too).
        """
        cam, w, h = self.cam, self.w, self.h
        cos, sin, unit = self.cos[yaw], self.sin[yaw], self.unit_dims[obj]
        gx, gy = self.slot_ground[slot, 0], self.slot_ground[slot, 1]
        cap = self.cap[obj]
        # Start from the tables (square-root law), held where the tables say the object
        # would be too tall or too wide: far past those, perspective breaks down.
        table = self.unit_scales(obj, slot, yaw)
        start = np.minimum(np.minimum(table * np.sqrt(fraction / REF_FRACTION),
                                      table * MAX_SPAN / self._span[obj, slot, yaw]), cap)
        us, vs = cam.box_corners(gx, gy, unit * start[..., None], cos, sin)
        # One step on the real outline gives the scale for `fraction` (a large object's
        # near top grows faster than the square-root law says) ...
        covered = silhouette_area(us, vs) * self.fill[obj] / (w * h)
        exact = start * np.sqrt(fraction / np.maximum(covered, 1e-12))
        # ... which a thin object may not reach within MAX_SPAN (the span grows about
        # linearly with the scale), nor a tall one under the cap.
        span = np.maximum((us.max(-1) - us.min(-1)) / w, (vs.max(-1) - vs.min(-1)) / h)
        scale = np.minimum(exact, start * MAX_SPAN / span)
        too_tall = scale > cap
        if clamp_tall:
            scale, too_tall = np.minimum(scale, cap), np.zeros_like(too_tall)
        reached = fraction * (scale / exact) ** 2
        dims = unit * scale[..., None]
        box = cam.box_bounds(gx, gy, dims, cos, sin)
        u, v = self.slot_px[slot, 0], self.slot_px[slot, 1]
        foot_u, foot_v = u.copy(), np.minimum(2 * v - (box[..., 1] + box[..., 3]) / 2, h * 0.999)
        box = cam.box_bounds(*cam.ground_points(foot_u, foot_v), dims, cos, sin)
        edge = 2.5 * self.margin
        for _ in range(2):  # move a box that crosses the frame's edge inwards (twice: perspective)
            du = np.maximum(0.0, edge - box[..., 0]) - np.maximum(0.0, box[..., 2] - (w - edge))
            dv = np.maximum(0.0, edge - box[..., 1]) - np.maximum(0.0, box[..., 3] - (h - edge))
            moving = np.nonzero((du != 0) | (dv != 0))
            if not moving[0].size:
                break
            foot_u[moving] += du[moving]
            foot_v[moving] = np.minimum(foot_v[moving] + dv[moving], h * 0.999)
            box[moving] = cam.box_bounds(*cam.ground_points(foot_u[moving], foot_v[moving]), dims[moving],
                                         cos[moving], sin[moving])
        return scale, box, foot_u, foot_v, reached, too_tall

    # -- whole scenes ---------------------------------------------------------------
    def place(self, obj, slot, yaw, fraction, ranks, valid, jitter, *, one_large: bool,
              keep_ranks: bool) -> Placed:
        """Fit every object, check sizes, then try jittered positions until one fits.

        obj, slot, yaw, fraction, ranks, valid: (A, K) with K = MAX_OBJECTS (padding is
        masked by `valid`); jitter: (A, T, K, 2) in pixels, tried in order.
        """
        a_count = obj.shape[0]
        # One-large: a tall object is held at the height cap, a wide one shrinks; it stays
        # the large one while it covers LARGE_OVER_SMALL times the largest small one.
        scale, box, foot_u, foot_v, frac, too_tall = self.fit(obj, slot, yaw, fraction, clamp_tall=one_large)
        core = np.minimum(1.0, np.sqrt(self.fill[obj] / FILL))  # objects at the typical fill: whole boxes
        status = np.full(a_count, OK)
        culprit = np.full(a_count, -1)
        too_tall &= valid
        _fail(status, culprit, too_tall.any(axis=1), np.argmax(too_tall, axis=1), TOO_TALL)
        if keep_ranks:
            lost = (size_ranks(frac, valid) != ranks) & valid
            _fail(status, culprit, lost.any(axis=1), np.argmax(lost, axis=1), LOST_RANK)
        if one_large:
            large = np.argmin(np.where(valid, ranks, MAX_OBJECTS), axis=1)
            rows = np.arange(a_count)
            biggest_small = np.where(valid & (ranks > 0), frac, 0.0).max(axis=1)
            small = frac[rows, large] < LARGE_OVER_SMALL * biggest_small
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
            r_i, t_i = np.nonzero(self.boxes_fit(moved, np.broadcast_to(valid[todo][:, None], du.shape),
                                                 np.broadcast_to(core[todo][:, None], du.shape)))
            a_i = todo[r_i]
            fu = foot_u[a_i] + du[r_i, t_i]
            gx, gy = self.cam.ground_points(fu, np.minimum(foot_v[a_i] + dv[r_i, t_i], self.h * 0.999))
            dims = self.unit_dims[obj[a_i]] * scale[a_i][..., None]
            exact = self.cam.box_bounds(gx, gy, dims, self.cos[yaw[a_i]], self.sin[yaw[a_i]])
            ok = np.flatnonzero(self.boxes_fit(exact, valid[a_i], core[a_i]))
            # Rows come ordered by scene, then try: a scene's first ok row is its earliest try.
            rows = ok[np.unique(a_i[ok], return_index=True)[1]]
            won = a_i[rows]
            first[won] = lo + t_i[rows]
            x[won], y[won], u[won] = gx[rows], gy[rows], fu[rows]
        status[(status == OK) & (first == tries)] = NO_ROOM
        return Placed(status=status, culprit=culprit, scale=scale, x=x, y=y, u=u, fraction=frac, tries=first)

    def boxes_fit(self, boxes: np.ndarray, valid: np.ndarray, core: np.ndarray | None = None) -> np.ndarray:
        return boxes_fit(boxes, valid, self.w, self.h, self.margin, core)


def boxes_fit(boxes: np.ndarray, valid: np.ndarray, w: float, h: float, margin: float,
              core: np.ndarray | None = None) -> np.ndarray:
    """Per scene: every box inside the frame (less the margin) and no two overlapping much.

    boxes (..., K, 4) as (u0, v0, u1, v1); valid (..., K) masks padding. Overlap is
    judged on each box shrunk about its centre by `core` (..., K): a sparse object (an
    airplane, a bicycle) leaves most of its box empty for its neighbours.
    """
    b0, b1, b2, b3 = boxes[..., 0], boxes[..., 1], boxes[..., 2], boxes[..., 3]
    inside = (b0 >= margin) & (b1 >= margin) & (b2 <= w - margin) & (b3 <= h - margin)
    ok = (inside | ~valid).all(axis=-1)
    if core is not None:
        cu, cv = (b0 + b2) / 2, (b1 + b3) / 2
        hu, hv = core * (b2 - b0) / 2, core * (b3 - b1) / 2
        b0, b1, b2, b3 = cu - hu, cv - hv, cu + hu, cv + hv
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
