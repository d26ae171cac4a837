"""Loaders for the short-caption benchmarks: COCO and Flickr30k, each as distributed.

- COCO 2017 val: `annotations/captions_val2017.json` + `val2017/` (5,000 images,
  25,014 captions). Images in ascending id order and captions in file order, as
  torchvision's CocoCaptions (used by Long-CLIP's script) returns them.
- COCO Karpathy 5k test: `dataset_coco.json` + `val2014/` (or wherever each
  entry's `filepath` says).
- Flickr30k: `results_20130124.token` (`NAME.jpg#i<TAB>caption`) + `flickr30k-images/`.
- Flickr30k Karpathy 1k test: `dataset_flickr30k.json` + `flickr30k-images/`.
"""

from __future__ import annotations

from pathlib import Path

from comco.errors import UserError
from comco.probes.natural.split import (
    NaturalSplit,
    field_of,
    first_existing,
    read_json,
    require_file,
    text_lines,
)

COCO_LAYOUT = "ROOT/annotations/captions_val2017.json (or ROOT/captions_val2017.json) and ROOT/val2017/*.jpg"
COCO_KARPATHY_LAYOUT = "ROOT/dataset_coco.json (Karpathy splits) and ROOT/val2014/*.jpg"
FLICKR_LAYOUT = "ROOT/results_20130124.token and ROOT/flickr30k-images/*.jpg"
FLICKR_KARPATHY_LAYOUT = "ROOT/dataset_flickr30k.json (Karpathy splits) and ROOT/flickr30k-images/*.jpg"


def load_coco(root: Path) -> NaturalSplit:
    name = "coco"
    ann_path = first_existing(
        [root / "annotations" / "captions_val2017.json", root / "captions_val2017.json"], name, COCO_LAYOUT)
    image_dir = first_existing([root / "val2017"], name, COCO_LAYOUT, folder=True)
    data = read_json(ann_path, name)
    captions: dict[int, list[str]] = {}
    files: dict[int, str] = {}
    for image in field_of(data, "images", ann_path, name):
        files[field_of(image, "id", ann_path, name)] = field_of(image, "file_name", ann_path, name)
        captions.setdefault(image["id"], [])
    for ann in field_of(data, "annotations", ann_path, name):
        image_id = field_of(ann, "image_id", ann_path, name)
        if image_id not in files:
            raise UserError(f"{name}: {ann_path} has a caption for image id {image_id}, which it does not list")
        captions[image_id].append(field_of(ann, "caption", ann_path, name))
    split = NaturalSplit(name, "val2017", root, [])
    for image_id in sorted(files):
        split.add(image_dir / files[image_id], captions[image_id])
    return split


def _karpathy(root: Path, name: str, json_name: str, layout: str, default_dir: str) -> NaturalSplit:
    json_path = require_file(root / json_name, name, layout)
    data = read_json(json_path, name)
    split = NaturalSplit(name, "karpathy-test", root, [])
    for entry in field_of(data, "images", json_path, name):
        if field_of(entry, "split", json_path, name) != "test":
            continue
        folder = entry.get("filepath", default_dir)  # COCO entries carry it; Flickr30k's do not
        sentences = field_of(entry, "sentences", json_path, name)
        split.add(root / folder / field_of(entry, "filename", json_path, name),
                  [field_of(s, "raw", json_path, name) for s in sentences])
    return split


def load_coco_karpathy(root: Path) -> NaturalSplit:
    return _karpathy(root, "coco-karpathy", "dataset_coco.json", COCO_KARPATHY_LAYOUT, "val2014")


def _flickr_images(root: Path, name: str, layout: str) -> Path:
    # The original tarball unpacks to flickr30k-images/; the Kaggle copy to flickr30k_images/.
    return first_existing([root / "flickr30k-images", root / "flickr30k_images"], name, layout, folder=True)


def load_flickr30k_karpathy(root: Path) -> NaturalSplit:
    name = "flickr30k-karpathy"
    image_dir = _flickr_images(root, name, FLICKR_KARPATHY_LAYOUT)
    split = _karpathy(root, name, "dataset_flickr30k.json", FLICKR_KARPATHY_LAYOUT, image_dir.name)
    return split


def load_flickr30k(root: Path) -> NaturalSplit:
    name = "flickr30k"
    token_path = require_file(root / "results_20130124.token", name, FLICKR_LAYOUT)
    image_dir = _flickr_images(root, name, FLICKR_LAYOUT)
    captions: dict[str, list[tuple[int, str]]] = {}  # insertion order = file order of images
    for line_no, line in enumerate(text_lines(token_path, name), 1):
        if not line.strip():
            continue
        key, sep, caption = line.rstrip("\n").partition("\t")
        file_name, hash_sign, index = key.partition("#")
        if not sep or not hash_sign or not index.isdigit():
            raise UserError(f"{name}: {token_path} line {line_no} is not 'NAME.jpg#N<TAB>caption'")
        captions.setdefault(file_name, []).append((int(index), caption))
    split = NaturalSplit(name, "full", root, [])
    for file_name, numbered in captions.items():
        split.add(image_dir / file_name, [c for _, c in sorted(numbered)])
    return split
