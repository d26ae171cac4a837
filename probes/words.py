"""Whole-word name matching: "car" is not in "carrot", "dog" is not the "dog" of "hot dog".

Captions are checked against their recorded mention order with these, so a caption
whose text disagrees with its record is counted and left out, not silently scored.
"""

from __future__ import annotations

import re
from functools import lru_cache

from comco.plan.captions import split_sentences


@lru_cache(maxsize=4096)
def _pattern(word: str) -> re.Pattern:
    # Word boundaries that also treat '-' as part of a word ("t-shirt" is one word).
    return re.compile(r"(?<![\w-])" + re.escape(word.lower()) + r"(?![\w-])")


def contains_word(text: str, word: str) -> bool:
    return _pattern(word).search(text.lower()) is not None


def mention_sequence(text: str, names: list[str], forms: dict[str, list[str]] | None = None) -> list[str]:
    """The names found in `text` as whole words, ordered by first mention.

    Longer names claim their span first, so "hot dog" hides the "dog" inside it.
    `forms` maps a name to other spellings (plural, synonyms) that also count.
    """
    return [name for name, _, _ in mention_spans(text, names, forms)]


def mention_spans(text: str, names: list[str], forms: dict[str, list[str]] | None = None
                  ) -> list[tuple[str, int, int]]:
    """(name, start, end) of each name's first mention in `text`, in mention order (see mention_sequence)."""
    low = text.lower()
    spellings = sorted(((f, n) for n in names for f in [n, *(forms or {}).get(n, [])]),
                       key=lambda fn: -len(fn[0]))
    taken: list[tuple[int, int]] = []
    first: dict[str, tuple[int, int]] = {}
    for form, name in spellings:
        for m in _pattern(form).finditer(low):
            span = m.span()
            if any(span[0] < e and s < span[1] for s, e in taken):
                continue
            taken.append(span)
            if name not in first or span[0] < first[name][0]:
                first[name] = span
    return sorted(((n, s, e) for n, (s, e) in first.items()), key=lambda x: x[1])


def first_sentence(text: str) -> str:
    sentences = split_sentences(text)
    return sentences[0] if sentences else text
