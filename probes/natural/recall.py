"""Retrieval recall with several captions per image, under a named caption protocol.

Text-to-image: each caption is a query; a hit at k when its image is among the k
most similar images; averaged over captions. Image-to-text: each image is a query;
a hit at k when any of its captions is among the k most similar captions; averaged
over images. Ties count against the model (a negative scoring exactly as high as the
best positive ranks above it), so a collapsed model cannot score by ties.

The similarity matrix is never held whole (Flickr30k full is 159k x 32k): both
directions stream over blocks of rows. Similarities are computed in float64 and scores
within TIE_TOL of the positive count as ties: float32 products of identical embeddings
can differ in the last bit with their position in the matrix (BLAS kernels), and the
rule must not depend on that.
"""

from __future__ import annotations

import numpy as np

PROTOCOLS = {
    "all": "all captions of each image (DeBias-CLIP's evaluation)",
    "first5": "the first five captions of each image (Long-CLIP's scripts)",
}
KS = (1, 5, 10)
TIE_TOL = 1e-9  # far below float32 resolution of a cosine (6e-8), far above float64 rounding (~1e-13)


def select_captions(captions_per_image: list[tuple[str, ...]], protocol: str) -> tuple[list[str], np.ndarray]:
    """Flatten captions under a protocol: (texts, image index of each text)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {sorted(PROTOCOLS)}")
    texts: list[str] = []
    owners: list[int] = []
    for index, captions in enumerate(captions_per_image):
        kept = captions[:5] if protocol == "first5" else captions
        texts.extend(kept)
        owners.extend([index] * len(kept))
    return texts, np.asarray(owners, dtype=np.int64)


def text_to_image_ranks(sim: np.ndarray, image_of_text: np.ndarray) -> np.ndarray:
    """For each text row of sim (texts x images): how many wrong images score >= its image."""
    rows = np.arange(sim.shape[0])
    positive = sim[rows, image_of_text]
    return (sim >= positive[:, None] - TIE_TOL).sum(axis=1) - 1  # minus the positive itself


def image_to_text_ranks(sim: np.ndarray, image_ids: np.ndarray, image_of_text: np.ndarray) -> np.ndarray:
    """For each image row of sim (images x texts): how many wrong texts score >= its best text."""
    is_positive = image_of_text[None, :] == image_ids[:, None]
    best_positive = np.where(is_positive, sim, -np.inf).max(axis=1)
    return ((sim >= best_positive[:, None] - TIE_TOL) & ~is_positive).sum(axis=1)


def recall_at(ranks: np.ndarray, ks=KS) -> dict[str, float]:
    return {f"R@{k}": float(np.mean(ranks < k)) for k in ks}


def retrieval_recalls(text_emb: np.ndarray, image_emb: np.ndarray, image_of_text: np.ndarray,
                      ks=KS, block: int = 2048, return_ranks: bool = False) -> dict:
    """R@k both ways from L2-normalised embeddings, in row blocks of the similarity matrix.

    Returns {"t2i": {"R@1": ...}, "i2t": {...}, "n_texts": .., "n_images": ..}, plus
    "ranks": (text-to-image ranks, image-to-text ranks) when return_ranks is set.
    """
    text_emb = np.asarray(text_emb, dtype=np.float64)  # float32 values, exact in float64
    image_emb = np.asarray(image_emb, dtype=np.float64)
    image_of_text = np.asarray(image_of_text, dtype=np.int64)
    has_text = np.bincount(image_of_text, minlength=len(image_emb)) > 0
    t2i = np.concatenate([
        text_to_image_ranks(text_emb[s:s + block] @ image_emb.T, image_of_text[s:s + block])
        for s in range(0, len(text_emb), block)])
    queried = np.flatnonzero(has_text)  # an image without captions has nothing to find
    i2t = np.concatenate([
        image_to_text_ranks(image_emb[ids] @ text_emb.T, ids, image_of_text)
        for ids in np.array_split(queried, max(1, -(-len(queried) // block)))])
    result = {"t2i": recall_at(t2i, ks), "i2t": recall_at(i2t, ks),
              "n_texts": int(len(text_emb)), "n_images": int(len(image_emb)),
              "n_image_queries": int(len(queried))}
    if return_ranks:
        result["ranks"] = (t2i, i2t)
    return result
