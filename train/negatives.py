"""Attribute-swapped hard negatives for captions that come without one (generic data).

comco records carry `attributes_swapped` (the first two mentioned objects' colours
exchanged). For other captions: swap two attribute words (colours, sizes, materials,
textures) when the caption has two different ones; otherwise swap two content words,
which exchanges nouns with nouns or adjectives with nouns ("red cube" -> "cube red").
Either way the bag of words is kept and only the binding changes.
"""

from __future__ import annotations

import re

import numpy as np

ATTRIBUTES = frozenset("""
red orange yellow green blue purple violet pink brown black white grey gray gold golden silver
cyan magenta beige tan turquoise teal maroon navy
big large small tiny huge little tall short long wide narrow thick thin round square
metal metallic rubber wooden plastic glass stone shiny matte dark light bright pale striped spotted
""".split())
STOPWORDS = frozenset("""
a an the and or of on in at to with by for from is are was were be there this that these those it its
photo picture image next near left right top bottom behind front above below under over some two three
""".split())
_WORD = re.compile(r"[A-Za-z]+")


def swap_words(caption: str, rng: np.random.Generator) -> str:
    """The caption with two words exchanged (attributes first choice); unchanged if it
    has fewer than two swappable words."""
    words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(caption)]
    attributes = [w for w in words if w[2].lower() in ATTRIBUTES]
    distinct = {w[2].lower() for w in attributes}
    if len(distinct) >= 2:
        pool = attributes
    else:
        pool = [w for w in words if w[2].lower() not in STOPWORDS]
    candidates = [(a, b) for i, a in enumerate(pool) for b in pool[i + 1:] if a[2].lower() != b[2].lower()]
    if not candidates:
        return caption
    first, second = candidates[int(rng.integers(len(candidates)))]
    return (caption[:first[0]] + second[2] + caption[first[1]:second[0]] + first[2] + caption[second[1]:])
