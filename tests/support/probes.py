"""Shared test builders (probes): imported by the test files, never collected."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import typer
from typer.testing import CliRunner

from comco.cli.probe import probe
from comco.data.folder import INFO, SCENES, SINGLES
from comco.data.writer import run_plan
from comco.io import read_jsonl, write_json, write_jsonl
from comco.manifest import load_object_set
from comco.plan import PlanConfig, Planner
from comco.plan.camera import Camera
from comco.probes.probe_data import ProbeData

TINY_CFG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}

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


def small_set(folder: Path, k: int = 5) -> Path:
    """An object set of simco's first `k` shapes: with few names a random model's top-n often holds exactly
    the n objects of a scene, so the conditional (ComCO) shares have trials even for tiny random models."""
    import re

    text = (Path(load_object_set("simco").root) / "objects.toml").read_text()
    cut = [m.start() for m in re.finditer(r"^\[\[objects\]\]", text, re.M)][k]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "objects.toml").write_text(text[:cut].replace('name = "simco"', f'name = "simco{k}"', 1))
    return folder


SET = load_object_set("simco")


def one_hot(weights: dict[str, float]) -> np.ndarray:
    """A planted embedding: the named objects' axes of the set, weighted."""
    v = np.zeros(len(SET.names))
    for name, w in weights.items():
        v[SET.names.index(name)] += w
    return v / np.linalg.norm(v)


def random_vec(key: str) -> np.ndarray:
    """A fixed random unit vector per key (the same every run)."""
    rng = np.random.default_rng(int(hashlib.sha256(key.encode()).hexdigest()[:8], 16))
    v = rng.normal(size=64)
    return v / np.linalg.norm(v)


class FakeEmbedder:
    """Embeds texts and images with planted functions; counts what it was asked."""

    def __init__(self, text_fn, image_fn=None):
        self.text_fn, self.image_fn = text_fn, image_fn

    def texts(self, items):
        return np.stack([self.text_fn(t) for t in items]).astype(np.float32)

    def images(self, paths):
        return np.stack([self.image_fn(Path(p)) for p in paths]).astype(np.float32)


def planned_data(n=40, objects=(4,)) -> ProbeData:
    """Planned records with `measured` pixels that follow the planned size ranks."""
    planner = Planner(PlanConfig(object_set="simco", objects=objects, n=n, resolution=(64, 64), seed=3), SET)
    recs = []
    for r in planner.records():
        for o in r["objects"]:
            px = 4000 // (o["size_rank"] + 1)
            o["measured"] = {"pixels": px, "fraction": px / 4096, "bbox": [0, 0, 8, 8], "visible_fraction": 1.0}
        recs.append(r)
    singles = planner.singles()
    return ProbeData(root=Path("/nonexistent"), info={"object_set": "simco"}, records=recs, singles=singles,
                     names=list(SET.names), object_set=SET, image_path=lambda r: Path(r["image"]))


def tiny_open_clip(context_length=77):
    from comco.models import build_open_clip

    spec = {"open_clip_cfg": TINY_CFG}
    model, _, _ = build_open_clip(spec, context_length)
    return model, spec


app = typer.Typer()


app.command()(probe)


@app.callback()
def _root():  # keep `probe` a sub-command, as comco's CLI registers it
    pass


def invoke(*args):
    return CliRunner().invoke(app, ["probe", *map(str, args)])


HIDDEN = 32  # SigLIP has no projection: the features are the towers' head outputs


def save_tokenizer(folder, max_length=64) -> tuple[int, int]:
    """A SigLIP-like fast tokenizer in `folder`; returns (vocab size, pad/eos id)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    from comco.manifest import load_object_set

    names = load_object_set("simco").names
    corpus = [f"a photo of a {a}, a {b} and a {c}." for a, b, c in zip(names, names[1:], names[2:])] * 3
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(corpus, trainers.UnigramTrainer(
        vocab_size=120, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>",
        initial_alphabet=list("abcdefghijklmnopqrstuvwxyz,.")))
    eos = tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", eos)])
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="</s>", unk_token="<unk>",
                            model_max_length=max_length).save_pretrained(folder)
    return tok.get_vocab_size(), eos
