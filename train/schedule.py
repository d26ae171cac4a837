"""Deterministic data order and the learning-rate schedule."""

from __future__ import annotations

import math

import numpy as np

_SALT_ORDER = 0x0D3


def epoch_order(seed: int, epoch: int, n: int) -> np.ndarray:
    """The sample order of one epoch: a permutation fixed by (seed, epoch) alone."""
    return np.random.default_rng([seed, epoch, _SALT_ORDER]).permutation(n)


def step_indices(seed: int, step: int, n: int, batch_size: int) -> tuple[int, np.ndarray]:
    """(epoch, sample indices) of global optimiser step `step`; the epoch's tail that
    does not fill a batch is dropped so every step sees exactly batch_size samples."""
    steps_per_epoch = n // batch_size
    epoch, position = divmod(step, steps_per_epoch)
    order = epoch_order(seed, epoch, n)
    return epoch, order[position * batch_size:(position + 1) * batch_size]


def short_warmup(warmup: int, total: int, lr: float) -> str | None:
    """One line when a run ends inside its warm-up (`total` < `warmup` steps): the learning rate
    never reaches its peak, only total/warmup of it (2 steps of a 200-step warm-up at 1e-6 stay
    at 1e-8, and the model barely moves). None when the run reaches its peak."""
    if warmup <= 0 or total >= warmup:
        return None
    top = lr * warmup_cosine(warmup, total)(total - 1)
    return (f"{total} steps end inside the {warmup}-step warm-up: the learning rate peaks at {top:.1e} instead "
            f"of {lr:.1e}; pass --warmup {max(0, total // 10)} (or train at least {warmup} steps)")


def warmup_cosine(warmup: int, total: int):
    """LR multiplier: linear warm-up over `warmup` steps, then cosine down to zero."""

    def factor(step: int) -> float:
        if warmup > 0 and step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return factor
