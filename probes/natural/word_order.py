"""ARO's COCO-Order and Flickr30k-Order foils (Yuksekgonul et al. 2023): each caption of the
retrieval test split against four word-order perturbations of itself.

ARO releases no foil file: its loader builds the foils at run time from BLIP's retrieval JSONs
(`coco_karpathy_test.json`, `flickr30k_test.json`: a list of `{"image", "caption": [...]}`), in
this order after the true caption:

1. the nouns (Penn tags NN, NNS, NNP, NNPS) permuted among themselves, and the adjectives
   (JJ, JJR, JJS) among themselves;
2. every other token permuted among the other tokens, nouns and adjectives kept in place;
3. the tokens cut into consecutive trigrams (the last one shorter), each trigram shuffled;
4. the trigrams' order shuffled;

each option (the true caption too) then lower-cased, `.!"()*#:;~` made spaces, runs of spaces
closed and cut to 30 words (BLIP's `pre_caption`, max_words 30). ARO tags with spaCy's
`en_core_web_sm`; comco does the same. Deviations, named: ARO tokenizes for the trigram foils
with NLTK's `word_tokenize` and comco with spaCy's tokens (they differ on a few contractions and
quotes); ARO draws from the global `random` / `np.random` state after one seed, comco from one
generator per caption seeded by (seed, image, caption), so the foils are reproducible one by one
but not ARO's own draws.
"""

from __future__ import annotations

import re
from typing import Callable

import numpy as np

from comco.errors import UserError

NOUNS = ("NN", "NNS", "NNP", "NNPS")
ADJECTIVES = ("JJ", "JJR", "JJS")
MAX_WORDS = 30
PERTURBATIONS = ("shuffle nouns and adjectives", "shuffle all but nouns and adjectives",
                 "shuffle within trigrams", "shuffle trigrams")

Tagger = Callable[[str], list]  # text -> [(token, Penn tag), ...]


def pre_caption(caption: str, max_words: int = MAX_WORDS) -> str:
    """BLIP's caption normalisation, as ARO applies it to every option."""
    caption = re.sub(r"([.!\"()*#:;~])", " ", caption.lower())
    caption = re.sub(r"\s{2,}", " ", caption).rstrip("\n").strip(" ")
    words = caption.split(" ")
    return " ".join(words[:max_words]) if len(words) > max_words else caption


def _permute_at(tokens: list[str], where: list[int], rng: np.random.Generator) -> None:
    if len(where) > 1:
        picked = [tokens[i] for i in where]
        for i, j in zip(where, rng.permutation(len(where))):
            tokens[i] = picked[j]


def trigrams(tokens: list[str]) -> list[list[str]]:
    return [tokens[i:i + 3] for i in range(0, len(tokens), 3)]


def perturb(tagged: list[tuple[str, str]], rng: np.random.Generator) -> list[str]:
    """The four foils of one tagged caption, in ARO's order (before `pre_caption`)."""
    tokens = [t for t, _ in tagged]
    nouns = [i for i, (_, tag) in enumerate(tagged) if tag in NOUNS]
    adjectives = [i for i, (_, tag) in enumerate(tagged) if tag in ADJECTIVES]
    a = list(tokens)
    _permute_at(a, nouns, rng)
    _permute_at(a, adjectives, rng)
    b = list(tokens)
    kept = set(nouns) | set(adjectives)
    _permute_at(b, [i for i in range(len(tokens)) if i not in kept], rng)
    within = [[g[i] for i in rng.permutation(len(g))] for g in trigrams(tokens)]
    groups = trigrams(tokens)
    across = [groups[i] for i in rng.permutation(len(groups))]
    return [" ".join(a), " ".join(b), " ".join(" ".join(g) for g in within), " ".join(" ".join(g) for g in across)]


def options(caption: str, tagger: Tagger, rng: np.random.Generator) -> list[str]:
    """The true caption and its four foils, each through `pre_caption`, true first."""
    return [pre_caption(caption)] + [pre_caption(f) for f in perturb(tagger(caption), rng)]


def spacy_tagger() -> Tagger:
    """spaCy's en_core_web_sm, the tagger ARO uses; one line saying how to get it when absent."""
    how = ("ARO's COCO/Flickr30k-Order foils need spaCy's English tagger: pip install spacy && "
           "python -m spacy download en_core_web_sm")
    try:
        import spacy
    except ImportError:
        raise UserError(how) from None
    try:
        nlp = spacy.load("en_core_web_sm", disable=["parser", "ner", "lemmatizer"])
    except OSError:
        raise UserError(how) from None
    return lambda text: [(t.text, t.tag_) for t in nlp(text)]
