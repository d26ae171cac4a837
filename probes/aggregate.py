"""`--text-aggregate per-object`: the ComCO paper's mitigation (App. 7.12). A caption is split
into one phrase per mentioned object, each phrase is embedded alone, and the caption's
embedding is the mean of its phrases' (normalised) embeddings, normalised again. The mean
has no order, so a text encoder that favours its first mention cannot show it here.

A phrase is the object's name (or plural, or synonym) at its first mention with the words
right before it that describe that object: articles, count words, colours, size words
("a red cube", "two cubes", "the very large bus"). Everything else ("a photo of", joins,
relation words) is dropped: relations, and a detail given only at a later mention, are
not seen by the aggregate. A text that names no object of the gallery is embedded whole.

A model can embed phrases when it has a text encoder that turns any text into one vector in
the space the probes compare (CLIP towers, sentence encoders). A model that scores texts
another way (a generative VLM's caption likelihood: ModelRef.embeds_phrases) has nothing to
average: the option refuses it before anything is loaded or written.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from comco.errors import UserError
from comco.probes.words import mention_spans

AGGREGATES = ("per-object",)
AGGREGATE_NAME = "mean"  # how the phrase embeddings are combined (named in results and tables)
ARTICLES = ("a", "an", "the")
_WORD_BEFORE = re.compile(r"([\w-]+)\s+$")


def check_aggregate(value: str | None, models: list) -> None:
    """Refuse an unknown --text-aggregate, and a model that cannot embed phrases."""
    if value is None:
        return
    if value not in AGGREGATES:
        raise UserError(f"--text-aggregate {value}: use {', '.join(AGGREGATES)} (or leave it out for whole captions)")
    unable = [m.label for m in models if not m.embeds_phrases]
    if unable:
        raise UserError(f"--text-aggregate {value}: {unable[0]} gives no text embedding to average phrases in "
                        "(it scores whole texts); drop the option or that model")


def modifier_words(object_set, book) -> frozenset[str]:
    """The words that may open or qualify an object's phrase: articles, count, size and colour words."""
    words = set(ARTICLES)
    words |= {w.lower() for w in book.count_words.values()}
    for size_words in book.size_words.values():
        words |= {w.lower() for phrase in size_words for w in phrase.split()}
    for t in book.templates.values():
        words |= {w.lower() for phrase in t.size_words for w in phrase.split()}
    if object_set is not None:
        words |= {c.lower() for c in object_set.palette}
        words |= {c.lower() for o in object_set.objects for c in o.colors}
    return frozenset(words)


def object_phrases(text: str, names: list[str], forms: dict[str, list[str]] | None,
                   modifiers: frozenset[str]) -> list[str]:
    """One phrase per mentioned object, in mention order ([] when the text names none)."""
    out = []
    prev_end = 0
    for _, start, end in mention_spans(text, names, forms):
        begin = start
        while (m := _WORD_BEFORE.search(text, prev_end, begin)) and m.group(1).lower() in modifiers:
            begin = m.start(1)
        out.append(text[begin:end])
        prev_end = end
    return out


class PerObjectTexts:
    """An embedder that embeds texts per object and averages; images pass through unchanged."""

    aggregate = "per-object"

    def __init__(self, embedder, names: list[str], forms: dict[str, list[str]] | None, modifiers: frozenset[str]):
        self.inner, self.names, self.forms, self.modifiers = embedder, names, forms, modifiers

    def phrases(self, text: str) -> list[str]:
        return object_phrases(text, self.names, self.forms, self.modifiers) or [text]

    def texts(self, items: Sequence[str]) -> np.ndarray:
        split = [self.phrases(t) for t in items]
        unique = list(dict.fromkeys(p for ps in split for p in ps))
        if not unique:
            return self.inner.texts([])
        emb = self.inner.texts(unique)
        row = {p: i for i, p in enumerate(unique)}
        out = np.stack([emb[[row[p] for p in ps]].mean(0) for ps in split])
        return (out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)).astype(np.float32)

    def images(self, paths):
        return self.inner.images(paths)

    # the runner and comco.probes.embed.named label the inner embedder's progress bars
    @property
    def task(self):
        return getattr(self.inner, "task", "")

    @task.setter
    def task(self, value):
        self.inner.task = value

    @property
    def what(self):
        return getattr(self.inner, "what", None)

    @what.setter
    def what(self, value):
        self.inner.what = value

    @property
    def stats(self):
        return self.inner.stats
