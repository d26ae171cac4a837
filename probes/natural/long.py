"""Loaders for the long-caption benchmarks, one caption per image, each as distributed.

- Urban1k: `image/NAME.jpg` + `caption/NAME.txt`, the caption being the file's first
  line (as Long-CLIP's script reads it); pairs in name order.
- DOCCI: `docci_descriptions.jsonlines` (one JSON object a line: example_id, split,
  image_file, description) + `images/`; the `test` split (5,000 images).
- DCI: `densely_captioned_images/splits.json` ({split: [annotation file names]}),
  `annotations/*.json` (image, short_caption, extra_caption) and `photos/`; all
  splits together (7,805 images) as the long-caption papers use it; caption = short
  caption, a line break, then the extra caption (DCI's own "extended caption").
- Long-DCI: `dci_long.csv`, tab-separated with a header `filepath<TAB>title` (TULIP's
  file, written by pandas: fields with tabs, quotes or line breaks are quoted) and
  the images at ROOT/<filepath>.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from comco.errors import UserError
from comco.probes.natural.split import (
    NaturalSplit,
    field_of,
    read_json,
    require_dir,
    require_file,
    text_lines,
)

URBAN1K_LAYOUT = "ROOT/image/*.jpg and ROOT/caption/*.txt (one caption file per image, same name)"
DOCCI_LAYOUT = "ROOT/docci_descriptions.jsonlines and ROOT/images/*.jpg"
DCI_LAYOUT = ("ROOT/densely_captioned_images/splits.json, ROOT/densely_captioned_images/annotations/*.json "
              "and ROOT/densely_captioned_images/photos/*.jpg")
LONG_DCI_LAYOUT = "ROOT/dci_long.csv (tab-separated, header 'filepath<TAB>title') and the images at ROOT/<filepath>"


def load_urban1k(root: Path) -> NaturalSplit:
    name = "urban1k"
    image_dir = require_dir(root / "image", name, URBAN1K_LAYOUT)
    caption_dir = require_dir(root / "caption", name, URBAN1K_LAYOUT)
    split = NaturalSplit(name, "all", root, [])
    for caption_path in sorted(caption_dir.glob("*.txt")):
        lines = "".join(text_lines(caption_path, name)).splitlines()
        split.add(image_dir / f"{caption_path.stem}.jpg", lines[:1])
    return split


def load_docci(root: Path) -> NaturalSplit:
    name = "docci"
    path = require_file(root / "docci_descriptions.jsonlines", name, DOCCI_LAYOUT)
    image_dir = require_dir(root / "images", name, DOCCI_LAYOUT)
    split = NaturalSplit(name, "test", root, [])
    for line_no, line in enumerate(text_lines(path, name), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            raise UserError(f"{name}: {path} line {line_no} is not a JSON object") from None
        if field_of(entry, "split", path, name) == "test":
            split.add(image_dir / field_of(entry, "image_file", path, name),
                      [field_of(entry, "description", path, name)])
    return split


def load_dci(root: Path) -> NaturalSplit:
    name = "dci"
    base = root / "densely_captioned_images"
    splits_path = require_file(base / "splits.json", name, DCI_LAYOUT)
    annotation_dir = require_dir(base / "annotations", name, DCI_LAYOUT)
    photo_dir = require_dir(base / "photos", name, DCI_LAYOUT)
    splits = read_json(splits_path, name)
    if not isinstance(splits, dict):
        raise UserError(f"{name}: {splits_path} should map split names to annotation file lists")
    split = NaturalSplit(name, "all", root, [])
    for files in splits.values():
        for file_name in files:
            ann_path = annotation_dir / file_name
            if not ann_path.is_file():
                split.skip("missing_annotation", str(ann_path))
                continue
            ann = read_json(ann_path, name)
            short = field_of(ann, "short_caption", ann_path, name).strip()
            extra = field_of(ann, "extra_caption", ann_path, name).strip()
            split.add(photo_dir / field_of(ann, "image", ann_path, name), ["\n".join(p for p in (short, extra) if p)])
    return split


def load_long_dci(root: Path) -> NaturalSplit:
    name = "long-dci"
    path = require_file(root / "dci_long.csv", name, LONG_DCI_LAYOUT)
    split = NaturalSplit(name, "all", root, [])
    reader = csv.DictReader(text_lines(path, name, newline=""), delimiter="\t")
    if reader.fieldnames is None or not {"filepath", "title"} <= set(reader.fieldnames):
        raise UserError(f"{name}: {path} needs the header 'filepath<TAB>title'; expected layout: {LONG_DCI_LAYOUT}")
    for row in reader:
        split.add(root / row["filepath"], [row["title"] or ""])
    return split
