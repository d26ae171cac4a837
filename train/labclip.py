"""`comco train labclip`: a D x D linear map on a frozen CLIP's text embeddings,
identity-initialised, with a learnt temperature, trained contrastively with
attribute-swapped captions as hard negatives. The frozen model's embeddings are
computed once and cached, so training is a few matrix products per step.

Binding accuracy: how often an image is closer to its caption than to the swapped
one; reported on held-out images before (identity map) and after training.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from comco.errors import UserError
from comco.io import atomic_write, write_json
from comco.probes.stats import accuracy
from comco.train import distributed
from comco.train.config import TrainConfig
from comco.train.data import TrainData
from comco.train.init_model import model_spec_for
from comco.train.negatives import swap_words
from comco.train.task import Batch

DEFAULTS = {"lr": 1e-3, "weight_decay": 0.0, "warmup": 0, "batch_size": 256, "epochs": 20.0,
            "label_smoothing": 0.0, "optimizer": "adam", "workers": 0, "checkpoint_every": 1000}
TEST_SHARE = 0.1
BINDING_CHANCE = 0.5  # the image picks its caption or the swapped one
_SALT_SPLIT, _SALT_NEGATIVE = 0x5B1, 0x4E6


@dataclass
class Triples:
    """Sample k: image image_index[k], caption texts[k], negative negatives[k]."""

    images: list[Path]
    image_index: list[int]
    texts: list[str]
    negatives: list[str]


def triples_from(data: TrainData, seed: int) -> Triples:
    images, image_index, texts, negatives = [], [], [], []
    for i, sample in enumerate(data.samples):
        for j, caption in enumerate(sample.captions):
            if sample.negatives:
                negative = sample.negatives[j]
            else:
                negative = swap_words(caption, np.random.default_rng([seed, i, j, _SALT_NEGATIVE]))
            if negative == caption:
                continue  # nothing to swap: no hard negative, no binding to learn
            image_index.append(len(images))
            texts.append(caption)
            negatives.append(negative)
        if image_index and image_index[-1] == len(images):
            images.append(sample.image)
    if not texts:
        raise UserError(f"{data.description}: no caption has two attributes or nouns to swap, "
                        "so there are no hard negatives")
    return Triples(images, image_index, texts, negatives)


class TextMap(nn.Module):
    """normalise(W normalise(t)) with W = I at the start, and a learnt temperature."""

    def __init__(self, dim: int, scale: float):
        super().__init__()
        self.text_map = nn.Linear(dim, dim, bias=False)
        with torch.no_grad():
            self.text_map.weight.copy_(torch.eye(dim))
        self.logit_scale = nn.Parameter(torch.tensor(math.log(scale)))

    def forward(self, text: torch.Tensor, negative: torch.Tensor):
        mapped = F.normalize(self.text_map(F.normalize(text, dim=-1)), dim=-1)
        mapped_negative = F.normalize(self.text_map(F.normalize(negative, dim=-1)), dim=-1)
        return mapped, mapped_negative, self.logit_scale.exp()


def binding_hits(image: torch.Tensor, text: torch.Tensor, negative: torch.Tensor,
                 text_map: torch.Tensor | None = None) -> np.ndarray:
    """1 where the image is closer to its caption than to the swapped one (a tie is no hit), else 0."""
    if text_map is not None:
        text = F.normalize(F.normalize(text, dim=-1) @ text_map.T, dim=-1)
        negative = F.normalize(F.normalize(negative, dim=-1) @ text_map.T, dim=-1)
    image = F.normalize(image, dim=-1)
    return ((image * text).sum(-1) > (image * negative).sum(-1)).float().numpy()


def binding_accuracy(image: torch.Tensor, text: torch.Tensor, negative: torch.Tensor,
                     text_map: torch.Tensor | None = None) -> float:
    """Share of pairs where the image is closer to its caption than to the swapped one."""
    return float(binding_hits(image, text, negative, text_map).mean())


def embed_triples(loaded, triples: Triples, cache_dir: Path, batch_size: int = 64) -> dict[str, torch.Tensor]:
    """Image and text embeddings of the frozen model, cached by model identity and data."""
    blob = json.dumps([loaded.identity, [str(p) for p in triples.images], triples.texts, triples.negatives])
    cache = cache_dir / f"labclip-embeddings-{hashlib.sha256(blob.encode()).hexdigest()[:16]}.pt"
    if cache.exists():
        return torch.load(cache, weights_only=True)
    from PIL import Image

    def images(paths):
        tensors = []
        for path in paths:
            with Image.open(path) as image:
                tensors.append(loaded.preprocess(image.convert("RGB")))
        return loaded.encode_image(torch.stack(tensors)).cpu()

    def texts(captions):
        return loaded.encode_text(loaded.tokenize(captions)).cpu()

    with torch.no_grad():
        out = {
            "image": torch.cat([images(triples.images[i:i + batch_size])
                                for i in range(0, len(triples.images), batch_size)]),
            "text": torch.cat([texts(triples.texts[i:i + batch_size])
                               for i in range(0, len(triples.texts), batch_size)]),
            "negative": torch.cat([texts(triples.negatives[i:i + batch_size])
                                   for i in range(0, len(triples.negatives), batch_size)]),
        }
    with atomic_write(cache, "wb") as f:  # DDP ranks may build it side by side: each its own temp file
        torch.save(out, f)
    return out


def split_images(n_images: int, seed: int, test_share: float = TEST_SHARE) -> np.ndarray:
    """Boolean mask of held-out images (at least one when there are two or more)."""
    order = np.random.default_rng([seed, _SALT_SPLIT]).permutation(n_images)
    n_test = max(1 if n_images > 1 else 0, int(round(test_share * n_images)))
    held_out = np.zeros(n_images, dtype=bool)
    held_out[order[:n_test]] = True
    return held_out


class LabclipTask:
    kind = "labclip"

    def __init__(self, embeddings: dict[str, torch.Tensor], image_index: list[int], cfg: TrainConfig,
                 *, base=None, model_spec: dict | None = None, init_scale: float = 1 / 0.07):
        self.cfg, self.base, self.model_spec = cfg, base, model_spec
        self.embeddings = embeddings
        index = torch.tensor(image_index)
        held_out = torch.from_numpy(split_images(int(index.max()) + 1, cfg.seed))[index]
        self.train_rows = torch.nonzero(~held_out).flatten()
        self.test_rows = torch.nonzero(held_out).flatten()
        self.image_of_row = index
        self.module = TextMap(embeddings["text"].shape[1], init_scale)
        self.before = self.evaluate(None)
        self.before_stats = self.evaluate_stats(None)

    @classmethod
    def from_model(cls, loaded, init: str, data: TrainData, cfg: TrainConfig) -> "LabclipTask":
        if loaded.text_map is not None:
            raise UserError(f"--init {init} is already a LABCLIP model; train from the model it was made from")
        triples = triples_from(data, cfg.seed)
        embeddings = embed_triples(loaded, triples, Path(cfg.out) / "cache")
        scale = float(getattr(loaded.model, "logit_scale", torch.tensor(math.log(1 / 0.07))).detach().exp())
        return cls(embeddings, triples.image_index, cfg, base=loaded.model,
                   model_spec=model_spec_for(loaded, init), init_scale=scale)

    def rows(self, rows: torch.Tensor) -> dict[str, torch.Tensor]:
        e = self.embeddings
        return {"image": e["image"][self.image_of_row[rows]], "text": e["text"][rows], "negative": e["negative"][rows]}

    def evaluate(self, text_map: torch.Tensor | None) -> dict[str, float]:
        result = {}
        for split, rows in (("train", self.train_rows), ("test", self.test_rows)):
            if len(rows):
                r = self.rows(rows)
                result[split] = binding_accuracy(r["image"], r["text"], r["negative"], text_map)
        return result

    def evaluate_stats(self, text_map: torch.Tensor | None) -> dict[str, dict]:
        """Per split, the binding accuracy with its count, a 95 % bootstrap interval resampled by
        image (an image's captions are not independent trials) and chance (1/2: caption or its swap)."""
        result = {}
        for split, rows in (("train", self.train_rows), ("test", self.test_rows)):
            if len(rows):
                r = self.rows(rows)
                hits = binding_hits(r["image"], r["text"], r["negative"], text_map)
                result[split] = accuracy(hits, self.image_of_row[rows].numpy(), chance=BINDING_CHANCE,
                                         seed=self.cfg.seed)
        return result

    def num_samples(self) -> int:
        return len(self.train_rows)

    def batches(self, plan: Iterable[tuple[int, list[int]]]):
        for _, indices in plan:
            yield Batch(self.rows(self.train_rows[indices]), len(indices))

    def loss(self, module, batch):
        image = F.normalize(batch.tensors["image"].float(), dim=-1)
        text, negative, scale = module(batch.tensors["text"].float(), batch.tensors["negative"].float())
        all_image = distributed.gather_with_grad(image)
        all_text = distributed.gather_with_grad(text)
        all_negative = distributed.gather_with_grad(negative)
        targets = torch.arange(len(image), device=image.device) + distributed.rank() * len(image)
        # images choose among all captions and all swapped captions: the hard negatives
        image_to_text = scale * image @ torch.cat([all_text, all_negative]).T
        text_to_image = scale * text @ all_image.T
        smoothing = self.cfg.label_smoothing
        loss = (F.cross_entropy(image_to_text, targets, label_smoothing=smoothing)
                + F.cross_entropy(text_to_image, targets, label_smoothing=smoothing)) / 2
        return loss, {"temperature": float(1 / scale.detach())}

    def param_groups(self, weight_decay: float) -> list[dict]:
        return [{"params": list(self.module.parameters()), "weight_decay": weight_decay}]

    def text_map(self) -> torch.Tensor:
        return self.module.text_map.weight.detach().cpu()

    def checkpoint_payload(self) -> dict:
        return {"kind": self.kind, "model": self.base, "model_spec": self.model_spec,
                "extra": {"text_map": self.text_map(),
                          "labclip_logit_scale": self.module.logit_scale.detach().cpu()}}

    def load_state(self, checkpoint: dict) -> None:
        with torch.no_grad():
            self.module.text_map.weight.copy_(checkpoint["text_map"])
            self.module.logit_scale.copy_(checkpoint["labclip_logit_scale"])

    def change_stats(self, text_map: torch.Tensor) -> dict[str, dict]:
        """Per split, after - before on the same captions (paired), resampled by image; no chance."""
        result = {}
        for split, rows in (("train", self.train_rows), ("test", self.test_rows)):
            if len(rows):
                r = self.rows(rows)
                diff = (binding_hits(r["image"], r["text"], r["negative"], text_map).astype(np.float64)
                        - binding_hits(r["image"], r["text"], r["negative"], None))
                result[split] = accuracy(diff, self.image_of_row[rows].numpy(), seed=self.cfg.seed)
        return result

    def finish(self, out) -> dict:
        from comco.probes.binding_page import write_binding_page

        after = self.evaluate(self.text_map())
        report = {"binding_before": self.before, "binding_after": after,
                  "binding_stats": {"before": self.before_stats, "after": self.evaluate_stats(self.text_map())},
                  "binding_change": self.change_stats(self.text_map()),
                  "n_train": len(self.train_rows), "n_test": len(self.test_rows)}
        if distributed.is_main():
            write_json(Path(out) / "binding.json", report, sort_keys=False)
            write_binding_page(Path(out), report)
        return report
