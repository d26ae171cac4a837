"""COCO-format annotations of a rendered dataset: boxes, RLE masks, categories.

With --depth, --normals or --relations each image entry also names its depth and normal
maps and carries the relations graph and the measured occlusion order, objects named by their
annotation ids (extra keys, which pycocotools keeps).

Masks are the renderer's index masks (0 background, i + 1 for objects[i]); each
object's mask is written as uncompressed RLE in COCO's column-major order, which
pycocotools reads (`mask.frPyObjects`) like any other RLE.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def rle_encode(binary: np.ndarray) -> dict:
    """Uncompressed COCO RLE: run lengths of 0s and 1s in column-major order, 0s first."""
    flat = np.asarray(binary, dtype=np.uint8).ravel(order="F")
    changes = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.concatenate([[0], changes, [flat.size]])
    counts = np.diff(bounds).tolist()
    if flat.size and flat[0] == 1:
        counts = [0] + counts
    return {"size": [int(binary.shape[0]), int(binary.shape[1])], "counts": counts}


def rle_decode(rle: dict) -> np.ndarray:
    h, w = rle["size"]
    flat = np.zeros(h * w, dtype=np.uint8)
    pos, value = 0, 0
    for run in rle["counts"]:
        flat[pos:pos + run] = value
        pos += run
        value ^= 1
    return flat.reshape((h, w), order="F")


def coco_annotations(root: Path, records: list[dict], names: list[str]) -> dict:
    """COCO-style annotations (images, boxes, RLE masks, categories) of a rendered dataset.

    Args:
        root: the dataset folder (masks/ is read).
        records: its scene records.
        names: the object set's names (category ids are their positions + 1)."""
    cat_id = {n: i + 1 for i, n in enumerate(names)}
    images, annotations = [], []
    for img_id, r in enumerate(records, 1):
        w, h = r["resolution"]
        image = {"id": img_id, "file_name": r["image"], "width": w, "height": h, "comco_id": r["id"]}
        labels = np.asarray(Image.open(root / "masks" / Path(r["image"]).name))
        first = len(annotations) + 1  # objects[i]'s annotation id is first + i
        for i, o in enumerate(r["objects"]):
            m = o["measured"]
            x0, y0, x1, y1 = m["bbox"] or (0, 0, 0, 0)
            annotations.append({
                "id": len(annotations) + 1, "image_id": img_id, "category_id": cat_id[o["name"]],
                "bbox": [x0, y0, x1 - x0, y1 - y0], "area": m["pixels"], "iscrowd": 0,
                "segmentation": rle_encode(labels == i + 1), "size_rank": o["size_rank"], "slot": o["slot"],
                **{k: m[k] for k in ("depth_m",) if k in m},
                **({"occluded_by": [first + j for j in m["occluded_by"]]} if "occluded_by" in m else {}),
            })
        images.append({**image, **_outputs(r, first)})
    return {"info": {"description": "comco rendered dataset"}, "images": images, "annotations": annotations,
            "categories": [{"id": i, "name": n} for n, i in cat_id.items()]}


def _outputs(r: dict, first: int) -> dict:
    """An image entry's extra keys for --depth, --normals and --relations (COCO has no place for
    them, and its readers keep unknown keys): the files, and the relations graph and occlusion
    order with objects named by their annotation ids."""
    out = {f"{k}_file": r[k] for k in ("depth", "normals") if k in r}
    if "relations" in r:
        out["relations"] = [{"subject": first + e["subject"], "predicate": e["predicate"],
                             "object": first + e["object"]} for e in r["relations"]]
    if "occlusion_order" in r:
        out["occlusion_order"] = [first + i for i in r["occlusion_order"]]
    return out
