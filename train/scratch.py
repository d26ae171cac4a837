"""`comco train scratch`: a small CLIP from random weights on a comco dataset.

The lab's instrument: the caption distribution a dataset was planned with (for
example --order-bias p) is the variable, so this only reads images and captions.
Sized for CPUs: a 64 px ViT with 8 px patches and a 4-layer text transformer; most
of the ~8 M parameters are the 49408-token embedding table, which costs little.

Three options make the origins of the text-side bias lab variables: `text_attention`
("causal", open_clip's; "bidirectional" with `text_pool` "mean" or "first", see
comco.models.text_towers), `objective` ("clip", the contrastive image-text loss; "simcse"
and "paraphrase", the text tower alone on the same captions, see comco.train.simcse and
comco.train.paraphrase) and `checkpoints` (N > 0: the weights at step 0 and at N steps over
the run, spread by `checkpoint_spacing` "even" or "log", see comco.train.snapshots).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable

import torch

from comco.errors import UserError
from comco.train.clip_forward import clamp_logit_scale, clip_features
from comco.train.config import TrainConfig
from comco.train.data import TrainData
from comco.train.fixes import (
    NEGCLIP,
    SIGLIP_INIT_BIAS,
    SIGLIP_INIT_SCALE,
    foil,
    negclip_loss,
    reorder,
    siglip_loss,
    vocabulary,
)
from comco.train.images import OPENAI_MEAN, OPENAI_STD, CachedImages, MicroBatches, iterate
from comco.train.losses import contrastive_loss
from comco.train.objectives import OBJECTIVES, is_text_only
from comco.train.paraphrase import pair_captions, paraphrase_loss
from comco.train.samplers import sample_rng
from comco.train.simcse import add_text_dropout, simcse_loss
from comco.train.snapshots import SPACINGS
from comco.train.task import decay_groups

SCRATCH_NAME = "comco-scratch"
# Defaults for a from-scratch run (the fine-tuning defaults of TrainConfig are the paper's).
DEFAULTS = {"lr": 5e-4, "weight_decay": 0.1, "warmup": 50, "batch_size": 64, "epochs": 10.0,
            "label_smoothing": 0.0, "workers": -1, "checkpoint_every": 200,
            "adam_betas": (0.9, 0.98), "adam_eps": 1e-6}  # open_clip's for CLIPs trained from scratch
SIZE = {"resolution": 64, "patch_size": 8, "vision_width": 128, "vision_layers": 4,
        "text_width": 128, "text_layers": 4, "embed_dim": 128, "context_length": 32, "vision_tower": "vit"}
TOWERS = ("vit", "conv")
_SALT_CAPTION = 0xCA9
_SALT_FIX = 0xF1C  # the fixes' draws (mention order, foil), apart from the caption's


def scratch_cfg(resolution: int = 64, patch_size: int = 8, vision_width: int = 128, vision_layers: int = 4,
                text_width: int = 128, text_layers: int = 4, embed_dim: int = 128,
                context_length: int = 32, vision_tower: str = "vit") -> dict:
    """An open_clip model config (the `open_clip_cfg` of the checkpoint).

    vision_tower "conv": open_clip's ModifiedResNet (a convolutional stem, four bottleneck
    stages, attention pooling) with vision_width / 8 base channels and vision_layers / 4
    blocks per stage; a conv tower learns small shapes from fewer samples per CPU second
    than a ViT of the same width.
    """
    if vision_tower not in TOWERS:
        raise UserError(f"vision tower '{vision_tower}': use one of {', '.join(TOWERS)}")
    if vision_tower == "vit" and resolution % patch_size:
        raise UserError(f"--resolution {resolution} is not a multiple of the patch size {patch_size}")
    if vision_tower == "conv" and resolution % 32:
        raise UserError(f"--resolution {resolution}: the conv tower needs a multiple of 32")
    for name, width in (("vision", vision_width), ("text", text_width)):
        if width % 32:
            raise UserError(f"{name} width {width}: must be a multiple of 32 (head width)")
    if vision_tower == "conv":
        vision = {"image_size": resolution, "layers": [max(1, vision_layers // 4)] * 4, "width": vision_width // 8,
                  "head_width": 32}
    else:
        vision = {"image_size": resolution, "patch_size": patch_size, "width": vision_width,
                  "layers": vision_layers, "head_width": 32, "mlp_ratio": 4.0}
    return {
        "embed_dim": embed_dim,
        "vision_cfg": vision,
        "text_cfg": {"context_length": context_length, "vocab_size": 49408, "width": text_width,
                     "heads": text_width // 32, "layers": text_layers},
    }


def model_spec_of(options: dict) -> dict:
    """The checkpoint's model_spec for these options: the open_clip config, and the text
    tower's attention when it is not open_clip's causal one (comco.models.text_towers)."""
    from comco.models import text_tower_spec

    model_cfg = scratch_cfg(**{k: options.get(k, v) for k, v in SIZE.items()})
    if options.get("objective") == "siglip":  # SigLIP's learnable temperature and bias, its code's init
        bias = options.get("siglip_bias")  # a recipe's named deviation (comco.lab.recipe), else -10
        model_cfg.update(init_logit_scale=SIGLIP_INIT_SCALE,
                         init_logit_bias=SIGLIP_INIT_BIAS if bias is None else float(bias))
    spec = {"open_clip_name": SCRATCH_NAME, "open_clip_cfg": model_cfg,
            "preprocess": {"mean": list(OPENAI_MEAN), "std": list(OPENAI_STD)}}
    tower = text_tower_spec(options.get("text_attention", "causal"), options.get("text_pool"))
    if tower:
        spec["text_tower"] = tower
    return spec


def initial_module(seed: int, options: dict):
    """(model_spec, module) with the initial weights of a scratch run of this seed."""
    from comco.models import build_open_clip

    spec = model_spec_of(options)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # the initial weights are part of the seeded run
        module, _, _ = build_open_clip(spec)
    return spec, module


def save_initial(path: Path, seed: int, options: dict) -> Path:
    """The untrained model a scratch run of this seed starts from, as a checkpoint: the
    architecture's own prior, probed beside the trained models."""
    from comco.models import save_checkpoint

    spec, module = initial_module(seed, options)
    return save_checkpoint(path, kind="scratch", model=module, model_spec=spec,
                           extra={"initial": True, "seed": seed})


