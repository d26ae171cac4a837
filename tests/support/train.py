"""Shared test builders (train): imported by the test files, never collected."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from PIL import Image, ImageDraw

from comco.data.folder import Dataset
from comco.plan.camera import Camera
from comco.train.run import make_config  # noqa: E402

PALETTE = {"gray": (86, 86, 86), "red": (173, 33, 33), "blue": (41, 74, 214), "green": (28, 105, 20),
           "brown": (130, 74, 26), "purple": (130, 38, 191), "cyan": (41, 209, 209), "yellow": (255, 237, 51)}


TINY = {"resolution": 32, "context_length": 16, "vision_width": 64, "text_width": 64, "embed_dim": 64,
        "vision_layers": 1, "text_layers": 1}

def name_colour(name: str) -> tuple[int, int, int]:
    digest = hashlib.sha256(name.encode()).digest()
    return digest[0], digest[1], digest[2]


def draw_record(record: dict, path: Path) -> None:
    width, height = record["resolution"]
    camera = Camera.from_record(record["camera"], width, height)
    image = Image.new("RGB", (width, height), (128, 128, 128))
    draw = ImageDraw.Draw(image)
    for obj in sorted(record["objects"], key=lambda o: -o["size_rank"]):
        u, v, _ = camera.project(tuple(obj["location"]))
        radius = max(2.0, math.sqrt(obj["planned_fraction"] * width * height / math.pi))
        fill = PALETTE.get(obj.get("color") or "", name_colour(obj["name"]))
        draw.ellipse([u - radius, v - radius, u + radius, v + radius], fill=fill)
        # a name-specific mark inside, so colour-only datasets still show which object it is
        draw.rectangle([u - radius / 3, v - radius / 3, u + radius / 3, v + radius / 3], fill=name_colour(obj["name"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)


def make_dataset(root: Path, *, n: int = 24, colors: bool = False, resolution: int = 64,
                 objects: tuple[int, ...] = (2, 3), seed: int = 0, large_fraction: float = 0.12,
                 small_fraction: tuple[float, float] = (0.025, 0.035)) -> Path:
    from comco.data.writer import run_plan
    from comco.plan import PlanConfig

    cfg = PlanConfig(object_set="simco", objects=objects, n=n, seed=seed, resolution=(resolution, resolution),
                     colors=colors, large_fraction=large_fraction, small_fraction=small_fraction)
    run_plan(cfg, root, quiet=True)
    dataset = Dataset(root)
    for record in dataset.records():
        draw_record(record, dataset.image_path(record))
    return root


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def tiny_clip_cfg(context_length: int = 77, width: int = 64, resolution: int = 32) -> dict:
    return {"embed_dim": width,
            "vision_cfg": {"image_size": resolution, "patch_size": 8, "width": width, "layers": 1, "head_width": 32},
            "text_cfg": {"context_length": context_length, "vocab_size": 49408, "width": width, "heads": 2,
                         "layers": 1}}


def make_tiny_checkpoint(path: Path, context_length: int = 77, seed: int = 0) -> Path:
    """A random tiny open_clip model saved as a comco checkpoint (an --init for tests)."""
    import open_clip
    import torch

    from comco.models import save_checkpoint

    torch.manual_seed(seed)
    cfg = tiny_clip_cfg(context_length)
    return save_checkpoint(path, kind="scratch", model=open_clip.CLIP(**cfg),
                           model_spec={"open_clip_name": "tiny", "open_clip_cfg": cfg})


def scratch_config(data, out, **kw):
    given = {"batch_size": 12, "steps": 12, "warmup": 5, "lr": 1e-3, "quiet": True, "device": "cpu", **kw}
    return make_config("scratch", data=str(data), out=str(out), options=dict(TINY), **given)
