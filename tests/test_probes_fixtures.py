"""Tiny datasets for the probe tests: planned by comco's planner, "rendered" with PIL.

The stand-in renderer paints one filled ellipse per object at its projected location,
sized by its planned image fraction, then writes `measured` exactly as the contract
says (pixels, fraction, bbox, visible_fraction). Until the Blender renderer is
available in tests this gives real files the image probes can read.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np

from comco.plan.camera import Camera
from comco.data.folder import INFO, SCENES, SINGLES
from comco.io import read_jsonl, write_json, write_jsonl
from comco.plan.planner import PlanConfig
from comco.data.writer import run_plan


def _rgb(name: str, color: str | None) -> tuple[int, int, int]:
    h = hashlib.sha256(f"{name}:{color}".encode()).digest()
    return int(h[0]), int(h[1]), int(h[2])


def paint(record: dict, path: Path) -> dict:
    """Draw the record's objects (smallest last, so it stays visible) and return it with `measured`."""
    from PIL import Image, ImageDraw

    w, h = record["resolution"]
    cam = Camera.default(w, h)
    im = Image.new("RGB", (w, h), (128, 128, 128))
    owner = np.full((h, w), -1)
    order = sorted(range(len(record["objects"])), key=lambda i: record["objects"][i]["size_rank"])
    boxes = {}
    for i in order:
        o = record["objects"][i]
        u, v, _ = cam.project(tuple(o["location"]))
        r = max(1.5, math.sqrt(o["planned_fraction"] * w * h / math.pi))
        box = [max(0, u - r), max(0, v - r), min(w - 1, u + r), min(h - 1, v + r)]
        layer = Image.new("L", (w, h), 0)
        ImageDraw.Draw(layer).ellipse(box, fill=255)
        mask = np.asarray(layer) > 0
        owner[mask] = i
        im.paste(Image.new("RGB", (w, h), _rgb(o["name"], o.get("color"))), mask=layer)
        boxes[i] = (mask.sum(), box)
    path.parent.mkdir(parents=True, exist_ok=True)
    im.save(path)
    out = dict(record)
    out["objects"] = []
    for i, o in enumerate(record["objects"]):
        full, box = boxes[i]
        px = int((owner == i).sum())
        o = dict(o, measured={"pixels": px, "fraction": px / (w * h),
                              "bbox": [int(box[0]), int(box[1]), int(math.ceil(box[2])), int(math.ceil(box[3]))],
                              "visible_fraction": px / max(1, full)})
        out["objects"].append(o)
    return out


def make_dataset(root: Path, *, n: int = 8, objects=(3, 4), colors: bool = False, resolution: int = 64,
                 singles: bool = True, render: bool = True, object_set: str = "simco") -> Path:
    cfg = PlanConfig(object_set=object_set, objects=tuple(objects), n=n, resolution=(resolution, resolution),
                     colors=colors, seed=1)
    run_plan(cfg, root, quiet=True, singles=singles)
    if render:
        recs = [paint(r, root / r["image"]) for r in read_jsonl(root / SCENES)]
        write_jsonl(root / SCENES, recs)
        if singles:
            write_jsonl(root / SINGLES, [paint(s, root / s["image"]) for s in read_jsonl(root / SINGLES)])
        info = json.loads((root / INFO).read_text())
        write_json(root / INFO, info)
    return root


def test_fixture_paints_measured_sizes_in_planned_order(tmp_path):
    root = make_dataset(tmp_path / "ds", n=4, objects=(3,), singles=False)
    for rec in read_jsonl(root / SCENES):
        assert (root / rec["image"]).is_file()
        large = min(rec["objects"], key=lambda o: o["size_rank"])
        assert all(large["measured"]["pixels"] > o["measured"]["pixels"] for o in rec["objects"] if o is not large)
