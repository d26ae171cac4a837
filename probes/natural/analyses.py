"""The DeBias-CLIP caption analyses: how a model's retrieval reacts to where text sits.

Three analyses, each a set of named caption variants built from a long caption's
sentences (the first sentence of a long caption is its summary):

- padding: "This is a photo." prepended k = 0..5 times to the first two sentences;
  the paper reads text-to-image R@1 against k.
- order: First-2 (sentences 1, 2), Swap-2 (2, 1), First-only (1); image-to-text R@1.
- summary: Keep (as written), Move-to-4th (the summary placed fourth), Remove
  (summary dropped); text-to-image R@1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from comco.plan.captions import split_sentences  # noqa: F401  the project's one splitter; natural_eval takes it from here

PHOTO_SENTENCE = "This is a photo."
PADDING_KS = range(6)


def join_sentences(sentences: list[str]) -> str:
    return " ".join(sentences)


def photo_padded(sentences: list[str], k: int) -> str:
    """k copies of "This is a photo." in front of the first two sentences."""
    return join_sentences([PHOTO_SENTENCE] * k + sentences[:2])


def first_two(sentences: list[str]) -> str:
    return join_sentences(sentences[:2])


def swap_two(sentences: list[str]) -> str:
    return join_sentences([sentences[1], sentences[0]])


def first_only(sentences: list[str]) -> str:
    return sentences[0]


def summary_keep(sentences: list[str]) -> str:
    return join_sentences(sentences)


def summary_fourth(sentences: list[str]) -> str:
    """The summary moved to fourth place (last, when fewer than three sentences follow it)."""
    rest = sentences[1:]
    return join_sentences(rest[:3] + [sentences[0]] + rest[3:])


def summary_removed(sentences: list[str]) -> str:
    return join_sentences(sentences[1:])


@dataclass(frozen=True)
class Analysis:
    name: str
    title: str
    direction: str  # the retrieval direction the paper reads: "t2i" or "i2t"
    min_sentences: int  # captions with fewer are left out (and counted)
    variants: dict[str, Callable[[list[str]], str]]
    # (n, what happens): captions kept but with fewer than n sentences, counted in reports
    caveat: tuple[int, str] | None = None


ANALYSES = {a.name: a for a in [
    Analysis("padding", '"This is a photo." prepended k times to the first two sentences', "t2i", 2,
             {f"k={k}": (lambda s, k=k: photo_padded(s, k)) for k in PADDING_KS}),
    Analysis("order", "First-2 / Swap-2 / First-only", "i2t", 2,
             {"first-2": first_two, "swap-2": swap_two, "first-only": first_only}),
    Analysis("summary", "summary sentence Keep / Move-to-4th / Remove", "t2i", 2,
             {"keep": summary_keep, "move-to-4th": summary_fourth, "remove": summary_removed},
             caveat=(4, "fewer than 4 sentences: the summary went last, not fourth")),
]}
