"""Counterfactual minimal pairs: variants of a planned scene that change one factor and nothing else.

A variant starts from its base attempt's drawn numbers (comco/plan/draws.py), changes what its
factor names, and is placed again with the base's own winning jitter try only. Every object it
does not touch is then computed from the same numbers by the same elementwise arithmetic, so it
keeps its scale, place, turn, colour and material to the last digit; that is checked on the
finished records, and a variant that cannot be placed (a clash, a lost size rank, no two colours
to swap) fails its base attempt, which the planner then draws again with the next retry.

Which objects a factor changes is drawn from a stream of its own, derived from the base
attempt's seed and the factor (comco/plan/rng.py: pair_seed), so the same seed gives the same
pairs byte for byte. An added object (add, count) takes the next column of the base's stream:
the object its shuffle would have chosen next, that column's turn, look, colour and jitter, and
the next free slot in the base's slot order.
"""

from __future__ import annotations

import copy

import numpy as np

from comco.plan.draws import COLOR, MATERIAL, SHUFFLE, SMALLS, YAW, Drawn, K, _pick
from comco.plan.placement import OK, size_ranks
from comco.plan.rng import Reseedable, pair_seed
from comco.record import PAIR_BASE, PAIR_FACTORS

# What tells two versions of an object apart (size_rank is relative: adding a small object
# may shift the others' ranks without changing them).
COMPARED = ("name", "slot", "scale", "location", "rotation_z", "color", "material", "planned_fraction")


class Miss(str):
    """Why a base attempt's variants could not be made; `new_objects`: not with these objects
    at any placement (the planner then skips to the attempt that draws new objects)."""

    new_objects = False


class ObjectsMiss(Miss):
    new_objects = True


def pair_id(base_id: str, factor: str) -> str:
    """A variant's record id (and image name): the base's id and the factor."""
    return base_id if factor == PAIR_BASE else f"{base_id}-{factor}"


def _rows(drawn: Drawn, rows: list[int], tries: np.ndarray) -> Drawn:
    """The drawn numbers of these rows, with each row's jitter cut to its winning try."""
    pick = np.asarray(rows, dtype=np.intp)
    take = {f: (getattr(drawn, f)[pick] if isinstance(getattr(drawn, f), np.ndarray)
                else [getattr(drawn, f)[a] for a in rows])
            for f in drawn.__dataclass_fields__ if getattr(drawn, f) is not None}
    take["jitter"] = drawn.jitter[pick, tries[pick]][:, None]
    take["colors"] = [list(c) for c in take["colors"]]
    return Drawn(**take)


