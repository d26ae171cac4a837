"""Every random number of a batch of planning attempts, and what they decide.

An attempt is one try at one image (an index and a retry). Each has a stream of
its own (comco/rng.py) from which all its uniform numbers are taken in one go, in
a fixed layout (objects, placement, then mention orders), plus LIGHT_NORMALS
normal ones. What the numbers become (sizes, size ranks, slots,
turns, looks, jitter) is then computed for the whole batch at once with numpy.
The layout is laid out for MAX_OBJECTS objects whatever the count, so a scene with
fewer objects, or a layout that uses fewer numbers, shifts nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from comco.manifest import ObjectSet
from comco.plan.orders import draws_needed
from comco.plan.placement import LARGE_OVER_SMALL, PLACEMENT_TRIES, REF_FRACTION, SLOT_JITTER, size_ranks
from comco.plan.rng import Reseedable, image_seed
from comco.record import MAX_OBJECTS, SLOTS

K = MAX_OBJECTS
# Offsets into an attempt's uniform numbers.
# Kept over OBJECT_RETRIES attempts (see Drawer.draw):
OBJECTS = 0  # K numbers: which objects
LARGE_SLOT = OBJECTS + K  # where the large one goes
KEPT = LARGE_SLOT + 1
LARGE = KEPT  # the large object's share, within +-10 %
SMALLS = LARGE + 1  # K - 1 small shares
WHICH = SMALLS + K - 1  # which object is the large one
GRADED = WHICH + 1  # K keys: the graded layout's order of sizes
SHUFFLE = GRADED + K  # K - 1 keys: the other slots' order
MATERIAL = SHUFFLE + K - 1
COLOR = MATERIAL + K
YAW = COLOR + K
VARIANT = YAW + K  # which sentence of a long template
JITTER = VARIANT + K  # PLACEMENT_TRIES x K x 2 moves from the slot centres
PLACE_DRAWS = JITTER + PLACEMENT_TRIES * K * 2
ORDERS = PLACE_DRAWS  # then the mention orders' numbers (comco/orders.py), as many as
# the configuration needs. Orders come last in the stream, so the order policy (the
# lab's --order-bias variable) changes only orders and captions, never the image.
LIGHT_NORMALS = 12
OBJECT_RETRIES = 20  # attempts with the same objects before drawing new ones


@dataclass
class Drawn:
    """A batch of attempts: A rows, K object columns (padding masked by `valid`)."""

    index: list[int]
    retry: list[int]
    seed: list[int]
    ids: np.ndarray  # object indices into the set
    valid: np.ndarray
    fraction: np.ndarray  # planned image shares
    ranks: np.ndarray  # size ranks, 0 = largest
    slot: np.ndarray  # indices into SLOTS
    yaw: np.ndarray  # whole degrees
    material: np.ndarray  # indices into Drawer.material_names
    colors: list[list[str | None]]
    variant: np.ndarray
    jitter: np.ndarray  # (A, PLACEMENT_TRIES, K, 2) pixels
    normals: np.ndarray  # (A, LIGHT_NORMALS)
    order_numbers: np.ndarray  # (A, order draws) uniform numbers for mention_orders
    uniform: np.ndarray | None = None  # (A, draws) every uniform number (pair variants read the unused columns)
    kept: np.ndarray | None = None  # (A, KEPT) the numbers that chose the objects


class Drawer:
    def __init__(self, cfg, object_set: ObjectSet, placer=None, composer=None):
        self.cfg = cfg
        self._composer = composer  # --holdout: rewrites the drawn objects (comco/plan/holdout.py)
        self.set = object_set
        objs = object_set.objects
        self.material_names = list(object_set.materials)
        for o in objs:
            if o.material and o.material not in self.material_names:
                self.material_names.append(o.material)
        # An object's own material wins over the set's looks.
        self._fixed_material = np.array([self.material_names.index(o.material) if o.material else -1 for o in objs])
        self._yaw_range = np.array([int(o.yaw_range) for o in objs])
        self._longest = np.array([o.longest_m for o in objs])
        self._large_options = np.array([SLOTS.index(s) for s in cfg.large_slot])
        # For each large slot, the other slots in order.
        self._others = np.array([[s for s in range(K) if s != large] for large in range(K)])
        self._draws = ORDERS + max(draws_needed(n, cfg.orders) for n in range(1, K + 1))
        # for the one-large layout: which objects can be the large one (comco/plan/cameras.py:
        # CameraPlacers, whose `for_images` gives the placer of a batch's cameras)
        self._placer = placer
        self._rng = Reseedable()

    def count_for(self, index: int) -> int:
        """Images are spread evenly (round robin) over the object counts."""
        return self.cfg.objects[index % len(self.cfg.objects)]

    def choose_ids(self, index: int, draw: int) -> list[int]:
        """The objects of image `index` in its draw `draw` (its retries draw * OBJECT_RETRIES onwards)."""
        u = self._rng.seed(image_seed(self.cfg.seed, index, draw * OBJECT_RETRIES)).random(K)
        n = self.count_for(index)
        return self._choose(u[None, :], np.array([n]))[0, :n].tolist()

    def _choose(self, u: np.ndarray, count: np.ndarray) -> np.ndarray:
        """Objects for each row of numbers (A, K): uniform, without replacement (the
        first steps of a Fisher-Yates shuffle); the first count[a] are the scene's."""
        size, total = len(u), len(self.set.objects)
        pool = np.tile(np.arange(total), (size, 1))
        rows = np.arange(size)
        for i in range(min(K, total)):
            j = i + np.minimum((u[:, i] * (total - i)).astype(np.intp), total - i - 1)
            pool[rows, i], pool[rows, j] = pool[rows, j], pool[rows, i].copy()
        chosen = np.zeros((size, K), dtype=np.intp)  # a set may have fewer than K objects
        chosen[:, :min(K, total)] = pool[:, :K]
        return np.where(np.arange(K)[None, :] < count[:, None], chosen, 0)

    def draw(self, jobs: list[tuple[int, int]]) -> Drawn:
        """Draw attempts (index, retry) and decide everything but the geometry.

        The objects and the large slot come first in a stream. They are drawn in the
        first attempt of every OBJECT_RETRIES and kept by the retries after it (whose
        own first numbers go unused), so that a scene re-planned after a failed
        placement or render check keeps them; otherwise objects that are hard to fit
        (long trains, tall giraffes) would be silently under-represented, and so
        would the far slots, where a large object must be larger in the world.
        """
        cfg, size = self.cfg, len(jobs)
        uniform = np.empty((size, self._draws))
        kept = np.empty((size, KEPT))
        normals = np.empty((size, LIGHT_NORMALS))
        seeds = []
        for a, (index, retry) in enumerate(jobs):
            seed = image_seed(cfg.seed, index, retry)
            seeds.append(seed)
            rng = self._rng.seed(seed)
            rng.random(out=uniform[a])
            rng.standard_normal(out=normals[a])
            first = retry - retry % OBJECT_RETRIES
            if retry != first:
                self._rng.seed(image_seed(cfg.seed, index, first)).random(out=kept[a])
            else:
                kept[a] = uniform[a, :KEPT]
        count = np.array([self.count_for(index) for index, _ in jobs])
        valid = np.arange(K)[None, :] < count[:, None]
        ids = self._choose(kept[:, OBJECTS:OBJECTS + K], count)
        if self._composer is not None:
            self._composer.objects(ids, count, jobs, [r - r % OBJECT_RETRIES for _, r in jobs])
        reach = self._yaw_range[ids]
        yaw = np.where(valid, _pick(uniform[:, YAW:YAW + K], 2 * reach + 1) - reach, 0)
        large_slot = self._large_options[_pick(kept[:, LARGE_SLOT], len(self._large_options))]
        placer = None if self._placer is None else self._placer.for_images([i for i, _ in jobs])
        fraction = np.where(valid, self._fractions(uniform, count, valid, ids, yaw, large_slot, placer), REF_FRACTION)
        ranks = size_ranks(fraction, valid)
        slot = self._slots(uniform, large_slot, ranks, valid)
        fixed = self._fixed_material[ids]
        material = np.where(fixed >= 0, fixed, _pick(uniform[:, MATERIAL:MATERIAL + K], len(self.set.materials)))
        w, h = cfg.resolution
        jitter = (2 * uniform[:, JITTER:PLACE_DRAWS] - 1).reshape(size, PLACEMENT_TRIES, K, 2) * (
            SLOT_JITTER * np.array([w, h], dtype=float))
        colors = self._colors(uniform[:, COLOR:COLOR + K].tolist(), ids.tolist(), count.tolist())
        return Drawn(index=[i for i, _ in jobs], retry=[r for _, r in jobs], seed=seeds, ids=ids, valid=valid,
                     fraction=fraction, ranks=ranks, slot=slot, yaw=yaw, material=material,
                     colors=colors, variant=_pick(uniform[:, VARIANT:VARIANT + K], 1 << 16), jitter=jitter,
                     normals=normals, order_numbers=uniform[:, ORDERS:], uniform=uniform, kept=kept)

    def _fractions(self, u: np.ndarray, count: np.ndarray, valid: np.ndarray, ids: np.ndarray, yaw: np.ndarray,
                   large_slot: np.ndarray, placer) -> np.ndarray:
        cfg, size = self.cfg, len(u)
        col = np.arange(K)[None, :]
        if cfg.layout == "one-large":
            lo, hi = cfg.small_fraction
            small = lo + (hi - lo) * u[:, SMALLS:SMALLS + K - 1]
            large = cfg.large_fraction * (0.9 + 0.2 * u[:, LARGE])
            # Which object is the large one: uniform among those that can cover the large
            # share at the large slot with their turn (all, if none can: the retry redraws).
            able = valid
            if placer is not None:
                floor = LARGE_OVER_SMALL * np.where(col[:, :K - 1] < (count - 1)[:, None], small, 0.0).max(axis=1)
                able = valid & placer.can_be_large(ids, np.broadcast_to(large_slot[:, None], ids.shape),
                                                         yaw + 180, np.broadcast_to(large[:, None], ids.shape),
                                                         floor[:, None])
                able = np.where(able.any(axis=1, keepdims=True), able, valid)
            nth = _pick(u[:, WHICH], able.sum(axis=1))[:, None]
            which = np.argmax(np.cumsum(able, axis=1) > nth, axis=1)[:, None]
            fr = np.take_along_axis(small, np.clip(col - (col > which), 0, K - 2), axis=1)
            return np.where(col == which, large[:, None], fr)
        if cfg.layout == "equal":
            return np.full((size, K), cfg.equal_fraction)
        if cfg.layout == "graded":
            lo, big = cfg.small_fraction[0], cfg.large_fraction
            levels = big * (lo / big) ** (col / np.maximum(1, count - 1)[:, None])
            order = np.argsort(np.where(valid, u[:, GRADED:GRADED + K], np.inf), axis=1, kind="stable")
            return np.take_along_axis(levels, order, axis=1)
        # realistic: areas follow real-world longest sides; the biggest gets large_fraction.
        longest = np.where(valid, self._longest[ids], 0.0)
        fr = cfg.large_fraction * (longest / longest.max(axis=1, keepdims=True)) ** 2
        # Objects of similar real size would each get the large share; keep the total to
        # what one-large scenes cover, so five of them still fit.
        total = cfg.large_fraction + (count - 1) * cfg.small_fraction[1]
        return fr * np.minimum(1.0, total / fr.sum(axis=1))[:, None]

    def _slots(self, u: np.ndarray, large_slot: np.ndarray, ranks: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """The large object takes the drawn large slot; the others the rest, shuffled."""
        order = np.argsort(u[:, SHUFFLE:SHUFFLE + K - 1], axis=1, kind="stable")
        rest = np.take_along_axis(self._others[large_slot], order, axis=1)
        col = np.arange(K)[None, :]
        large = np.argmin(np.where(valid, ranks, K), axis=1)[:, None]
        nth_small = np.clip(col - (col > large), 0, K - 2)
        return np.where(col == large, large_slot[:, None], np.take_along_axis(rest, nth_small, axis=1))

    def _colors(self, u: list[list[float]], ids: list[list[int]], count: list[int]) -> list[list[str | None]]:
        """Distinct palette colours for colourable objects (--colors), natural ones for the rest."""
        if not self.cfg.colors:
            return [[None] * n for n in count]
        out = []
        for row, obj_ids, n in zip(u, ids, count):
            used: set[str] = set()
            colors = []
            for x, i in zip(row[:n], obj_ids[:n]):
                o = self.set.objects[i]
                allowed = list(o.allowed_colors(self.set.palette)) or [self.set.default_color]
                if o.colorable:
                    fresh = [c for c in allowed if c not in used] or allowed
                    c = fresh[min(int(x * len(fresh)), len(fresh) - 1)]
                else:
                    c = allowed[0]
                used.add(c)
                colors.append(c)
            out.append(colors)
        return out


def _pick(u: np.ndarray, n) -> np.ndarray:
    """Uniform numbers in [0, 1) -> indices in range(n) (n a number or an array)."""
    return np.minimum((u * n).astype(np.intp), np.asarray(n) - 1)
