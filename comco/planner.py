"""The planner: decides everything about every image before Blender runs.

Pure Python and seeded per image. A plan is a stream of scene records (see
docs/dev/contract.md); the renderer only realises them and adds what it measured.

Sizes are planned as image fractions, not world sizes: each object's scale is
solved so that its projected bounding box, times a typical fill, covers the
planned share of the image wherever its slot puts it. A far slot therefore gets a
larger world scale, and the one-large layout looks the same in every slot.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterator

import numpy as np

from comco import captions as cap
from comco.camera import Camera, hull_area
from comco.errors import UserError
from comco.manifest import ObjectSet, ObjectSpec
from comco.orders import POLICIES, mention_orders
from comco.rng import generator, image_seed

SLOTS = ("M", "UL", "UR", "BL", "BR")
# Slot centres in normalised image coordinates (u right, v down).
SLOT_UV = {"M": (0.5, 0.5), "UL": (0.2, 0.2), "UR": (0.8, 0.2), "BL": (0.2, 0.8), "BR": (0.8, 0.8)}
LAYOUTS = ("one-large", "equal", "graded", "realistic")
MAX_OBJECTS = len(SLOTS)
# An object fills about this share of the silhouette of its bounding box (only the
# planned fractions depend on it; the renderer measures the real ones).
FILL = 0.7
MAX_HEIGHT = 0.6  # of the camera's height above the ground
REF_FRACTION = 0.01  # the fraction at which fits are solved exactly and cached
MAX_SPAN = 0.6  # the most of the image width or height one object may span
SLOT_JITTER = 0.035  # of the image side
MARGIN = 0.015  # keep this share of the image side free at the borders
# Boxes may overlap by this share of the smaller one: a box is looser than the object
# inside it, and the renderer measures real occlusion (visible fraction) anyway.
BOX_OVERLAP = 0.3
PLACEMENT_TRIES = 15
SCENE_RETRIES = 30
OBJECT_RETRIES = 10  # placements tried with the same objects before drawing new ones


@dataclass(frozen=True)
class PlanConfig:
    object_set: str = "comco"
    objects: tuple[int, ...] = (2, 3, 4, 5)
    n: int = 100
    seed: int = 0
    layout: str = "one-large"
    large_slot: tuple[str, ...] = SLOTS
    resolution: tuple[int, int] = (512, 512)
    colors: bool = False
    orders: int = 4
    order_policy: str = "random"
    order_bias: float = 0.0
    large_fraction: float = 0.07
    small_fraction: tuple[float, float] = (0.005, 0.01)
    equal_fraction: float = 0.025
    captions: tuple[str, ...] = ()
    templates: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, tuple):
                d[k] = list(v)
        return d


class PlanFailure(Exception):
    """A scene could not be placed; carries the reason."""


def parse_counts(text: str) -> tuple[int, ...]:
    """`3`, `2-5` or `2,4` -> object counts; errors say how to write it."""
    text = str(text).strip()
    try:
        if "-" in text:
            lo_s, hi_s = text.split("-", 1)
            lo, hi = int(lo_s), int(hi_s)
            if lo > hi:
                raise UserError(f"--objects {text}: the range is backwards; write {hi}-{lo}")
            counts = tuple(range(lo, hi + 1))
        else:
            counts = tuple(sorted({int(t) for t in text.split(",") if t.strip()}))
    except ValueError:
        raise UserError(f"--objects {text!r}: give a count (3), a range (2-5) or a list (2,4)") from None
    if not counts or min(counts) < 1:
        raise UserError(f"--objects {text}: counts start at 1")
    if max(counts) > MAX_OBJECTS:
        raise UserError(f"--objects {text}: at most {MAX_OBJECTS} objects fit the {MAX_OBJECTS} slots")
    return counts


def parse_slots(text: str) -> tuple[str, ...]:
    if text == "random":
        return SLOTS
    slots = tuple(s.strip().upper() for s in text.split(",") if s.strip())
    bad = [s for s in slots if s not in SLOTS]
    if bad or not slots:
        raise UserError(f"--large-slot {text}: use M, UL, UR, BL, BR, a comma list of them, or random")
    return slots


def check_config(cfg: PlanConfig, object_set: ObjectSet) -> None:
    if cfg.n <= 0:
        raise UserError(f"--n {cfg.n}: ask for at least one image")
    if max(cfg.objects) > len(object_set.objects):
        raise UserError(f"--objects: {max(cfg.objects)} objects asked but set '{object_set.name}' "
                        f"has {len(object_set.objects)}")
    w, h = cfg.resolution
    if not (0 < w <= 8192 and 0 < h <= 8192):
        raise UserError(f"--resolution {w}x{h}: use 1..8192 pixels")
    if cfg.layout not in LAYOUTS:
        raise UserError(f"--layout {cfg.layout}: use one of {', '.join(LAYOUTS)}")
    if cfg.order_policy not in POLICIES:
        raise UserError(f"--order-policy {cfg.order_policy}: use one of {', '.join(POLICIES)}")
    if not 0.0 <= cfg.order_bias <= 1.0:
        raise UserError(f"--order-bias {cfg.order_bias}: a probability in 0..1")
    if cfg.orders < 1:
        raise UserError(f"--orders {cfg.orders}: at least 1")
    lo, hi = cfg.small_fraction
    if not (0 < lo <= hi < 1) or not (0 < cfg.large_fraction < 1):
        raise UserError("--large-fraction and --small-fraction are image shares in (0, 1)")


class Planner:
    def __init__(self, cfg: PlanConfig, object_set: ObjectSet):
        check_config(cfg, object_set)
        self.cfg = cfg
        self.set = object_set
        self.camera = Camera.default(*cfg.resolution)
        self.book = cap.load_templates(cfg.templates)
        self.templates = self.book.select(list(cfg.captions), cfg.colors)
        self.pixels = cfg.resolution[0] * cfg.resolution[1]
        self._unit_scales: dict[tuple[str, str, int], float] = {}
        # The projected box of a unit-scale object at each slot: area scales with scale^2.
        self._slot_ground = {s: self.camera.ground_point(u * cfg.resolution[0], v * cfg.resolution[1])
                             for s, (u, v) in SLOT_UV.items()}

    # -- public ---------------------------------------------------------------------
    def count_for(self, index: int) -> int:
        """Images are spread evenly (round robin) over the object counts."""
        return self.cfg.objects[index % len(self.cfg.objects)]

    def plan(self, index: int, first_retry: int = 0) -> dict:
        """The record for image `index`; re-planned from derived seeds if it cannot fit.

        `first_retry` > 0 re-plans a scene that the renderer rejected (the retry count
        is recorded, and the seeds stay derived from the dataset seed and the index).
        """
        reasons = ["no attempt left"]
        for retry in range(first_retry, first_retry + SCENE_RETRIES):
            seed = image_seed(self.cfg.seed, index, retry)
            try:
                return self.plan_with_seed(index, seed, retry, self.choose_objects(index, retry // OBJECT_RETRIES))
            except PlanFailure as exc:
                reasons.append(str(exc))
        raise UserError(
            f"cannot place {self.count_for(index)} objects in view at --large-fraction "
            f"{self.cfg.large_fraction} / --small-fraction {self.cfg.small_fraction[0]}-{self.cfg.small_fraction[1]} "
            f"({reasons[-1]}); lower the fractions or --objects")

    def records(self, start: int = 0, stop: int | None = None) -> Iterator[dict]:
        for i in range(start, self.cfg.n if stop is None else stop):
            yield self.plan(i)

    # -- one scene ------------------------------------------------------------------
    def choose_objects(self, index: int, draw: int = 0) -> list[ObjectSpec]:
        """Which objects image `index` shows: uniform, without replacement.

        Drawn from a stream of their own, so that a scene re-planned after a failed
        placement or render check keeps its objects; otherwise objects that are hard
        to fit (long trains, tall giraffes) would be silently under-represented.
        Only a combination that never fits is drawn again (`draw` > 0).
        """
        rng = generator(image_seed(self.cfg.seed, index, draw, stream=1))
        picks = rng.choice(len(self.set.objects), size=self.count_for(index), replace=False)
        return [self.set.objects[int(i)] for i in picks]

    def plan_with_seed(self, index: int, seed: int, retry: int, chosen: list[ObjectSpec]) -> dict:
        cfg = self.cfg
        rng = generator(seed)
        n = len(chosen)
        fractions = self._fractions(rng, chosen)
        ranks = _ranks(fractions)
        large_slot = cfg.large_slot[int(rng.integers(len(cfg.large_slot)))] if len(cfg.large_slot) > 1 else cfg.large_slot[0]
        slots = self._slots(rng, ranks, large_slot)
        colors, materials = self._looks(rng, chosen)
        objects = self._place(rng, chosen, fractions, slots, ranks, colors, materials)
        xs = [self.camera.project(tuple(o["location"]))[0] for o in objects]
        # Mention orders draw from a stream of their own: the order policy (the lab's
        # --order-bias variable) changes only orders and captions, never the image.
        order_rng = generator(image_seed(cfg.seed, index, retry, stream=2))
        orders = mention_orders(order_rng, ranks, xs, policy=cfg.order_policy, k=cfg.orders,
                                order_bias=cfg.order_bias)
        variants = [int(v) for v in rng.integers(0, 1 << 16, size=n)]
        record = {
            "id": f"{index:06d}", "index": index, "seed": seed, "retry": retry,
            "object_set": self.set.name, "object_set_hash": self.set.hash,
            "image": f"images/{index:06d}.png", "resolution": list(cfg.resolution),
            "layout": cfg.layout, "large_slot": slots[ranks.index(0)],
            "camera": self.camera.to_record(), "lights": _lights(rng),
            "objects": objects, "mention_orders": orders,
        }
        record["captions"] = cap.captions_for_record(record, self.templates, self.book, self.set, variants)
        return record

    def _fractions(self, rng: np.random.Generator, chosen: list[ObjectSpec]) -> list[float]:
        cfg, n = self.cfg, len(chosen)
        if cfg.layout == "one-large":
            lo, hi = cfg.small_fraction
            large = cfg.large_fraction * float(rng.uniform(0.9, 1.1))
            smalls = [float(rng.uniform(lo, hi)) for _ in range(n - 1)]
            fr = [large] + smalls
            order = [int(i) for i in rng.permutation(n)]  # which chosen object is the large one
            return [fr[order.index(i)] for i in range(n)]
        if cfg.layout == "equal":
            return [cfg.equal_fraction] * n
        if cfg.layout == "graded":
            lo = cfg.small_fraction[0]
            levels = [cfg.large_fraction * (lo / cfg.large_fraction) ** (k / max(1, n - 1)) for k in range(n)]
            order = [int(i) for i in rng.permutation(n)]
            return [levels[order[i]] for i in range(n)]
        # realistic: areas follow real-world longest sides; the biggest gets large_fraction.
        biggest = max(o.longest_m for o in chosen)
        fr = [cfg.large_fraction * (o.longest_m / biggest) ** 2 for o in chosen]
        # Objects of similar real size would each get the large share; keep the total to
        # what one-large scenes cover, so five of them still fit.
        total = cfg.large_fraction + (n - 1) * cfg.small_fraction[1]
        k = min(1.0, total / sum(fr))
        return [f * k for f in fr]

    def _slots(self, rng: np.random.Generator, ranks: list[int], large_slot: str) -> list[str]:
        rest = [s for s in SLOTS if s != large_slot]
        rng.shuffle(rest)
        slots, it = [], iter(rest)
        for r in ranks:
            slots.append(large_slot if r == 0 else next(it))
        return slots

    def _looks(self, rng: np.random.Generator, chosen: list[ObjectSpec]) -> tuple[list, list]:
        materials = [self.set.materials[int(rng.integers(len(self.set.materials)))] if len(self.set.materials) > 1
                     else (o.material or self.set.materials[0]) for o in chosen]
        if not self.cfg.colors:
            return [None] * len(chosen), materials
        used: set[str] = set()
        colors = []
        for o in chosen:
            allowed = list(o.allowed_colors(self.set.palette)) or [self.set.default_color]
            if o.colorable:
                fresh = [c for c in allowed if c not in used] or allowed
                c = fresh[int(rng.integers(len(fresh)))]
            else:
                c = allowed[0]
            used.add(c)
            colors.append(c)
        return colors, materials

    def _place(self, rng, chosen, fractions, slots, ranks, colors, materials) -> list[dict]:
        w, h = self.cfg.resolution
        margin = MARGIN * max(w, h)
        # Whole degrees of yaw: finer turns change nothing a person or a model would see, and
        # they let the fit of (object, slot, yaw) be solved once and reused.
        yaw_degs = [int(rng.integers(-int(o.yaw_range), int(o.yaw_range) + 1)) for o in chosen]
        yaws = [math.radians(d) for d in yaw_degs]
        # Fit each object once at its slot centre; jitter then moves the fitted box.
        fits = [self._fit_at_slot(o, frac, slot, deg) for o, frac, slot, deg in zip(chosen, fractions, slots, yaw_degs)]
        if self.cfg.layout != "equal" and _ranks([f[4] for f in fits]) != ranks:
            raise PlanFailure("an object shrunk to fit the frame and lost its size rank")
        if self.cfg.layout == "one-large":
            large = ranks.index(0)
            if fits[large][4] < 0.95 * fractions[large]:
                # A flat or thin object cannot be ComCO's large one; the retry draws another
                # of the same objects to be large, so no object is dropped from the data.
                raise PlanFailure(f"{chosen[large].name} cannot cover {fractions[large]:.3f} within the frame")
        for _ in range(PLACEMENT_TRIES):
            # Clamp with a wider margin: the exact re-projection below may grow a moved box a little.
            jitter = [_inside(b, du * w, dv * h, w, h, 2.5 * margin) for (_, _, b, _, _), (du, dv)
                      in zip(fits, rng.uniform(-SLOT_JITTER, SLOT_JITTER, size=(len(chosen), 2)))]
            boxes = [(b[0] + du, b[1] + dv, b[2] + du, b[3] + dv) for (_, _, b, _, _), (du, dv) in zip(fits, jitter)]
            if not _fits(boxes, w, h, margin):
                continue
            objects, exact = [], []
            for o, (_, scale, _, foot, frac), (du, dv), slot, rank, yaw, color, mat in zip(
                    chosen, fits, jitter, slots, ranks, yaws, colors, materials):
                loc = self.camera.ground_point(foot[0] + du, min(foot[1] + dv, h * 0.999))
                exact.append(self.camera.box_bounds(loc, o.normalized_dimensions(scale), yaw))
                objects.append({
                    "name": o.name, "slot": slot, "size_rank": rank, "scale": round(scale, 5),
                    "location": [round(loc[0], 5), round(loc[1], 5), 0.0], "rotation_z": round(yaw, 5),
                    "color": color, "material": mat, "planned_fraction": round(frac, 6),
                })
            if _fits(exact, w, h, margin):
                return objects
        raise PlanFailure(f"{len(chosen)} objects did not fit after {PLACEMENT_TRIES} placements")

    def _fit_at_slot(self, o: ObjectSpec, fraction: float, slot: str, yaw_deg: int):
        """`_fit` at a slot centre, with the scale solved once per (object, slot, yaw).

        The silhouette area grows as scale squared up to perspective, so the scale
        solved exactly at REF_FRACTION is rescaled by sqrt(fraction / REF_FRACTION);
        the foot and the box are then projected exactly, so every check stays exact.
        """
        w, h = self.cfg.resolution
        u, v = SLOT_UV[slot][0] * w, SLOT_UV[slot][1] * h
        key = (o.name, slot, yaw_deg)
        yaw = math.radians(yaw_deg)
        scale0 = self._unit_scales.get(key)
        if scale0 is None:
            scale0 = self._unit_scales[key] = self._fit(o, REF_FRACTION, u, v, yaw, limits=False)[1]
        scale = scale0 * math.sqrt(fraction / REF_FRACTION)
        cap = MAX_HEIGHT * self.camera.location[2] * o.longest_m / o.dimensions_m[2]
        if scale > cap:
            raise PlanFailure(f"{o.name} would need to be {scale:.1f} units tall to cover {fraction:.3f} of the image")
        return self._place_foot(o, scale, u, v, yaw, fraction, True)

    def _place_foot(self, o: ObjectSpec, scale: float, u: float, v: float, yaw: float, fraction: float,
                    limits: bool):
        """Shrink a too-wide object, then move its foot so the box centre sits at (u, v)."""
        w, h = self.cfg.resolution
        loc = self.camera.ground_point(u, v)
        box = self.camera.box_bounds(loc, o.normalized_dimensions(scale), yaw)
        span = max((box[2] - box[0]) / w, (box[3] - box[1]) / h)
        shrink = min(1.0, MAX_SPAN / span) if limits else 1.0  # flat, thin objects: cover less, not cross the image
        if shrink < 1.0:
            scale *= shrink
            box = self.camera.box_bounds(loc, o.normalized_dimensions(scale), yaw)
        dims = o.normalized_dimensions(scale)
        foot_u, foot_v = u, min(v + v - (box[1] + box[3]) / 2, h * 0.999)
        edge = 2.5 * MARGIN * max(w, h)
        for _ in range(3):
            loc = self.camera.ground_point(foot_u, foot_v)
            box = self.camera.box_bounds(loc, dims, yaw)
            # A big object near a corner slot moves inward until it is inside the frame.
            du = max(0.0, edge - box[0]) - max(0.0, box[2] - (w - edge))
            dv = max(0.0, edge - box[1]) - max(0.0, box[3] - (h - edge))
            if abs(du) < 0.5 and abs(dv) < 0.5:
                break
            foot_u, foot_v = foot_u + du, min(foot_v + dv, h * 0.999)
        return loc, scale, box, (foot_u, foot_v), fraction * shrink * shrink

    def _fit(self, o: ObjectSpec, fraction: float, u: float, v: float, yaw: float, strict: bool = True,
             limits: bool = True):
        """Scale and ground point that put the object's box centre at (u, v) with the planned area.

        Returns (location, scale, image box, foot pixel, fraction); the foot pixel is where
        the ground point projects, so a jittered copy can be re-projected cheaply, and the
        fraction is less than asked when the object had to shrink to span at most
        MAX_SPAN of the image. The scale is solved on the box's silhouette (its convex
        hull), re-projected three times for perspective.
        """
        loc = self.camera.ground_point(u, v)
        target = fraction * self.pixels / FILL
        cap = MAX_HEIGHT * self.camera.location[2] * o.longest_m / o.dimensions_m[2]
        scale = 1.0
        for _ in range(3):  # area ~ scale^2, corrected for perspective by re-projecting
            us, vs = self.camera.box_corners(loc, o.normalized_dimensions(scale), yaw)
            scale *= math.sqrt(target / max(hull_area(us, vs), 1e-9))
            if not limits:
                continue
            if scale > cap and not strict:
                scale = cap
                break
            if scale > cap:
                # Taller than this, the top comes so close to the camera that perspective explodes.
                raise PlanFailure(f"{o.name} would need to be {scale:.1f} units tall to cover "
                                  f"{fraction:.3f} of the image")
        return self._place_foot(o, scale, u, v, yaw, fraction, limits)

    # -- singles --------------------------------------------------------------------
    def singles(self) -> list[dict]:
        """One reference record per object (and per colour with --colors), alone at the centre."""
        out = []
        w, h = self.cfg.resolution
        for o in self.set.objects:
            colors = list(o.allowed_colors(self.set.palette)) if self.cfg.colors else [None]
            if self.cfg.colors and not o.colorable:
                colors = colors[:1] or [self.set.default_color]
            for color in colors:
                loc, scale, _, _, frac = self._fit(o, self.cfg.large_fraction, w / 2, h / 2, 0.0, strict=False)
                sid = o.name if color is None else f"{o.name}-{color}"
                out.append({
                    "id": sid, "name": o.name, "color": color, "image": f"singles/{sid}.png",
                    "object_set": self.set.name, "object_set_hash": self.set.hash,
                    "resolution": [w, h], "layout": "single", "large_slot": "M",
                    "camera": self.camera.to_record(), "lights": _lights(None),
                    "objects": [{"name": o.name, "slot": "M", "size_rank": 0, "scale": round(scale, 5),
                                 "location": [round(loc[0], 5), round(loc[1], 5), 0.0], "rotation_z": 0.0,
                                 "color": color, "material": o.material or self.set.materials[0],
                                 "planned_fraction": round(frac, 6)}],
                    "mention_orders": [[0]],
                })
        return out


def _ranks(fractions: list[float]) -> list[int]:
    order = sorted(range(len(fractions)), key=lambda i: (-fractions[i], i))
    ranks = [0] * len(fractions)
    for r, i in enumerate(order):
        ranks[i] = r
    return ranks


def _inside(box: tuple, du: float, dv: float, w: int, h: int, margin: float) -> tuple[float, float]:
    """Change a jitter (du, dv) so the moved box stays inside the frame where it can."""
    du = min(max(du, margin - box[0]), w - margin - box[2])
    dv = min(max(dv, margin - box[1]), h - margin - box[3])
    return du, dv


def _fits(boxes: list[tuple], w: int, h: int, margin: float) -> bool:
    for b in boxes:
        if b[0] < margin or b[1] < margin or b[2] > w - margin or b[3] > h - margin:
            return False
    for i in range(len(boxes)):
        a = boxes[i]
        for j in range(i + 1, len(boxes)):
            b = boxes[j]
            ow = min(a[2], b[2]) - max(a[0], b[0])
            oh = min(a[3], b[3]) - max(a[1], b[1])
            if ow > 0 and oh > 0:
                smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
                if ow * oh > BOX_OVERLAP * smaller:
                    return False
    return True


def _lights(rng: np.random.Generator | None) -> dict:
    """Key, fill and back area lights around the scene (CLEVR-like), jittered per image."""
    j = (lambda s: float(rng.normal(0.0, s))) if rng is not None else (lambda s: 0.0)
    return {
        "key": {"location": [round(6.0 + j(0.5), 4), round(-6.0 + j(0.5), 4), round(10.0 + j(0.5), 4)],
                "energy": round(700.0 * (1 + j(0.05)), 2), "size": 6.0},
        "fill": {"location": [round(-7.0 + j(0.5), 4), round(-3.0 + j(0.5), 4), round(6.0 + j(0.5), 4)],
                 "energy": round(250.0 * (1 + j(0.05)), 2), "size": 8.0},
        "back": {"location": [round(0.0 + j(0.5), 4), round(9.0 + j(0.5), 4), round(8.0 + j(0.5), 4)],
                 "energy": round(300.0 * (1 + j(0.05)), 2), "size": 6.0},
        "world": 0.25,
    }
