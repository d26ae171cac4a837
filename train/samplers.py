"""Short-caption samplers for Long-CLIP and DeBias-CLIP, and the padding move.

`longclip`: the short caption is the first sentence (the summary).
`debias`:   drop the summary when other sentences remain, take n ~ U{1..k} of the
            k remaining sentences without replacement in random order, and after
            tokenising move n_pre ~ U{0..n_pad} trailing PAD tokens to just after SOT.
Each debias step can be switched off; with all three off it is the longclip sampler.

Randomness is per sample: a generator derived from (seed, epoch, sample index), so the
captions a sample gets do not depend on batch composition, worker count or resumption.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from comco.plan.captions import split_sentences  # the project's one splitter (train.longclip imports it from here)

_SALT_TEXT = 0x5E7  # separate streams for sentence sampling and padding draws
_SALT_PAD = 0x9AD


def sample_rng(seed: int, epoch: int, index: int, salt: int) -> np.random.Generator:
    return np.random.default_rng([seed, epoch, index, salt])


@dataclass(frozen=True)
class ShortCaptionSampler:
    """Which short caption a long caption yields; `pad` is applied to token ids later."""

    remove_summary: bool = True
    sample: bool = True
    pad: bool = True

    @classmethod
    def for_kind(cls, kind: str, *, remove_summary: bool = True, sample: bool = True,
                 pad: bool = True) -> "ShortCaptionSampler":
        if kind == "longclip":
            return cls(remove_summary=False, sample=False, pad=False)
        if kind == "debias":
            return cls(remove_summary=remove_summary, sample=sample, pad=pad)
        raise ValueError(f"no short-caption sampler for {kind!r}")

    def short_caption(self, long_caption: str, rng: np.random.Generator) -> str:
        sentences = split_sentences(long_caption)
        if not sentences:
            return long_caption
        pool = sentences[1:] if self.remove_summary and len(sentences) >= 2 else sentences
        if not self.sample:
            return pool[0]
        n = int(rng.integers(1, len(pool) + 1))  # U{1..len(pool)}
        chosen = rng.permutation(len(pool))[:n]  # without replacement, random order
        return " ".join(pool[i] for i in chosen)


def move_padding(tokens: torch.Tensor, n_pre: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Move n_pre[i] trailing PAD tokens of row i to just after its SOT token.

    Rows are [SOT, text..., EOT, PAD...]; n_pre must not exceed the row's trailing
    pads, so no text token is ever cut. Rotating positions 1.. right by n_pre brings
    the last n_pre tokens (all PAD) to positions 1..n_pre and shifts the rest intact.
    """
    if tokens.ndim != 2:
        raise ValueError("tokens must be (batch, context)")
    n_pre = n_pre.to(tokens.device).long()
    if bool((n_pre > trailing_pads(tokens, pad_id)).any()) or bool((n_pre < 0).any()):
        raise ValueError("n_pre exceeds the trailing padding of a row")
    length = tokens.shape[1]
    positions = torch.arange(1, length, device=tokens.device)
    source = 1 + (positions[None, :] - 1 - n_pre[:, None]) % (length - 1)
    moved = tokens.clone()
    moved[:, 1:] = torch.gather(tokens, 1, source)
    return moved


def trailing_pads(tokens: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Number of PAD tokens after the last non-PAD token of each row."""
    not_pad = tokens != pad_id
    length = tokens.shape[1]
    last_content = length - 1 - torch.flip(not_pad, dims=[1]).long().argmax(dim=1)
    return (length - 1 - last_content).long()


def draw_pad_counts(tokens: torch.Tensor, rngs: list[np.random.Generator], pad_id: int = 0) -> torch.Tensor:
    """n_pre ~ U{0..n_pad} per row, from that row's own generator."""
    available = trailing_pads(tokens, pad_id).tolist()
    return torch.tensor([int(rng.integers(0, n + 1)) for rng, n in zip(rngs, available)], dtype=torch.long)
