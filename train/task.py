"""What the one training loop needs from each kind of training (scratch, longclip,
debias, labclip): the trainable module, batches for given sample indices, a loss,
and what goes into a checkpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Protocol

import torch
from torch import nn


@dataclass
class Batch:
    tensors: dict[str, torch.Tensor]
    size: int

    def to(self, device: torch.device) -> "Batch":
        return Batch({k: v.to(device, non_blocking=True) for k, v in self.tensors.items()}, self.size)


class Task(Protocol):
    kind: str
    module: nn.Module  # everything the optimiser trains (wrapped in DDP when distributed)

    def num_samples(self) -> int: ...

    def batches(self, micro_batches: Iterable[tuple[int, list[int]]]) -> Iterator[Batch]:
        """One Batch per (epoch, indices) in order; may load ahead in worker processes."""

    def loss(self, module: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]: ...

    def param_groups(self, weight_decay: float) -> list[dict]: ...

    def checkpoint_payload(self) -> dict[str, Any]:
        """kind, model, model_spec, extra for comco.models.factory.save_checkpoint."""

    def load_state(self, checkpoint: dict) -> None:
        """Restore the trained weights from a checkpoint dict (for --resume)."""

    def finish(self, out) -> dict[str, Any]:
        """Work after the last step (e.g. evaluation); returns a summary to print."""


def decay_groups(module: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups as in open_clip: no decay for gains, biases, scales, embeddings'
    1-d params, and for tables with frozen rows (decay would move frozen rows)."""
    decay, no_decay = [], []
    for name, param in module.named_parameters():
        if not param.requires_grad:
            continue
        exempt = (param.ndim < 2 or "bn" in name or "ln" in name or "bias" in name
                  or "logit_scale" in name or getattr(param, "_comco_frozen_rows", 0) > 0)
        (no_decay if exempt else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
