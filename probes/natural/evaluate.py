"""Retrieval and the DeBias analyses of one model on one natural split.

Both take an `Embedder` (probes/embed.py) so that images and captions are encoded once
and cached; both return plain dicts that go straight into results.json.
"""

from __future__ import annotations

import numpy as np

from comco.probes.natural.analyses import ANALYSES, split_sentences
from comco.probes.natural.images import embed_images
from comco.probes.natural.recall import KS, retrieval_recalls, select_captions
from comco.probes.natural.split import NaturalSplit
from comco.probes.stats import accuracy


def _with_intervals(result: dict, t2i_ranks: np.ndarray, owners: np.ndarray, i2t_ranks: np.ndarray) -> dict:
    """Add a 95 % bootstrap interval to each R@1; text queries resample by image."""
    for direction, ranks, clusters in (("t2i", t2i_ranks, owners), ("i2t", i2t_ranks, None)):
        ci = accuracy(ranks < 1, clusters)
        result[direction]["R@1_ci95"] = [ci["lo"], ci["hi"]]
    return result


def recall_block(text_emb: np.ndarray, image_emb: np.ndarray, owners: np.ndarray) -> dict:
    result = retrieval_recalls(text_emb, image_emb, owners, KS, return_ranks=True)
    t2i_ranks, i2t_ranks = result.pop("ranks")
    return _with_intervals(result, t2i_ranks, owners, i2t_ranks)


def evaluate_retrieval(embedder, split: NaturalSplit, protocol: str) -> tuple[dict, NaturalSplit]:
    """R@1/5/10 both ways; returns the result and the split (less any undecodable image)."""
    image_emb, split = embed_images(embedder, split)
    texts, owners = select_captions([item.captions for item in split.items], protocol)
    result = recall_block(embedder.texts(texts), image_emb, owners)
    result["protocol"] = protocol
    return result, split


def analysis_captions(split: NaturalSplit, protocol: str, min_sentences: int):
    """Sentence lists of the captions an analysis can use, their images, and how many it cannot."""
    texts, owners = select_captions([item.captions for item in split.items], protocol)
    sentences = [split_sentences(t) for t in texts]
    usable = [i for i, s in enumerate(sentences) if len(s) >= min_sentences]
    return [sentences[i] for i in usable], owners[usable], len(texts) - len(usable)


def evaluate_analyses(embedder, split: NaturalSplit, protocol: str,
                      names: tuple[str, ...] = tuple(ANALYSES)) -> tuple[dict, NaturalSplit]:
    """Every variant of every analysis, scored against the same image gallery.

    Images whose captions an analysis cannot use stay in the gallery as distractors.
    """
    image_emb, split = embed_images(embedder, split)
    out = {}
    for name in names:
        analysis = ANALYSES[name]
        sentences, owners, excluded = analysis_captions(split, protocol, analysis.min_sentences)
        entry = {"title": analysis.title, "direction": analysis.direction, "protocol": protocol,
                 "n_captions": len(sentences), "excluded_captions": excluded,
                 "excluded_because": f"fewer than {analysis.min_sentences} sentences", "variants": {}}
        if analysis.caveat:
            n, why = analysis.caveat
            entry["caveat"] = {"captions": sum(len(s) < n for s in sentences), "why": why}
        if sentences:
            # One embedding call for all variants: full batches, and shared texts encoded once.
            texts = [make(s) for make in analysis.variants.values() for s in sentences]
            text_emb = embedder.texts(texts).reshape(len(analysis.variants), len(sentences), -1)
            for variant, emb in zip(analysis.variants, text_emb):
                entry["variants"][variant] = recall_block(emb, image_emb, owners)
        out[name] = entry
    return out, split
