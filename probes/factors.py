"""Recorded factors a probe table can be split by (`comco probe ... --by FACTOR`).

A factor reads one value per scene record: a name (the world, the layout, the held-out side)
or a number put into bins (the camera's elevation, a world's strength). Every probe then runs
once per cell on that cell's scenes, so each table and its intervals come per cell, and the
page's too-few rule (MIN_TRIALS) applies to each cell as to any other.

    --by world                 the record's world (plain or an HDRI)
    --by holdout               seen / held-out (a dataset planned with --holdout)
    --by camera-elevation      the camera's elevation in degrees, in 3 bins (about equal counts)
    --by camera-elevation:4    ... in 4 bins
    --by objects               the object count (the tables are already per count; a check)

Other record fields work by name too (`--by floor` reads a field's `name`, `--by layout` a
text field), so a factor the planner records later needs no change here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from comco.errors import UserError

DEFAULT_BINS = 3
MAX_BINS = 20
# Fields every record has that are not factors of the scene (ids, files, lists).
NOT_FACTORS = {"id", "index", "seed", "retry", "image", "object_set", "object_set_hash", "resolution",
               "objects", "mention_orders", "captions", "pair", "camera", "lights"}


def _camera(rec: dict) -> tuple[float, float, float] | None:
    cam = rec.get("camera") or {}
    loc, at = cam.get("location"), cam.get("look_at")
    if not (isinstance(loc, list) and isinstance(at, list) and len(loc) == len(at) == 3):
        return None
    return tuple(float(a) - float(b) for a, b in zip(loc, at))


def _elevation(rec: dict) -> float | None:
    d = _camera(rec)
    return None if d is None else math.degrees(math.atan2(d[2], math.hypot(d[0], d[1])))


def _azimuth(rec: dict) -> float | None:
    d = _camera(rec)
    return None if d is None else math.degrees(math.atan2(d[1], d[0]))


def _distance(rec: dict) -> float | None:
    d = _camera(rec)
    return None if d is None else math.sqrt(sum(x * x for x in d))


def _holdout(rec: dict) -> str | None:
    from comco.plan.holdout import HELD_OUT, SEEN  # the planner names the sides

    shown = rec.get("holdout")
    return None if not isinstance(shown, list) else (HELD_OUT if shown else SEEN)


def _sub(field: str, key: str) -> Callable[[dict], float | None]:
    def read(rec: dict):
        v = (rec.get(field) or {}).get(key) if isinstance(rec.get(field), dict) else None
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    return read


def _world_turn(rec: dict) -> float | None:
    v = _sub("world", "rotation_z")(rec)
    return None if v is None else math.degrees(v)


@dataclass(frozen=True)
class Factor:
    name: str
    read: Callable[[dict], object]  # record -> value, or None where the record does not have it
    numeric: bool = False
    unit: str = ""


KNOWN = {f.name: f for f in (
    Factor("world", lambda r: (r.get("world") or {}).get("name") if isinstance(r.get("world"), dict) else None),
    Factor("holdout", _holdout),
    Factor("objects", lambda r: f"{len(r['objects'])} objects"),
    Factor("camera-elevation", _elevation, numeric=True, unit="°"),
    Factor("camera-azimuth", _azimuth, numeric=True, unit="°"),
    Factor("camera-distance", _distance, numeric=True, unit=" m"),
    Factor("camera-lens", _sub("camera", "lens_mm"), numeric=True, unit=" mm"),
    Factor("world-strength", _sub("world", "strength"), numeric=True),
    Factor("world-rotation", _world_turn, numeric=True, unit="°"),
)}


def _field(name: str) -> Factor:
    """A record field by name: its text, its number, or its `name` when it is an object."""
    key = name.replace("-", "_")

    def read(rec: dict):
        v = rec.get(key)
        if isinstance(v, dict):
            v = v.get("name")
        return v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None
    return Factor(name, read)


def recorded(records: list[dict]) -> list[str]:
    """The factors these records carry (at least one record has a value), known ones first."""
    out = [name for name, f in KNOWN.items() if any(f.read(r) is not None for r in records)]
    fields = sorted({k.replace("_", "-") for r in records for k in r if k not in NOT_FACTORS})
    return out + [f for f in fields if f not in out and any(_field(f).read(r) is not None for r in records)]


def parse_by(text: str | None, records: list[dict]) -> tuple[Factor, int] | None:
    """--by FACTOR[:BINS] -> (the factor, its bins); None without --by. A factor no record carries
    is refused, listing those they do (one line)."""
    if not text:
        return None
    name, _, bins_text = text.strip().lower().partition(":")
    have = recorded(records)
    if name not in have:
        raise UserError(f"--by {text}: this dataset records no factor '{name}'; recorded: {', '.join(have)}")
    factor = KNOWN.get(name) or _field(name)
    if bins_text and not factor.numeric:
        raise UserError(f"--by {text}: {name} is not a number; bins are for numeric factors "
                        f"({', '.join(n for n, f in KNOWN.items() if f.numeric)})")
    try:
        bins = int(bins_text) if bins_text else DEFAULT_BINS
    except ValueError:
        raise UserError(f"--by {text}: the bins after ':' are a whole number, e.g. {name}:4") from None
    if not 1 <= bins <= MAX_BINS:
        raise UserError(f"--by {text}: use 1..{MAX_BINS} bins")
    return factor, bins


def cells(factor: Factor, bins: int, records: list[dict]) -> dict[str, list[dict]]:
    """Cell label -> its records, in a fixed order (names sorted; bins low to high). Records
    without the factor form the cell "not recorded"."""
    values = [factor.read(r) for r in records]
    labels = _bin_labels(factor, bins, values) if factor.numeric else [None if v is None else str(v) for v in values]
    out: dict[str, list[dict]] = {}
    order = sorted({x for x in labels if x is not None}, key=_order_key(factor, labels, values))
    for label in order + ([None] if None in labels else []):
        out["not recorded" if label is None else label] = [r for r, x in zip(records, labels) if x == label]
    return out


def _order_key(factor: Factor, labels: list, values: list):
    if not factor.numeric:
        return lambda x: x
    low = {}
    for x, v in zip(labels, values):
        if x is not None:
            low[x] = min(low.get(x, math.inf), v)
    return lambda x: low[x]


def _bin_labels(factor: Factor, bins: int, values: list) -> list[str | None]:
    """Equal-count bins over the distinct values (each distinct value its own cell when there
    are no more of them than bins), labelled by the values they hold: "camera-elevation 20.1-31.5°"."""
    distinct = sorted({round(v, 6) for v in values if v is not None})
    if len(distinct) <= bins:
        groups = [[d] for d in distinct]
    else:
        groups, size = [], len(distinct) / bins
        for b in range(bins):
            groups.append(distinct[round(b * size):round((b + 1) * size)])
    where = {d: g for g in groups for d in g}

    def label(g):
        lo, hi = g[0], g[-1]
        span = f"{lo:.3g}" if lo == hi else f"{lo:.3g}-{hi:.3g}"
        return f"{factor.name} {span}{factor.unit}"
    return [None if v is None else label(where[round(v, 6)]) for v in values]