def fix_logit_scale(module, value: float | None) -> None:
    """A fixed temperature: exp(logit_scale) held at `value` and not learned (None: open_clip's,
    learned from 1/0.07). A lower scale keeps InfoNCE pushing negatives apart after they are
    ranked right, which spreads lookalike names (docs/lab-medium/DIAGNOSIS.md)."""
    if value is None:
        return
    with torch.no_grad():
        module.logit_scale.fill_(math.log(value))
    module.logit_scale.requires_grad_(False)


def _no_images(indices: list[int]) -> torch.Tensor:
    return torch.empty(len(indices), 0)


class ScratchTask:
    kind = "scratch"

    def __init__(self, data: TrainData, cfg: TrainConfig, cache_dir: Path | None = None):
        import open_clip

        if data.source != "comco":
            raise UserError("comco train scratch reads a comco dataset folder (scenes.jsonl); "
                            "use longclip/debias for other data")
        self.cfg = cfg
        self.samples = data.samples
        size = {k: cfg.options.get(k, v) for k, v in SIZE.items()}
        self.model_spec, self.module = initial_module(cfg.seed, cfg.options)
        fix_logit_scale(self.module, cfg.options.get("logit_scale"))
        self.tokenizer = open_clip.SimpleTokenizer(context_length=size["context_length"])
        self.objective = cfg.options.get("objective", "clip")
        if self.objective not in OBJECTIVES:
            raise UserError(f"objective '{self.objective}': use one of {', '.join(OBJECTIVES)}")
        if cfg.options.get("checkpoint_spacing", "even") not in SPACINGS:
            raise UserError(f"checkpoint_spacing '{cfg.options['checkpoint_spacing']}': use one of "
                            f"{', '.join(SPACINGS)}")
        if self.objective in NEGCLIP:  # the mentions a swap foil draws its absent object from
            self.vocab = vocabulary(c for sample in self.samples for c in sample.captions)
        if is_text_only(self.objective):
            add_text_dropout(self.module)
            self.images = _no_images  # the captions alone: no image is decoded
            return
        cache = Path(cache_dir) if cache_dir else Path(cfg.out) / "cache"
        self.images = CachedImages.build([s.image for s in self.samples], size["resolution"], cache,
                                         threads=max(2, cfg.workers))  # decoding threads

    def num_samples(self) -> int:
        return len(self.samples)

    def texts(self, epoch: int, indices: list[int]) -> dict[str, torch.Tensor]:
        """One caption per sample, uniform over its templates x mention orders (the paraphrase
        objective: two, see comco.train.paraphrase)."""
        captions, pairs, foils = [], [], []
        for i in indices:
            options = self.samples[i].captions
            rng = sample_rng(self.cfg.seed, epoch, i, _SALT_CAPTION)
            if self.objective == "paraphrase":  # the caption and the scene told in another order
                anchor, pair = pair_captions(options, rng)
                captions.append(anchor)
                pairs.append(pair)
            else:
                captions.append(options[int(rng.integers(len(options)))])
            fix_rng = sample_rng(self.cfg.seed, epoch, i, _SALT_FIX)
            if self.objective == "orderaug" or NEGCLIP.get(self.objective, ((), False))[1]:
                captions[-1] = reorder(captions[-1], fix_rng)
            if self.objective in NEGCLIP:
                drawn = foil(captions[-1], self.vocab, fix_rng, NEGCLIP[self.objective][0])
                foils.append(drawn[1] if drawn else None)
        out = {"text": self.tokenizer(captions), **({"pair": self.tokenizer(pairs)} if pairs else {})}
        if self.objective in NEGCLIP:
            out["foil"] = self.tokenizer([f if f is not None else c for f, c in zip(foils, captions)])
            out["has_foil"] = torch.tensor([f is not None for f in foils])
        return out

    def batches(self, plan: Iterable[tuple[int, list[int]]]):
        return iterate(MicroBatches(self.images, self.texts), plan, self.workers())

    def workers(self) -> int:
        """-1 = auto: on a GPU, prepare batches ahead in 2 processes (the GPU step is short
        enough that in-process tokenising shows); on CPUs, in-process (cores are busy)."""
        if self.cfg.workers >= 0:
            return self.cfg.workers
        from comco.train.loop import resolve_device

        return 2 if resolve_device(self.cfg.device).startswith("cuda") else 0

    def loss(self, module, batch):
        if self.objective == "simcse":
            return simcse_loss(module, batch.tensors["text"])
        if self.objective == "paraphrase":
            return paraphrase_loss(module, batch.tensors["text"], batch.tensors["pair"])
        if self.objective in NEGCLIP:  # captions and foils through the text tower in one call
            n = len(batch.tensors["text"])
            image, text, scale = clip_features(module, batch.tensors["image"],
                                               torch.cat([batch.tensors["text"], batch.tensors["foil"]]))
            loss = negclip_loss(image, text[:n], text[n:], scale, batch.tensors["has_foil"])
            return loss, {"logit_scale": float(scale.detach())}
        image, text, scale = clip_features(module, batch.tensors["image"], batch.tensors["text"])
        if self.objective == "siglip":
            bias = getattr(module, "module", module).logit_bias
            loss = siglip_loss(image, text, scale, bias)
            return loss, {"logit_scale": float(scale.detach()), "logit_bias": float(bias.detach())}
        loss = contrastive_loss(image, text, scale, self.cfg.label_smoothing)
        return loss, {"logit_scale": float(scale.detach())}

    def after_step(self) -> None:
        clamp_logit_scale(self.module)

    def param_groups(self, weight_decay: float) -> list[dict]:
        return decay_groups(self.module, weight_decay)

    def checkpoint_payload(self) -> dict:
        return {"kind": self.kind, "model": self.module, "model_spec": self.model_spec, "extra": {}}

    def load_state(self, checkpoint: dict) -> None:
        self.module.load_state_dict(checkpoint["state_dict"])

    def finish(self, out) -> dict:
        return {}
