"""A Hugging Face `imagefolder` dataset: `images/` and `metadata.jsonl` beside them.

`datasets.load_dataset("imagefolder", data_dir=OUT)` reads it as one `train` split: the
image, `text` (the first caption), `captions` (one per mention order), `mention_orders`,
scene fields, and `objects`, a table of lists in object order (name, slot, size rank,
scale, colour, material, planned and measured fractions, pixels, boxes), as the Hub's
detection sets write theirs. With --depth / --normals, `depth` and `normals` are Image columns
too (`depth_file_name`: a 16-bit PNG, millimetres), and with --relations `relations` is a
sequence of {subject, predicate, object} and `occlusion_order` a sequence of object indices.
The images (and maps) are hard links to the dataset's files where the file system allows (no
copy, no extra space), else copies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from comco.data.export.links import place
from comco.data.export.samples import Sample
from comco.io import atomic_write, dumps

METADATA = "metadata.jsonl"
IMAGES = "images"


def write(items: Iterator[Sample], out: Path, opts, bar) -> dict:
    (out / IMAGES).mkdir(parents=True, exist_ok=True)
    linking = [True]
    images = texts = 0
    with atomic_write(out / METADATA) as f:
        for s in items:
            name = f"{IMAGES}/{s.key}{s.image.suffix.lower()}"
            place(s.image, out / name, linking)
            extra = {}
            for field, path in s.outputs.items():  # "depth_file_name": imagefolder's second Image column
                extra[f"{field}_file_name"] = f"{field}/{s.key}{path.suffix.lower()}"
                (out / field).mkdir(exist_ok=True)
                place(path, out / extra[f"{field}_file_name"], linking)
            f.write(dumps({"file_name": name, **extra, **s.row}) + "\n")
            images += 1
            texts += len(s.captions)
            bar.advance()
    return {"images": images, "texts": texts, "linked": linking[0], "files": [METADATA, f"{IMAGES}/"]}


def usage(out: Path, summary: dict, opts) -> str:
    return f'datasets.load_dataset("imagefolder", data_dir="{out}", split="train")'
