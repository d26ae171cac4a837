"""Calling an open_clip model through forward() (so DistributedDataParallel sees the
call) and reading its outputs in either the tuple or the dict form."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def clip_features(module: nn.Module, image: torch.Tensor, text: torch.Tensor):
    """(image features, text features, logit scale already exponentiated).

    An open_clip CLIP whose text tower cannot see past the end-of-text token (causal mask,
    EOT pooling) is run on the batch cut after its longest text: the same features and
    gradients, and the 32-position context of the lab's captions (about 10 tokens used)
    costs a third of a step less. Other towers (DDP's wrapper, the bidirectional tower of
    comco.models.text_towers, which masks and cuts its padding itself) run forward() as it is.
    """
    from comco.models import encode_text_trimmed, padding_is_inert

    if padding_is_inert(module):
        image_features = F.normalize(module.encode_image(image), dim=-1)
        text_features = F.normalize(encode_text_trimmed(module, text), dim=-1)
        return image_features, text_features, module.logit_scale.exp()
    out = module(image, text)
    if isinstance(out, dict):
        return out["image_features"], out["text_features"], out["logit_scale"]
    return out[0], out[1], out[2]


def text_features(module: nn.Module, text: torch.Tensor) -> torch.Tensor:
    """Unit text features alone (the text-only objectives), through forward() as clip_features
    calls it, and cut after the longest text where the padding is inert."""
    from comco.models import encode_text_trimmed, padding_is_inert

    if padding_is_inert(module):
        return F.normalize(encode_text_trimmed(module, text), dim=-1)
    out = module(None, text)
    return out["text_features"] if isinstance(out, dict) else out[1]


def clamp_logit_scale(model: nn.Module, maximum: float = 100.0) -> None:
    """open_clip's rule: keep exp(logit_scale) <= 100 after each step, or from-scratch
    training can blow the temperature up."""
    scale = getattr(model, "logit_scale", None)
    if isinstance(scale, nn.Parameter):
        with torch.no_grad():
            scale.clamp_(0, float(torch.log(torch.tensor(maximum))))
