"""Winoground's layout: `examples.jsonl` and `images/`, as its Hugging Face loading script
(facebook/winoground, winoground.py) reads the repository's `data/examples.jsonl` and the
extracted `data/images.zip`.

One JSON line per item with the script's features: `id` (int), `image_0` and `image_1` (file
names without `.png`, which the script appends under `images/`), `caption_0` and `caption_1`,
`tag`, `secondary_tag`, `num_main_preds` and `collapsed_tag`. Item 0 is the base image with its
caption, item 1 the variant with its own; `tag` and `collapsed_tag` carry the comco factor
(Winoground's own tags are linguistic: Object, Relation, Both), `secondary_tag` is empty and
`num_main_preds` 0 (comco does not annotate predicates). `comco-pairs.jsonl` says, line for line,
which pair, caption order, template and records each item came from.
`remove` and `add` pairs are left out (counted as `one_way`): Winoground's scores ask each image
to reject the other's caption, and a caption that leaves an object out is not false for the image
that holds it (the SugarCrepe and SPEC exports keep their one true direction).
"""

from __future__ import annotations

from pathlib import Path

from comco.data.export.pair_items import ImageSink, pair_items, pair_records
from comco.data.pairing import ONE_WAY
from comco.errors import UserError
from comco.io import atomic_write, dumps

EXAMPLES = "examples.jsonl"
IMAGES = "images"
SIDE = "comco-pairs.jsonl"
IMAGE_EXTENSION = ".png"  # the script's IMAGE_EXTENSION


def prepare(dataset, opts):
    items, left = pair_items(pair_records(dataset, "winoground"), opts.template, opts.captions)
    kept = [it for it in items if it.factor not in ONE_WAY]
    return dataset, kept, {**left, "one_way": len(items) - len(kept)}


def write(prepared, out: Path, opts, bar) -> dict:
    dataset, items, left = prepared
    sink = ImageSink(dataset, out / IMAGES, bar)
    with atomic_write(out / EXAMPLES) as f, atomic_write(out / SIDE) as side:
        for i, it in enumerate(items):
            names = [sink.name(it.pair.base), sink.name(it.pair.variant)]
            if not all(n.endswith(IMAGE_EXTENSION) for n in names):
                raise UserError(f"Winoground's loader reads .png images; {names} are not (render the dataset again)")
            f.write(dumps({"id": i, "image_0": names[0][:-4], "image_1": names[1][:-4],
                           "caption_0": it.base_caption, "caption_1": it.variant_caption,
                           "tag": it.factor, "secondary_tag": "", "num_main_preds": 0,
                           "collapsed_tag": it.factor}) + "\n")
            side.write(dumps({"id": i, **it.row()}) + "\n")
    return {"images": len(sink.placed), "texts": 2 * len(items), "items": len(items), "left_out": left,
            "files": [EXAMPLES, f"{IMAGES}/", SIDE]}


def usage(out: Path, summary: dict, opts) -> str:
    return (f"winoground.py's _generate_examples(examples_jsonl='{out}/{EXAMPLES}', images_dir='{out}') "
            f"(facebook/winoground; the script joins images_dir, 'images', image_0 + '.png')")
