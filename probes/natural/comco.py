"""comco's own renders as a retrieval benchmark: each image with its `long` captions.

A `long` caption is a summary sentence naming every object, then one sentence per
object (docs/dev/contract.md), one caption per mention order: the same shape as the
long-caption benchmarks, so the DeBias analyses run on it unchanged.
"""

from __future__ import annotations

from pathlib import Path

from comco.probes.natural.split import NaturalSplit, require_file

COMCO_LAYOUT = "a comco dataset: ROOT/dataset.json, ROOT/scenes.jsonl and the images it names"


def load_comco(root: Path) -> NaturalSplit:
    from comco.data.folder import Dataset  # the dataset module is the one reader of scenes.jsonl

    for name in ("dataset.json", "scenes.jsonl"):
        require_file(root / name, "comco", COMCO_LAYOUT)
    dataset = Dataset(root)
    split = NaturalSplit("comco", "long", root, [])
    for record in dataset.records():
        captions = record.get("captions", {}).get("long", [])
        split.add(Path(dataset.image_path(record)), list(captions))
    return split
