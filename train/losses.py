"""Contrastive losses: symmetric InfoNCE over features gathered from all ranks, and the
Long-CLIP / DeBias-CLIP mix of a long-caption and a short-caption term."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from comco.train import distributed
from comco.train.pca import pca_reconstruct


def contrastive_loss(image: torch.Tensor, text: torch.Tensor, scale: torch.Tensor,
                     label_smoothing: float = 0.0) -> torch.Tensor:
    """Symmetric InfoNCE: local rows against the features of every rank.

    `scale` is the multiplier of the cosine similarities (exp of the logit scale).
    Features are L2-normalised here. Under DDP the gather keeps gradients, so each
    rank's loss reaches the other ranks' encoders as in single-process training.
    """
    image = F.normalize(image.float(), dim=-1)
    text = F.normalize(text.float(), dim=-1)
    all_image = distributed.gather_with_grad(image)
    all_text = distributed.gather_with_grad(text)
    offset = distributed.rank() * image.shape[0]
    targets = torch.arange(image.shape[0], device=image.device) + offset
    scale = scale.float()
    image_to_text = scale * image @ all_text.T
    text_to_image = scale * text @ all_image.T
    return (F.cross_entropy(image_to_text, targets, label_smoothing=label_smoothing)
            + F.cross_entropy(text_to_image, targets, label_smoothing=label_smoothing)) / 2


def long_short_loss(image: torch.Tensor, text_long: torch.Tensor, text_short: torch.Tensor,
                    scale: torch.Tensor, short_weight: float = 0.1, pca_rank: int = 32,
                    label_smoothing: float = 0.1, long_weight: float | None = None
                    ) -> tuple[torch.Tensor, dict[str, float]]:
    """short_weight * short + long_weight * long (long_weight defaults to 1 - short_weight);
    the short term sees PCA-reduced image features."""
    loss_long = contrastive_loss(image, text_long, scale, label_smoothing)
    image_short = pca_reconstruct(F.normalize(image.float(), dim=-1), pca_rank)
    loss_short = contrastive_loss(image_short, text_short, scale, label_smoothing)
    loss = short_weight * loss_short + (1 - short_weight if long_weight is None else long_weight) * loss_long
    return loss, {"loss_long": loss_long.item(), "loss_short": loss_short.item()}
