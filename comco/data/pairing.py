"""Counterfactual pairs in a dataset: which records are a base and its one-factor variants.

Every record of a pair dataset carries `"pair": {"id": BASE_ID, "factor": F, "changed": [...]}`;
F is "base" for the base record and a factor name for a variant (record id f"{BASE_ID}-{F}").
The probe (comco.probes.pairs) and the pair-benchmark exports read pairs through this module,
so both group records, pick the factor's template and skip the same pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

from comco.record import PAIR_BASE as BASE
from comco.record import PAIR_FACTORS, PairEntry, SceneRecord, largest

FACTORS = PAIR_FACTORS  # the record's vocabulary: one list of factors for planner and probe
# The template whose captions name what the factor changes (written by the pair planner).
# Factors whose captions are false one way only: a caption that leaves an object out is incomplete, not
# false, for the image that holds it. factor -> (the side whose caption is false for the other side's
# image, that image's side): remove's base caption names an object its variant lacks; add's variant
# caption names one its base lacks. Every other factor's captions are each false for the other image.
ONE_WAY = {"remove": ("base", "variant"), "add": ("variant", "base")}
FACTOR_TEMPLATES = {"swap-size": "sizes", "swap-slots": "relations", "swap-colors": "attributes",
                    "remove": "and", "add": "and", "count": "counts"}


@dataclass(frozen=True)
class Pair:
    id: str  # the base record's id
    factor: str
    base: SceneRecord
    variant: SceneRecord

    @property
    def n_objects(self) -> int:
        return len(self.base["objects"])


@dataclass(frozen=True)
class PairCaptions:
    """Caption k of the base against caption k of the variant, under the factor's template."""
    k: int
    base: str
    variant: str


def pair_entry(record: SceneRecord) -> PairEntry | None:
    entry = record.get("pair")
    return entry if isinstance(entry, dict) and "id" in entry and "factor" in entry else None


def has_pairs(records: list[SceneRecord]) -> bool:
    return any(pair_entry(r) and pair_entry(r)["factor"] != BASE for r in records)


def find_pairs(records: list[SceneRecord]) -> tuple[list[Pair], list[SceneRecord]]:
    """(every (base, variant) pair in record order, the variants whose base is not among the records)."""
    bases = {str(e["id"]): r for r in records if (e := pair_entry(r)) and e["factor"] == BASE}
    pairs, orphans = [], []
    for r in records:
        e = pair_entry(r)
        if not e or e["factor"] == BASE:
            continue
        base = bases.get(str(e["id"]))
        if base is None:
            orphans.append(r)
        else:
            pairs.append(Pair(str(e["id"]), str(e["factor"]), base, r))
    return pairs, orphans


def pair_captions(pair: Pair, template: str | None = None) -> tuple[list[PairCaptions], int]:
    """(the pair's caption pairs under `template` (default: the factor's), how many were identical).

    Caption k of each record is written in its mention order k; with the same objects (the swaps)
    the planner keeps the orders, so both captions name the objects in one order. A caption pair
    whose two texts are the same cannot tell the images apart and is left out (and counted)."""
    name = template or FACTOR_TEMPLATES.get(pair.factor)
    base = (pair.base.get("captions") or {}).get(name) or []
    variant = (pair.variant.get("captions") or {}).get(name) or []
    out, identical = [], 0
    for k, (b, v) in enumerate(zip(base, variant)):
        if b == v:
            identical += 1
        else:
            out.append(PairCaptions(k, b, v))
    return out, identical


def names_largest_first(record: SceneRecord, k: int) -> bool:
    """Whether caption k of the record (its mention order k) names its planned largest object first."""
    orders = record.get("mention_orders") or []
    return k < len(orders) and bool(orders[k]) and orders[k][0] == largest(record)
