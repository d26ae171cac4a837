"""SPEC's layout: a folder per subset holding `image2text.json` and `text2image.json`, as its
`spec/dataset.py` reads them (Image2TextDataset, Text2ImageDataset; paths relative to the subset).

One subset per comco factor (`swap-size/`, `swap-slots/`, ...), its images in `SUBSET/images/`.
image2text: `{"query": "images/ID.png", "keys": [base caption, variant caption], "label": i}`,
one per image of a pair; text2image: `{"query": caption, "keys": ["images/BASE.png",
"images/VARIANT.png"], "label": i}`, one per caption. Every candidate set holds the two images or
captions of one pair, so a subset's sets are of one size (SPEC's collate stacks them).
`SUBSET/comco-pairs.jsonl` says which pair each pair of entries came from.
`remove` and `add` keep one direction each, as the SugarCrepe export does (a caption that leaves
an object out is not false for the image that holds it): image2text only for the image that the
partner's caption is false for, text2image only for that false caption.
"""

from __future__ import annotations

from pathlib import Path

from comco.data.export.pair_items import ImageSink, pair_items, pair_records
from comco.data.pairing import ONE_WAY
from comco.io import atomic_write, dumps, write_json

I2T, T2I, SIDE, IMAGES = "image2text.json", "text2image.json", "comco-pairs.jsonl", "images"
SIDES = {"base": 0, "variant": 1, "both": None}


def prepare(dataset, opts):
    return (dataset, *pair_items(pair_records(dataset, "spec"), opts.template, opts.captions))


def write(prepared, out: Path, opts, bar) -> dict:
    dataset, items, left = prepared
    subsets: dict[str, list] = {}
    for it in items:
        subsets.setdefault(it.factor, []).append(it)
    placed = 0
    for factor, its in subsets.items():
        root = out / factor
        sink = ImageSink(dataset, root / IMAGES, bar)
        i2t, t2i = [], []
        with atomic_write(root / SIDE) as side:
            for it in its:
                images = [f"{IMAGES}/{sink.name(it.pair.base)}", f"{IMAGES}/{sink.name(it.pair.variant)}"]
                texts = [it.base_caption, it.variant_caption]
                false_caption, its_image = (SIDES[s] for s in ONE_WAY.get(it.factor, ("both", "both")))
                for label in (0, 1):
                    if its_image in (None, label):
                        i2t.append({"query": images[label], "keys": texts, "label": label})
                    if false_caption in (None, label):
                        t2i.append({"query": texts[label], "keys": images, "label": label})
                side.write(dumps(it.row()) + "\n")
        write_json(root / I2T, i2t, indent=None, sort_keys=False)
        write_json(root / T2I, t2i, indent=None, sort_keys=False)
        placed += len(sink.placed)
    return {"images": placed, "texts": 2 * len(items), "items": {f: len(v) for f, v in subsets.items()},
            "left_out": left, "files": [f"{f}/{name}" for f in subsets for name in (I2T, T2I, SIDE, IMAGES + "/")]}


def usage(out: Path, summary: dict, opts) -> str:
    return (f"SPEC's spec.dataset.get_data(data_root='{out}', subset_names={list(summary['items'])}, ...) from "
            f"Python (its eval.py --subset-names accepts only SPEC's own six subset names)")