class Pairer:
    """Variant records for the placed base attempts of a batch (the Planner's helper)."""

    def __init__(self, planner):
        self.planner = planner
        self.cfg = planner.cfg
        self.drawer = planner.drawer
        self.set = planner.set
        self.factors = self.cfg.pairs
        self._rng = Reseedable()

    def variants(self, drawn: Drawn, placed, rows: list[int], bases: list[dict]) -> list[list[dict] | Miss]:
        """Per base row: its variant records in factor order, or why one could not be made."""
        sub = _rows(drawn, rows, placed.tries)
        # The shares the base's objects were planned at (after holding tall and shrinking wide
        # ones): what swap-size exchanges and swap-slots keeps, rather than the drawn shares.
        self._reached = placed.fraction[np.asarray(rows, dtype=np.intp)]
        found: list[list[dict]] = [[] for _ in rows]
        failed: list[Miss | None] = [None] * len(rows)
        for factor in self.factors:
            v = copy.deepcopy(sub)
            origin, why = [], []
            for r in range(len(rows)):
                rng = self._rng.seed(pair_seed(sub.seed[r], PAIR_FACTORS.index(factor)))
                o, w = getattr(self, "_" + factor.replace("-", "_"))(v, r, rng)
                origin.append(o)
                why.append(w)
            v.ranks = size_ranks(v.fraction, v.valid)
            vplaced = self.planner._place(v)
            for r in range(len(rows)):
                if why[r] is None and vplaced.status[r] != OK:
                    why[r] = Miss(f"its {factor} variant does not fit ({self.planner._reason(v, vplaced, r)})")
            fits = [r for r in range(len(rows)) if why[r] is None and failed[r] is None]
            for r, rec in zip(fits, self.planner._records(v, vplaced, fits)):
                why[r] = self._finish(rec, bases[r], origin[r], factor)
                found[r].append(rec)
            for r, w in enumerate(why):
                failed[r] = failed[r] or w
        return [f if f is not None else recs for f, recs in zip(failed, found)]

    @staticmethod
    def _finish(rec: dict, base: dict, origin: list[int], factor: str) -> Miss | None:
        """Name the variant, say what changed, and check that nothing else did."""
        rec["id"] = pair_id(base["id"], factor)
        rec["image"] = f"images/{rec['id']}.png"
        changed = []
        for j, o in enumerate(rec["objects"]):
            b = base["objects"][origin[j]] if origin[j] >= 0 else None
            if b is None or any(o[k] != b[k] for k in COMPARED):
                changed.append(j)
        expected = {"remove": 0, "add": 1, "count": 1}.get(factor, 2)
        if len(changed) != expected:
            return Miss(f"its {factor} variant changed {len(changed)} objects, not {expected}")
        if factor in ("swap-size", "swap-slots"):  # the sizes exchanged exactly / kept exactly
            got = [rec["objects"][j]["planned_fraction"] for j in changed]
            want = [base["objects"][origin[j]]["planned_fraction"] for j in changed]
            want = want[::-1] if factor == "swap-size" else want
            if got != want:
                k = next(k for k in range(len(got)) if got[k] != want[k])
                return Miss(f"its {factor} variant plans {rec['objects'][changed[k]]['name']} at a share of "
                            f"{got[k]:g}, not {want[k]:g} (held or shrunk to fit its place)")
        rec["pair"] = {"id": base["id"], "factor": factor, "changed": changed}
        return None

    # -- one factor on one row of a copied batch: (origin of each object, None) or (_, why) --
    def _n(self, v: Drawn, r: int) -> int:
        return int(v.valid[r].sum())

    def _largest(self, v: Drawn, r: int) -> int:
        n = self._n(v, r)
        return int(np.argmin(v.ranks[r, :n]))

    def _swap(self, v: Drawn, r: int, i: int, j: int, fields: tuple[str, ...]) -> None:
        for f in fields:
            a = getattr(v, f)
            a[r, [i, j]] = a[r, [j, i]]

    def _swap_size(self, v: Drawn, r: int, rng):
        n, large = self._n(v, r), self._largest(v, r)
        small = [c for c in range(n) if c != large][int(rng.integers(n - 1))]
        v.fraction[r, [large, small]] = self._reached[r, [small, large]]
        return list(range(n)), None

    def _swap_slots(self, v: Drawn, r: int, rng):
        n = self._n(v, r)
        i, j = (int(c) for c in rng.choice(n, size=2, replace=False))
        v.jitter[r, :, [i, j]] = v.jitter[r, :, [j, i]]  # each takes the other's place, not only its slot
        self._swap(v, r, i, j, ("slot",))
        v.fraction[r, [i, j]] = self._reached[r, [i, j]]  # each keeps its planned share at its new place
        return list(range(n)), None

    def _swap_colors(self, v: Drawn, r: int, rng):
        n, colors = self._n(v, r), v.colors[r]
        objs = [self.set.objects[int(i)] for i in v.ids[r, :n]]
        allowed = [set(o.allowed_colors(self.set.palette)) if o.colorable else {colors[c]}
                   for c, o in enumerate(objs)]
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)
                 if colors[i] != colors[j] and colors[j] in allowed[i] and colors[i] in allowed[j]]
        if not pairs:
            return list(range(n)), ObjectsMiss("no two of its objects can exchange colours")
        i, j = pairs[int(rng.integers(len(pairs)))]
        colors[i], colors[j] = colors[j], colors[i]
        return list(range(n)), None

    def _remove(self, v: Drawn, r: int, rng):
        n, large = self._n(v, r), self._largest(v, r)
        gone = [c for c in range(n) if c != large][int(rng.integers(n - 1))]
        keep = [c for c in range(K) if c != gone] + [gone]
        for f in ("ids", "fraction", "slot", "yaw", "material", "variant"):
            getattr(v, f)[r] = getattr(v, f)[r, keep]
        v.jitter[r] = v.jitter[r][:, keep]
        v.valid[r, n - 1] = False
        del v.colors[r][gone]
        return [c for c in range(n) if c != gone], None

    def _add(self, v: Drawn, r: int, rng):
        n = self._n(v, r)
        new = int(self.drawer._choose(v.kept[r:r + 1, :K], np.array([n + 1]))[0, n])
        colors = self.drawer._colors([v.uniform[r, COLOR:COLOR + K].tolist()], [v.ids[r].tolist()[:n] + [new]],
                                     [n + 1])[0]
        return self._grow(v, r, new, colors[n], None, self._small_share(v, r)), None

    def _count(self, v: Drawn, r: int, rng):
        n, large = self._n(v, r), self._largest(v, r)
        others = [c for c in range(n) if c != large] or [large]
        twin = others[int(rng.integers(len(others)))]
        share = self._small_share(v, r) if twin == large and self.cfg.layout != "equal" else float(v.fraction[r, twin])
        return self._grow(v, r, int(v.ids[r, twin]), v.colors[r][twin], int(v.material[r, twin]), share), None

    def _small_share(self, v: Drawn, r: int) -> float:
        """The share of an added object: the base stream's next small share (one-large), the
        equal share, or the smallest share of the base (graded, realistic)."""
        n, cfg = self._n(v, r), self.cfg
        if cfg.layout == "one-large":
            lo, hi = cfg.small_fraction
            return lo + (hi - lo) * float(v.uniform[r, SMALLS + n - 1])
        if cfg.layout == "equal":
            return cfg.equal_fraction
        return float(v.fraction[r, :n].min())

    def _grow(self, v: Drawn, r: int, obj: int, color, material: int | None, share: float) -> list[int]:
        """Put object `obj` in column n: the next free slot in the base's slot order, column n's turn."""
        n, d = self._n(v, r), self.drawer
        large_slot = int(v.slot[r, self._largest(v, r)])
        order = np.argsort(v.uniform[r, SHUFFLE:SHUFFLE + K - 1], kind="stable")
        used = set(v.slot[r, :n].tolist())
        v.slot[r, n] = next(int(s) for s in d._others[large_slot][order] if int(s) not in used)
        reach = int(d._yaw_range[obj])
        v.yaw[r, n] = int(_pick(v.uniform[r, YAW + n], 2 * reach + 1)) - reach
        if material is None:  # as the base stream's draw gives column n (Drawer.draw)
            fixed = int(d._fixed_material[obj])
            material = fixed if fixed >= 0 else int(_pick(v.uniform[r, MATERIAL + n], len(self.set.materials)))
        v.ids[r, n], v.material[r, n], v.fraction[r, n], v.valid[r, n] = obj, material, share, True
        v.colors[r].append(color)
        return list(range(n)) + [-1]
