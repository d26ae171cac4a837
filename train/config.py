"""The training configuration shared by all four kinds, and which part of it a
resumed run must match."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field

from comco.errors import UserError

# Fields that may change between a run and its resumption: they do not change what
# is computed (where to write, how often to save, what to show, when to pause).
RUNTIME_FIELDS = ("out", "resume", "quiet", "checkpoint_every", "stop_after", "workers", "log_every")


@dataclass
class TrainConfig:
    kind: str  # scratch | longclip | debias | labclip
    data: str
    out: str
    init: str | None = None
    pretrained: str | None = None
    image_root: str | None = None
    seed: int = 0
    batch_size: int = 256  # global, over accumulation and processes
    accum: int = 1
    epochs: float = 3.0
    steps: int | None = None  # overrides epochs
    lr: float = 1e-6
    weight_decay: float = 0.01
    warmup: int = 200
    optimizer: str = "adamw"
    # torch's Adam(W) defaults, which the Long-CLIP and DeBias-CLIP code keep; scratch uses
    # open_clip's (0.9, 0.98) and 1e-6 for training from random weights
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    label_smoothing: float = 0.1
    precision: str = "auto"  # auto | fp32 | bf16 | fp16
    device: str = "auto"
    workers: int = 2
    checkpoint_every: int = 500
    log_every: int = 1
    stop_after: int | None = None  # pause after this many steps in this run
    resume: str | None = None
    quiet: bool = False
    options: dict = field(default_factory=dict)  # kind-specific settings

    def check(self) -> None:
        from comco.plan.rng import check_seed

        for flag, value in (("--lr", self.lr), ("--epochs", self.epochs), ("--weight-decay", self.weight_decay),
                            ("--label-smoothing", self.label_smoothing)):
            if not math.isfinite(value):
                raise UserError(f"{flag} {value}: give a finite number")
        check_seed(self.seed)
        if self.batch_size <= 0:
            raise UserError(f"--batch-size {self.batch_size}: must be a positive number of samples")
        if self.accum <= 0:
            raise UserError(f"--accum {self.accum}: must be at least 1")
        if self.batch_size % self.accum:
            raise UserError(f"--batch-size {self.batch_size} is not divisible by --accum {self.accum}")
        if self.steps is not None and self.steps <= 0:
            raise UserError(f"--steps {self.steps}: must be positive")
        if self.steps is None and self.epochs <= 0:
            raise UserError(f"--epochs {self.epochs}: must be positive")
        if self.lr <= 0:
            raise UserError(f"--lr {self.lr}: must be positive")
        if self.weight_decay < 0:
            raise UserError(f"--weight-decay {self.weight_decay}: 0 or more")
        if self.warmup < 0:
            raise UserError(f"--warmup {self.warmup}: 0 or more steps")
        if not 0 <= self.label_smoothing < 1:
            raise UserError(f"--label-smoothing {self.label_smoothing}: use 0 <= s < 1")
        if self.checkpoint_every <= 0:
            raise UserError(f"--checkpoint-every {self.checkpoint_every}: must be positive")
        if self.stop_after is not None and self.stop_after <= 0:
            raise UserError(f"--stop-after {self.stop_after}: must be positive")
        if self.workers < -1:
            raise UserError(f"--workers {self.workers}: 0 or more (-1 = the kind's default)")
        if self.precision not in ("auto", "fp32", "bf16", "fp16"):
            raise UserError(f"--precision {self.precision}: one of auto, fp32, bf16, fp16")
        if self.optimizer not in ("adamw", "adam"):
            raise UserError(f"--optimizer {self.optimizer}: one of adamw, adam")
        b1, b2 = self.adam_betas
        if not (0 <= b1 < 1 and 0 <= b2 < 1):
            raise UserError(f"--adam-betas {b1},{b2}: each in [0, 1)")
        if not (math.isfinite(self.adam_eps) and self.adam_eps > 0):
            raise UserError(f"--adam-eps {self.adam_eps}: a small positive number (e.g. 1e-8)")
        self._check_options()
        if self.device != "auto":
            from comco.models import check_device

            check_device(self.device)

    def _check_options(self) -> None:
        """The kind-specific sizes and weights (scratch's towers, Long-CLIP's stretch and loss)."""
        o = self.options
        for key, flag, low in (("resolution", "--resolution", 8), ("vision_layers", "--layers", 1),
                               ("text_layers", "--layers", 1), ("vision_width", "--width", 32),
                               ("context_length", "--context-length", 4), ("pca_rank", "--pca-rank", 1),
                               ("keep", "--keep", 0)):
            if key in o and not low <= o[key]:
                raise UserError(f"{flag} {o[key]}: at least {low}")
        for key, flag, high in (("resolution", "--resolution", 4096), ("vision_layers", "--layers", 256),
                                ("vision_width", "--width", 8192), ("context_length", "--context-length", 1024),
                                ("keep", "--keep", 76)):
            if key in o and o[key] > high:
                raise UserError(f"{flag} {o[key]}: at most {high}")
        if o.get("vision_width", 32) % 32:
            raise UserError(f"--width {o['vision_width']}: a multiple of 32 (the head width)")
        scale = o.get("logit_scale")
        if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))
                                  or not (math.isfinite(scale) and 1 <= scale <= 100)):
            raise UserError(f"--logit-scale {scale}: a fixed temperature's inverse in 1..100 (leave it out to "
                            "learn it)")
        for key in ("short_weight", "long_weight"):
            value = o.get(key)
            if value is not None and not (math.isfinite(value) and 0 <= value <= 1):
                raise UserError(f"--{key.replace('_', '-')} {value}: a loss weight in 0..1")

    def to_dict(self) -> dict:
        return asdict(self)

    def identity(self) -> dict:
        """What a resumed run must share with the checkpoint's run."""
        return _identity_view(self.to_dict())

    def identity_hash(self) -> str:
        text = json.dumps(self.identity(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


# Settings that became fields later, with the value every run had before: left out of the
# identity at that value, so checkpoints written before them still resume (same hash).
LEGACY_VALUES = {"adam_betas": [0.9, 0.98], "adam_eps": 1e-6}


def _identity_view(d: dict) -> dict:
    out = {k: v for k, v in d.items() if k not in RUNTIME_FIELDS}
    for k, legacy in LEGACY_VALUES.items():
        if k in out and (list(out[k]) if isinstance(out[k], (list, tuple)) else out[k]) == legacy:
            del out[k]
    return out


def differing_fields(saved: dict, current: dict) -> list[str]:
    saved, current = _identity_view(saved), _identity_view(current)
    keys = sorted(set(saved) | set(current))
    return [k for k in keys if _plain(saved.get(k)) != _plain(current.get(k))]


def _plain(value):
    return list(value) if isinstance(value, tuple) else value
