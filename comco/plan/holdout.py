"""Held-out compositions (--holdout): combinations of objects with each other or with a slot,
a colour or a size rank that a training set never shows and its test set always shows
(CLEVR's CoGenT, Kubric's held-out splits).

    --holdout pairs:cup+bowl,mug+fork     these two objects never together
    --holdout slot:cup=M,mug=UL           an object never in that slot
    --holdout color:cube=red              an object never in that colour (with --colors)
    --holdout size:cup=0                  an object never at that size rank (0 = largest)
    --holdout pairs:auto:0.1[:SEED]       a seeded tenth of every combination of the kind

Named lists say what a researcher means; `auto` holds out a share of the kind's combinations,
drawn from its own seed (not the dataset's), so the training plan and the test plan, which
differ in --seed, hold out the same ones. `--holdout-split` says which side a plan is:
train (no image shows a held-out combination), test (every image shows one) or mixed (images
alternate sides in turns of the object counts, so that every count has both: one set that a
probe splits with `--by holdout`).

A test image is built around a held-out combination (its objects are put into the scene and
the attempt is drawn again until the slot, colour or rank fits); a training image has its
objects repaired (pairs) or is drawn again. Every record says which held-out combinations it
shows (`holdout`); dataset.json holds the resolved list; `comco validate` checks both.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from comco.errors import UserError
from comco.record import SLOTS

FLAG = "--holdout"
KINDS = ("pairs", "slot", "color", "size")
SPLITS = ("train", "test", "mixed")
TRAIN, TEST, MIXED = SPLITS
SEEN, HELD_OUT = "seen", "held-out"  # a record's side, as `comco probe --by holdout` names it
_AUTO = re.compile(r"auto:(?P<share>[0-9.eE+-]+)(?::(?P<seed>\d+))?")


def parse_holdout(value) -> str | None:
    """--holdout's text checked for its form (the names are checked against the object set later,
    check_holdout) and written canonically: "pairs:bowl+cup" (each pair's names sorted), "slot:cup=M"."""
    if value is None:
        return None
    text = str(value).strip()
    kind, sep, rest = text.partition(":")
    kind = kind.strip().lower()
    if kind == "colour":
        kind = "color"
    if not sep or kind not in KINDS:
        raise UserError(f"{FLAG} {text!r}: start with a kind, one of {', '.join(KINDS)} "
                        f"(e.g. pairs:cup+bowl, slot:cup=M, color:cube=red, size:cup=0 or pairs:auto:0.1)")
    rest = rest.strip()
    auto = _AUTO.fullmatch(rest)
    if auto:
        try:
            share = float(auto["share"])
        except ValueError:
            share = math.nan
        if not 0 < share < 1:
            raise UserError(f"{FLAG} {text}: auto's share is in (0, 1), e.g. {kind}:auto:0.1")
        if auto["seed"]:
            from comco.plan.rng import check_seed

            check_seed(int(auto["seed"]), f"{FLAG} {text}: its seed")
        return f"{kind}:auto:{share:g}" + (f":{int(auto['seed'])}" if auto["seed"] else "")
    items = [t.strip() for t in rest.split(",") if t.strip()]
    if not items:
        raise UserError(f"{FLAG} {text!r}: name at least one combination after '{kind}:'")
    return f"{kind}:" + ",".join(_canonical_item(kind, t, text) for t in items)


def _canonical_item(kind: str, item: str, text: str) -> str:
    if kind == "pairs":
        names = [n.strip() for n in item.split("+")]
        if len(names) != 2 or not all(names):
            raise UserError(f"{FLAG} {text}: '{item}' is not a pair; write two objects joined by +, e.g. cup+bowl")
        if names[0] == names[1]:
            raise UserError(f"{FLAG} {text}: '{item}' pairs an object with itself; an image holds each object once")
        return "+".join(sorted(names))
    name, eq, attr = (t.strip() for t in item.partition("="))
    if not eq or not name or not attr:
        example = {"slot": "cup=M", "color": "cube=red", "size": "cup=0"}[kind]
        raise UserError(f"{FLAG} {text}: '{item}' is not object=value; write e.g. {kind}:{example}")
    if kind == "slot":
        if attr.upper() not in SLOTS:
            raise UserError(f"{FLAG} {text}: slot '{attr}' of '{item}' is not one of {', '.join(SLOTS)}")
        attr = attr.upper()
    if kind == "size" and not attr.isdigit():
        raise UserError(f"{FLAG} {text}: size rank '{attr}' of '{item}' is not a whole number (0 = largest)")
    return f"{name}={attr}"


def combination_text(kind: str, combo: tuple) -> str:
    """A combination as --holdout and the records write it: "bowl+cup", "cup=M", "cup=0"."""
    return "+".join(combo) if kind == "pairs" else f"{combo[0]}={combo[1]}"


@dataclass(frozen=True)
class Holdout:
    """A resolved holdout: its kind, the held-out combinations and the plan's side of the split.

    Combinations: pairs as (name, name) sorted, the others as (name, slot / colour / rank)."""

    kind: str
    combos: frozenset
    split: str
    spec: str
    counts: int = 1  # how many object counts the images take in turn (round robin)

    def wants_held_out(self, index: int) -> bool:
        """Whether image `index` is a test image (shows a held-out combination). A mixed split turns
        sides after each round of the object counts (image i has count i % counts), so every count
        has images on both sides."""
        return self.split == TEST or (self.split == MIXED and (index // self.counts) % 2 == 1)

    def shows(self, names: list[str], slots: list[str], colors: list, ranks: list[int]) -> list[str]:
        """The held-out combinations a scene of these objects shows, as text, in a fixed order."""
        if self.kind == "pairs":
            found = {(a, b) if a < b else (b, a) for i, a in enumerate(names) for b in names[i + 1:]}
        else:
            values = {"slot": slots, "color": colors, "size": ranks}[self.kind]
            found = set(zip(names, values))
        return sorted(combination_text(self.kind, c) for c in found & self.combos)

    def shows_record(self, record: dict) -> list[str]:
        objs = record["objects"]
        return self.shows([o["name"] for o in objs], [o["slot"] for o in objs], [o.get("color") for o in objs],
                          [o["size_rank"] for o in objs])

    def side(self, record: dict) -> str:
        """The side a record's scene is on: HELD_OUT when it shows a held-out combination, else SEEN."""
        return HELD_OUT if self.shows_record(record) else SEEN

    def to_info(self) -> dict:
        """dataset.json's `holdout`: the split and every held-out combination, resolved."""
        return {"kind": self.kind, "split": self.split, "spec": self.spec,
                "combinations": sorted(combination_text(self.kind, c) for c in self.combos)}


# ---------------------------------------------------------------- resolving against the set


def _object_colors(o, object_set) -> tuple[str, ...]:
    """The colours an object can take with --colors (drawn.py's rule)."""
    allowed = tuple(o.allowed_colors(object_set.palette)) or (object_set.default_color,)
    return allowed if o.colorable else allowed[:1]


def _values(kind: str, o, object_set, counts: tuple[int, ...]) -> tuple:
    """The values an object can take in the kind's combinations."""
    if kind == "slot":
        return SLOTS
    if kind == "color":
        return _object_colors(o, object_set)
    return tuple(range(max(counts)))


def _universe(kind: str, object_set, counts) -> list[tuple]:
    names = list(object_set.names)
    if kind == "pairs":
        return [(a, b) if a < b else (b, a) for i, a in enumerate(names) for b in names[i + 1:]]
    return [(o.name, v) for o in object_set.objects for v in _values(kind, o, object_set, counts)]


def _named(kind: str, items: list[str], object_set, counts, spec: str) -> frozenset:
    by_name = {o.name: o for o in object_set.objects}
    out = set()
    for item in items:
        if kind == "pairs":
            names = item.split("+")
        else:
            names = [item.split("=", 1)[0]]
        for n in names:
            if n not in by_name:
                raise UserError(f"{FLAG} {spec}: unknown object '{n}' in set '{object_set.name}' "
                                f"(`comco objects list {object_set.name}` lists them)")
        if kind == "pairs":
            out.add(tuple(names))
            continue
        name, attr = item.split("=", 1)
        value = int(attr) if kind == "size" else attr
        if value not in _values(kind, by_name[name], object_set, counts):
            if kind == "size":
                why = (f"size rank {value} needs {value + 1} objects, and --objects gives at most {max(counts)} "
                       f"(ranks 0..{max(counts) - 1})")
            else:
                why = (f"'{name}' is never {value} in set '{object_set.name}' (its colours: "
                       f"{', '.join(_values(kind, by_name[name], object_set, counts))})")
            raise UserError(f"{FLAG} {spec}: {item} is impossible: {why}")
        out.add((name, value))
    return frozenset(out)


def _auto(kind: str, share: float, seed: int, object_set, counts) -> frozenset:
    """A `share` of the kind's combinations, drawn in a seeded order; a combination that would
    take an object's last value (or, for pairs, more partners than a largest scene needs) is passed over."""
    from comco.plan.rng import factor_seed, generator

    universe = _universe(kind, object_set, counts)
    order = generator(factor_seed(seed, f"holdout-{kind}")).permutation(len(universe))
    want = max(1, round(share * len(universe)))
    left = {o.name: (len(object_set.names) - 1 if kind == "pairs" else
                     len(_values(kind, o, object_set, counts))) for o in object_set.objects}
    keep = max(counts) - 1 if kind == "pairs" else 1
    out = set()
    for i in order.tolist():
        if len(out) == want:
            break
        combo = universe[i]
        owners = combo if kind == "pairs" else combo[:1]
        if all(left[n] > keep for n in owners):
            out.add(combo)
            for n in owners:
                left[n] -= 1
    return frozenset(out)


def resolve_holdout(cfg, object_set) -> Holdout | None:
    """The configuration's holdout against its object set, checked (UserError, one line naming
    --holdout); None without --holdout."""
    if cfg.holdout is None:
        if cfg.holdout_split != TRAIN:
            raise UserError(f"--holdout-split {cfg.holdout_split}: say what is held out with --holdout "
                            f"(e.g. --holdout pairs:auto:0.1)")
        return None
    spec = parse_holdout(cfg.holdout)
    kind, _, rest = spec.partition(":")
    counts = tuple(cfg.objects)
    if kind == "color" and not cfg.colors:
        raise UserError(f"{FLAG} {spec}: the objects have no colours without --colors; add --colors")
    if cfg.pairs:
        raise UserError(f"{FLAG} with --pairs: a pair variant (a swap, an added object) could show a held-out "
                        f"combination; plan held-out splits without --pairs")
    auto = _AUTO.fullmatch(rest)
    if auto:
        combos = _auto(kind, float(auto["share"]), int(auto["seed"] or 0), object_set, counts)
    else:
        combos = _named(kind, rest.split(","), object_set, counts, spec)
    holdout = Holdout(kind=kind, combos=combos, split=cfg.holdout_split, spec=spec, counts=len(counts))
    _check_training_images(holdout, object_set, counts)
    if holdout.split != TRAIN:
        _check_test_images(holdout, counts)
    return holdout


def _check_training_images(h: Holdout, object_set, counts) -> None:
    """Refuse a holdout that leaves an object without any training image (or a count without any)."""
    if h.kind == "pairs":
        allowed = _allowed_partners(h, object_set)
        for c in counts:
            if c > 1 and not any(_has_clique(allowed, c, start) for start in allowed):
                raise UserError(f"{FLAG} {h.spec}: no {c}-object image avoids every held-out pair; "
                                f"hold out fewer pairs or use fewer --objects")
        for name in object_set.names:
            if not any(c == 1 or _has_clique(allowed, c, name) for c in counts):
                raise UserError(f"{FLAG} {h.spec}: '{name}' is left with no training image (no "
                                f"{max(counts)}-object scene holds it without a held-out pair); hold out fewer "
                                f"of its pairs")
        return
    for o in object_set.objects:
        values = _values(h.kind, o, object_set, counts)
        if h.kind == "size":  # some count must leave it a rank that is not held out
            free = any(any((o.name, r) not in h.combos for r in range(c)) for c in counts)
        else:
            free = any((o.name, v) not in h.combos for v in values)
        if not free:
            raise UserError(f"{FLAG} {h.spec}: '{o.name}' is left with no training image (every "
                            f"{ {'slot': 'slot', 'color': 'colour', 'size': 'size rank'}[h.kind]} of it is "
                            f"held out); keep one")


def _check_test_images(h: Holdout, counts) -> None:
    """A test image of every object count must be able to show a held-out combination."""
    for c in counts:
        if not test_combos(h, c):
            need = "2 or more objects" if h.kind == "pairs" else "more objects than the held-out ranks"
            raise UserError(f"{FLAG} {h.spec} --holdout-split {h.split}: a {c}-object image cannot show any "
                            f"held-out combination; use --objects with {need}")


def test_combos(h: Holdout, count: int) -> list[tuple]:
    """The held-out combinations a test image of `count` objects can be built around, in a fixed order."""
    if h.kind == "pairs":
        return sorted(h.combos) if count >= 2 else []
    if h.kind == "size":
        return sorted(c for c in h.combos if c[1] < count)
    return sorted(h.combos)


def _allowed_partners(h: Holdout, object_set) -> dict[str, set[str]]:
    names = list(object_set.names)
    return {a: {b for b in names if b != a and ((a, b) if a < b else (b, a)) not in h.combos} for a in names}


def _has_clique(allowed: dict[str, set[str]], size: int, must: str) -> bool:
    """Whether `must` and size - 1 objects can share a scene without a held-out pair (a small
    depth-first search: sizes are at most 5)."""
    def grow(chosen: list[str], candidates: set[str]) -> bool:
        if len(chosen) == size:
            return True
        for b in sorted(candidates):
            if grow(chosen + [b], {x for x in candidates & allowed[b] if x > b}):
                return True
        return False
    return grow([must], set(allowed[must]))


class Composer:
    """The planner's side of a holdout: which objects an attempt draws (a test image's are built
    around a held-out combination, a training image's pairs are repaired) and whether a drawn
    scene is on its side of the split.

    Args:
        holdout: the resolved holdout.
        object_set: the set the planner draws from (ids index its objects).
        dataset_seed: --seed (each image's holdout stream derives from its own seed)."""

    def __init__(self, holdout: Holdout, object_set, dataset_seed: int):
        from comco.plan.rng import Reseedable

        self.holdout, self.seed = holdout, dataset_seed
        self.names = list(object_set.names)
        self.id_of = {n: i for i, n in enumerate(self.names)}
        self._rng = Reseedable()
        self._test = {}  # count -> the combinations a test image of that count is built around
        self._banned = {}
        if holdout.kind == "pairs":
            for a, b in holdout.combos:
                self._banned.setdefault(self.id_of[a], set()).add(self.id_of[b])
                self._banned.setdefault(self.id_of[b], set()).add(self.id_of[a])

    def objects(self, ids, count, jobs, first_retries) -> None:
        """Rewrite, in place, the objects (rows of `ids`, the first count[a] of each) of the attempts
        `jobs` (index, retry): drawn from the stream of the attempt that drew them, so retries keep them."""
        from comco.plan.rng import factor_seed, image_seed

        for a, ((index, _), first) in enumerate(zip(jobs, first_retries)):
            n = int(count[a])
            test = self.holdout.wants_held_out(index)
            if not test and self.holdout.kind != "pairs":
                continue
            rng = self._rng.seed(factor_seed(image_seed(self.seed, index, first), "holdout"))
            row = ids[a, :n].tolist()
            if test:
                combos = self._test.setdefault(n, test_combos(self.holdout, n))
                combo = combos[int(rng.integers(len(combos)))]
                wanted = [self.id_of[x] for x in (combo if self.holdout.kind == "pairs" else combo[:1])]
                free = [k for k, i in enumerate(row) if i not in wanted]
                for i in wanted:
                    if i not in row:
                        row[free.pop(0)] = i
            else:
                row = self._repair(row, rng.permutation(len(self.names)).tolist())
            ids[a, :n] = row

    def _repair(self, row: list[int], order: list[int]) -> list[int]:
        """A training image's objects without a held-out pair: each object that forms one with those
        kept before it is replaced by the next object of `order` that forms none (or kept when none
        is left: the attempt then fails and draws new objects)."""
        kept: list[int] = []
        spare = iter(i for i in order if i not in row)
        for i in row:
            if self._banned.get(i, set()) & set(kept):
                i = next((j for j in spare if not self._banned.get(j, set()) & set(kept)), i)
            kept.append(i)
        return kept

    def miss(self, index: int, names: list[str], slots: list[str], colors: list, ranks: list[int]):
        """None when the drawn scene is on its side of the split, else why not (a Miss: pairs that
        are wrong stay wrong at any placement, so the attempt draws new objects)."""
        from comco.plan.pairs import Miss, ObjectsMiss

        shown = self.holdout.shows(names, slots, colors, ranks)
        kind = ObjectsMiss if self.holdout.kind == "pairs" else Miss
        if self.holdout.wants_held_out(index) and not shown:
            return kind(f"--holdout {self.holdout.spec}: the test image shows no held-out combination")
        if not self.holdout.wants_held_out(index) and shown:
            return kind(f"--holdout {self.holdout.spec}: the training image shows held-out {shown[0]}")
        return None
