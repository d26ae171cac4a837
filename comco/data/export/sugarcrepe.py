"""SugarCrepe's layout: one JSON file per category, `{"0": {"filename", "caption",
"negative_caption"}, ...}`, as its `main_eval.py` reads `data/swap_att.json` and its kin and
opens `os.path.join(coco_image_root, filename)`.

One file per comco factor (`swap_size.json`, `swap_slots.json`, `swap_colors.json`, `remove.json`,
`add.json`, `count.json`); images in `images/`. An entry is an image with its own caption and the
pair partner's caption as the hard negative. Swaps and count give both directions (each caption is
false for the other image); remove and add give only the direction whose negative names an object
the image lacks (remove: the variant image against the base caption; add: the base image against
the variant caption), since a caption that leaves an object out is not false. Each entry also
carries a `comco` field (pair, caption order, records); main_eval.py reads only the three keys.
"""

from __future__ import annotations

from pathlib import Path

from comco.data.export.pair_items import ImageSink, pair_items, pair_records
from comco.data.pairing import ONE_WAY
from comco.io import write_json

IMAGES = "images"
# Which image a factor's entries show: "base" (against the variant's caption), "variant" (against the base's)
DIRECTIONS = {factor: (image,) for factor, (_, image) in ONE_WAY.items()}
BOTH = ("base", "variant")


def file_name(factor: str) -> str:
    return factor.replace("-", "_") + ".json"


def prepare(dataset, opts):
    return (dataset, *pair_items(pair_records(dataset, "sugarcrepe"), opts.template, opts.captions))


def write(prepared, out: Path, opts, bar) -> dict:
    dataset, items, left = prepared
    sink = ImageSink(dataset, out / IMAGES, bar)
    files: dict[str, dict] = {}
    for it in items:
        entries = files.setdefault(it.factor, {})
        for side in DIRECTIONS.get(it.factor, BOTH):
            record = it.pair.base if side == "base" else it.pair.variant
            pos, neg = ((it.base_caption, it.variant_caption) if side == "base"
                        else (it.variant_caption, it.base_caption))
            entries[str(len(entries))] = {"filename": sink.name(record), "caption": pos, "negative_caption": neg,
                                          "comco": {**it.row(), "image": side}}
    for factor, entries in files.items():
        write_json(out / file_name(factor), entries, indent=4, sort_keys=False)
    return {"images": len(sink.placed), "texts": 2 * sum(len(e) for e in files.values()),
            "items": {f: len(e) for f, e in files.items()}, "left_out": left,
            "files": [file_name(f) for f in files] + [f"{IMAGES}/"]}


def usage(out: Path, summary: dict, opts) -> str:
    names = ", ".join(f"'{f.replace('-', '_')}': '{out}/{file_name(f)}'" for f in summary["items"])
    return (f"SugarCrepe's main_eval.py with --coco_image_root {out}/{IMAGES} and its data_dict set to "
            f"{{{names}}}")
