"""What the pair-benchmark exports share: a pair dataset's (base, variant) caption pairs and the
images they place in the export.

An item is one caption order k of one pair: the base image and caption k of the factor's template
(comco.data.pairing.FACTOR_TEMPLATES, or the one --template names) against the variant's. Pairs are
grouped by their `pair` entries, so the records are read into memory (the images are not).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from comco.data.export.links import place
from comco.data.folder import SCENES, Dataset, image_file, record_key
from comco.data.pairing import FACTOR_TEMPLATES, FACTORS, Pair, find_pairs, has_pairs, pair_captions
from comco.errors import UserError


@dataclass(frozen=True)
class PairItem:
    pair: Pair
    k: int  # the caption order
    template: str
    base_caption: str
    variant_caption: str

    @property
    def factor(self) -> str:
        return self.pair.factor

    def row(self) -> dict:
        """Where the item came from, for the exports' comco side files."""
        p = self.pair
        return {"pair": p.id, "factor": p.factor, "caption_order": self.k, "template": self.template,
                "base": p.base["id"], "variant": p.variant["id"], "n_objects": p.n_objects,
                "changed": p.variant["pair"].get("changed", [])}


def pair_records(dataset: Dataset, fmt: str) -> list[dict]:
    """The dataset's records; one line when it holds no pairs."""
    records = [r for r in dataset.records() if isinstance(r, dict)]
    if not has_pairs(records):
        raise UserError(f"--to {fmt} writes one-factor pairs, and {dataset.root / SCENES} has no pair records; "
                        f"render the dataset with --pairs FACTOR")
    return records


def pair_items(records: list[dict], template: str | None, captions: str) -> tuple[list[PairItem], dict]:
    """(the items in factor order, then record order; counts of what was left out).

    Args:
        records: the dataset's records.
        template: a template for every factor (None: each factor's own).
        captions: "all" (every caption order) or "first" (the first order whose two captions differ).
    """
    pairs, orphans = find_pairs(records)
    items, left = [], {"identical": 0, "no_captions": 0, "orphans": len(orphans)}
    order = {f: i for i, f in enumerate(FACTORS)}
    for p in sorted(pairs, key=lambda p: order.get(p.factor, len(order))):  # stable: record order within
        name = template or FACTOR_TEMPLATES.get(p.factor)
        caps, identical = pair_captions(p, name)
        left["identical"] += identical
        if not caps and not identical:
            left["no_captions"] += 1
        for c in caps[:1] if captions == "first" else caps:
            items.append(PairItem(p, c.k, name, c.base, c.variant))
    if not items:
        raise UserError("no pair has two different captions from its factor's template "
                        f"({', '.join(f'{f}: {t}' for f, t in FACTOR_TEMPLATES.items())}); "
                        "plan the pairs with those templates or pass --template")
    return items, left


class ImageSink:
    """Places each record's image once in an export folder: a hard link where the file system allows, else a copy."""

    def __init__(self, dataset: Dataset, folder: Path, bar=None):
        self.dataset, self.folder, self.bar = dataset, Path(folder), bar
        self.placed: dict[str, str] = {}
        self.linking = [True]

    def name(self, record: dict) -> str:
        """The image's file name in the folder (the record id and the image's suffix)."""
        rid = record_key(record)  # the file's stem
        if rid in self.placed:
            return self.placed[rid]
        src = image_file(self.dataset.root, record)
        if not src.is_file():
            raise UserError(f"{self.dataset.root}: record {rid} has no image ({record.get('image')}); "
                            "render it (`comco render`) first")
        name = f"{rid}{src.suffix.lower()}"
        self.folder.mkdir(parents=True, exist_ok=True)
        place(src, self.folder / name, self.linking)
        self.placed[rid] = name
        if self.bar is not None:
            self.bar.advance()
        return name
