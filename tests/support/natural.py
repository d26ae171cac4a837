"""Shared test builders (natural): imported by the test files, never collected."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from PIL import Image

LONG_CAPTIONS = [
    "A red car parked by a wall. The wall is made of brick. A tree stands to the left. "
    "The sky is grey. A bird sits on the roof.",
    "A kitchen with a white table. Two chairs face each other. A lamp hangs above. "
    "The floor is tiled.",
    "A dog runs on a beach. Waves break behind it. The sand is wet.",
]


def write_image(path: Path, seed: int, size: int = 24) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    colour = ((seed * 67) % 256, (seed * 131) % 256, (seed * 29) % 256)
    image = Image.new("RGB", (size, size), colour)
    image.putpixel((seed % size, (seed * 7) % size), (255 - colour[0], 0, 0))
    image.save(path)
    return path


def write_coco(root: Path, n_images: int = 3, captions_per_image=(5, 6, 5)) -> Path:
    """annotations/captions_val2017.json + val2017/; image ids listed out of order."""
    ids = [139, 42, 7][:n_images]
    images = [{"id": i, "file_name": f"{i:012d}.jpg", "height": 24, "width": 24} for i in ids]
    annotations = []
    for image_id, n in zip(ids, captions_per_image):
        for j in range(n):
            annotations.append({"image_id": image_id, "id": len(annotations) + 1,
                                "caption": f"image {image_id} caption {j}"})
        write_image(root / "val2017" / f"{image_id:012d}.jpg", image_id)
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    (root / "annotations" / "captions_val2017.json").write_text(json.dumps(
        {"info": {}, "licenses": [], "images": images, "annotations": annotations}))
    return root


def _karpathy_entry(index: int, filename: str, split: str, n: int, filepath: str | None) -> dict:
    entry = {"imgid": index, "filename": filename, "split": split, "sentids": list(range(n)),
             "sentences": [{"raw": f"{filename} says {j}.", "tokens": [filename, "says", str(j)],
                            "imgid": index, "sentid": j} for j in range(n)]}
    if filepath:
        entry["filepath"] = filepath
        entry["cocoid"] = index
    return entry


def write_coco_karpathy(root: Path) -> Path:
    """dataset_coco.json with 2 test, 1 val and 1 restval image; images under val2014/."""
    plan = [("test", 5), ("val", 5), ("test", 6), ("restval", 5)]
    entries = []
    for i, (split, n) in enumerate(plan):
        name = f"COCO_val2014_{i:012d}.jpg"
        entries.append(_karpathy_entry(i, name, split, n, "val2014"))
        write_image(root / "val2014" / name, i)
    (root / "dataset_coco.json").write_text(json.dumps({"images": entries, "dataset": "coco"}))
    return root


def write_flickr(root: Path) -> Path:
    """results_20130124.token, dataset_flickr30k.json and flickr30k-images/ (4 images, 5 captions)."""
    names = [f"{1000092795 + i}.jpg" for i in range(4)]
    lines = []
    for name in names:
        write_image(root / "flickr30k-images" / name, len(lines))
        for j in (0, 2, 1, 3, 4):  # captions are numbered; the loader sorts by number
            lines.append(f"{name}#{j}\t{name} caption {j} .")
    (root / "results_20130124.token").write_text("\n".join(lines) + "\n")
    splits = ["test", "train", "test", "val"]
    entries = [_karpathy_entry(i, n, s, 5, None) for i, (n, s) in enumerate(zip(names, splits))]
    (root / "dataset_flickr30k.json").write_text(json.dumps({"images": entries, "dataset": "flickr30k"}))
    return root


def write_urban1k(root: Path, n: int = 3) -> Path:
    for i in range(n):
        write_image(root / "image" / f"{i + 1}.jpg", i)
        (root / "caption").mkdir(parents=True, exist_ok=True)
        (root / "caption" / f"{i + 1}.txt").write_text(LONG_CAPTIONS[i % 3] + "\nsecond line is ignored\n")
    return root


def write_docci(root: Path) -> Path:
    """3 test, 1 train and 1 qual_dev description; images/ holds all of them."""
    splits = ["train", "test", "test", "qual_dev", "test"]
    lines = []
    for i, split in enumerate(splits):
        name = f"{split}_{i:05d}.jpg"
        write_image(root / "images" / name, i)
        lines.append(json.dumps({"example_id": f"{split}_{i:05d}", "split": split, "image_file": name,
                                 "description": LONG_CAPTIONS[i % 3]}))
    (root / "docci_descriptions.jsonlines").write_text("\n".join(lines) + "\n")
    return root


def write_dci(root: Path) -> Path:
    base = root / "densely_captioned_images"
    splits = {"train": ["sa_1.json", "sa_2.json"], "valid": ["sa_3.json"], "test": ["sa_4.json"]}
    for i, file_name in enumerate(sum(splits.values(), [])):
        image = f"sa_{i + 1}.jpg"
        write_image(base / "photos" / image, i)
        ann = {"image": image, "short_caption": f"Short caption {i + 1}",
               "extra_caption": LONG_CAPTIONS[i % 3], "mask_data": {}, "mask_keys": []}
        (base / "annotations").mkdir(parents=True, exist_ok=True)
        (base / "annotations" / file_name).write_text(json.dumps(ann))
    (base / "splits.json").write_text(json.dumps(splits))
    return root


def write_long_dci(root: Path) -> Path:
    """dci_long.csv as pandas writes it (tab-separated, quoted where needed)."""
    rows = [("sa_10.jpg", LONG_CAPTIONS[0]), ("sa_11.jpg", 'He said "hi".\nThen\tleft.'),
            ("sa_12.jpg", LONG_CAPTIONS[2])]
    root.mkdir(parents=True, exist_ok=True)
    with (root / "dci_long.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(["filepath", "title"])
        for i, (image, title) in enumerate(rows):
            write_image(root / image, i)
            writer.writerow([image, title])
    return root


def write_sharegpt4v(root: Path) -> Path:
    entries = []
    for i, folder in enumerate(["coco/train2017", "sam/images", "llava/llava_pretrain/images"]):
        image = f"{folder}/{i:06d}.jpg"
        write_image(root / image, i)
        entries.append({"id": str(i), "image": image, "conversations": [
            {"from": "human", "value": "<image>\nWhat is in the image?"},
            {"from": "gpt", "value": LONG_CAPTIONS[i].replace(". ", ".\n", 1)}]})
    (root / "share-captioner_coco_lcs_sam_1246k_1107.json").write_text(json.dumps(entries))
    return root


def brute_force(sim: np.ndarray, image_of_text: np.ndarray, ks=(1, 5, 10)) -> dict:
    """Sort every row, ties broken against the model, and look for a positive in the top k."""
    n_texts, n_images = sim.shape
    t2i = {k: 0 for k in ks}
    for t in range(n_texts):
        # a wrong image with an equal score sorts before the right one
        order = sorted(range(n_images), key=lambda i: (-sim[t, i], i == image_of_text[t]))
        for k in ks:
            t2i[k] += image_of_text[t] in order[:k]
    i2t = {k: 0 for k in ks}
    queried = sorted(set(image_of_text.tolist()))
    for i in queried:
        order = sorted(range(n_texts), key=lambda t: (-sim[t, i], image_of_text[t] == i))
        for k in ks:
            i2t[k] += any(image_of_text[t] == i for t in order[:k])
    return {"t2i": {f"R@{k}": t2i[k] / n_texts for k in ks},
            "i2t": {f"R@{k}": i2t[k] / len(queried) for k in ks}}
