"""`comco train longclip` and `comco train debias`: fine-tune a CLIP on long captions
with a stretched text tower and a short-caption term (Long-CLIP), or with DeBias-CLIP's
short captions (summary dropped, sentences sampled, padding moved to the front)."""

from __future__ import annotations

from typing import Iterable

import torch

from comco.errors import UserError
from comco.train.clip_forward import clip_features
from comco.train.config import TrainConfig
from comco.train.data import TrainData
from comco.train.images import FileImages, MicroBatches, iterate
from comco.train.init_model import model_spec_for
from comco.train.losses import long_short_loss
from comco.train.samplers import _SALT_PAD, _SALT_TEXT, ShortCaptionSampler, draw_pad_counts, move_padding, sample_rng
from comco.train.stretch import freeze_rows, positional_parameter, stretch_text_positions
from comco.train.task import decay_groups

OPTIONS = {"keep": 20, "short_weight": 0.1, "pca_rank": 32,
           "remove_summary": True, "sample": True, "pad": True,
           "freeze": True}  # Long-CLIP's: the first `keep` stretched positions copied and frozen
# Each kind's loss weights as its paper's code has them: the official Long-CLIP code adds the
# long and the short loss 1:1 (its first version weighed the short one 0.1); DeBias-CLIP's
# takes 0.1 short + 0.9 long.
LOSS_WEIGHTS = {"longclip": (1.0, 1.0), "debias": (0.1, 0.9)}


def resolve_weights(kind: str, options: dict) -> dict:
    """options with both loss weights set. A short weight given alone is lambda in
    lambda * short + (1 - lambda) * long (the lab's variants and earlier comco runs)."""
    out = {k: v for k, v in options.items() if v is not None}
    short, long = LOSS_WEIGHTS[kind]
    if "short_weight" in out and "long_weight" not in out:
        out["long_weight"] = 1.0 - out["short_weight"]
    out.setdefault("short_weight", short)
    out.setdefault("long_weight", long)
    return out
# Pooling that still finds the end of the text after pads move in front of it:
# argmax of the ids (EOT is the largest id) or the position of the EOS id.
PAD_SAFE_POOLING = ("argmax", "eos")


def text_pool_type(model) -> str:
    tower = model if hasattr(model, "text_pool_type") else getattr(model, "text", model)
    return getattr(tower, "text_pool_type", getattr(tower, "pool_type", "argmax"))


def tokenizer_for(loaded, context_length: int):
    """A tokenizer writing `context_length` ids, with its PAD id."""
    import open_clip

    from comco.models import SELF_CONTAINED

    name = loaded.name
    if name.startswith(SELF_CONTAINED):  # comco and the papers' checkpoints: CLIP's BPE
        tokenizer = open_clip.SimpleTokenizer(context_length=context_length)
    else:
        tokenizer = open_clip.get_tokenizer(name, context_length=context_length)
    inner = getattr(tokenizer, "tokenizer", None)
    pad_id = getattr(inner, "pad_token_id", None)
    return tokenizer, 0 if pad_id is None else int(pad_id)


class LongClipTask:
    def __init__(self, kind: str, data: TrainData, cfg: TrainConfig, loaded, init: str):
        self.kind, self.cfg, self.samples = kind, cfg, data.samples
        self.options = {**OPTIONS, **resolve_weights(kind, cfg.options)}
        self.sampler = ShortCaptionSampler.for_kind(
            kind, remove_summary=self.options["remove_summary"], sample=self.options["sample"],
            pad=self.options["pad"])
        self.model_spec = model_spec_for(loaded, init)
        self.module = loaded.model
        self.module.requires_grad_(True)
        if self.sampler.pad and text_pool_type(self.module) not in PAD_SAFE_POOLING:
            raise UserError(f"--init {init} pools text at '{text_pool_type(self.module)}', where moved "
                            "padding would change the pooled token; pass --no-pad")
        if loaded.stretched_keep is None:
            self.context_length = stretch_text_positions(self.module, self.options["keep"],
                                                         freeze=self.options["freeze"])
        else:  # a Long-CLIP-style model already: go on at its length, its copied rows still frozen
            self.options["keep"] = loaded.stretched_keep
            if self.options["freeze"]:
                freeze_rows(positional_parameter(self.module), loaded.stretched_keep)
            self.context_length = int(self.module.context_length)
        self.tokenizer, self.pad_id = tokenizer_for(loaded, self.context_length)
        self.images = FileImages([s.image for s in self.samples], loaded.preprocess)

    def num_samples(self) -> int:
        return len(self.samples)

    def captions(self, epoch: int, indices: list[int]) -> tuple[list[str], list[str]]:
        longs, shorts = [], []
        for i in indices:
            rng = sample_rng(self.cfg.seed, epoch, i, _SALT_TEXT)
            options = self.samples[i].captions
            long = options[int(rng.integers(len(options)))]
            longs.append(long)
            shorts.append(self.sampler.short_caption(long, rng))
        return longs, shorts

    def texts(self, epoch: int, indices: list[int]) -> dict[str, torch.Tensor]:
        longs, shorts = self.captions(epoch, indices)
        short_tokens = self.tokenizer(shorts, context_length=self.context_length)
        if self.sampler.pad:
            rngs = [sample_rng(self.cfg.seed, epoch, i, _SALT_PAD) for i in indices]
            short_tokens = move_padding(short_tokens, draw_pad_counts(short_tokens, rngs, self.pad_id), self.pad_id)
        return {"text_long": self.tokenizer(longs, context_length=self.context_length), "text_short": short_tokens}

    def batches(self, plan: Iterable[tuple[int, list[int]]]):
        return iterate(MicroBatches(self.images, self.texts), plan, self.cfg.workers)

    def loss(self, module, batch):
        long, short = batch.tensors["text_long"], batch.tensors["text_short"]
        # one forward for both captions: DDP expects a single forward per backward
        image, text, scale = clip_features(module, batch.tensors["image"], torch.cat([long, short]))
        text_long, text_short = text[:len(long)], text[len(long):]
        return long_short_loss(image, text_long, text_short, scale, self.options["short_weight"],
                               self.options["pca_rank"], self.cfg.label_smoothing,
                               long_weight=self.options["long_weight"])

    def param_groups(self, weight_decay: float) -> list[dict]:
        return decay_groups(self.module, weight_decay)

    def checkpoint_payload(self) -> dict:
        return {"kind": self.kind, "model": self.module, "model_spec": self.model_spec, "extra": {}}

    def load_state(self, checkpoint: dict) -> None:
        self.module.load_state_dict(checkpoint["state_dict"])

    def finish(self, out) -> dict:
        return {}


def check_long_captions(data: TrainData, template: str) -> None:
    """DeBias needs captions of several sentences; a dataset of one-liners is a user error."""
    from comco.train.samplers import split_sentences

    if not any(len(split_sentences(c)) >= 2 for s in data.samples[:1000] for c in s.captions):
        raise UserError(f"{data.description}: no caption has two or more sentences, so debias has "
                        f"nothing to sample; render the dataset with the '{template}' caption template "
                        f"(comco plan --templates ...,{template})")
