"""Calling an open_clip model through forward() (so DistributedDataParallel sees the
call) and reading its outputs in either the tuple or the dict form."""

from __future__ import annotations

import torch
from torch import nn


def clip_features(module: nn.Module, image: torch.Tensor, text: torch.Tensor):
    """(image features, text features, logit scale already exponentiated)."""
    out = module(image, text)
    if isinstance(out, dict):
        return out["image_features"], out["text_features"], out["logit_scale"]
    return out[0], out[1], out[2]


def clamp_logit_scale(model: nn.Module, maximum: float = 100.0) -> None:
    """open_clip's rule: keep exp(logit_scale) <= 100 after each step, or from-scratch
    training can blow the temperature up."""
    scale = getattr(model, "logit_scale", None)
    if isinstance(scale, nn.Parameter):
        with torch.no_grad():
            scale.clamp_(0, float(torch.log(torch.tensor(maximum))))
