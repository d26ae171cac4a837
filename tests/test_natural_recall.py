"""Recall on planted similarity matrices equals a brute-force computation, for both protocols."""

from __future__ import annotations

import numpy as np
import pytest
from support.natural import brute_force

from comco.probes.natural.recall import (
    image_to_text_ranks,
    retrieval_recalls,
    select_captions,
    text_to_image_ranks,
)


def planted(rng, n_images, captions_per_image):
    """Normalised embeddings where each caption is its image plus noise; some ties planted."""
    dim = 16
    images = rng.normal(size=(n_images, dim))
    images /= np.linalg.norm(images, axis=1, keepdims=True)
    captions = [tuple(f"img{i} cap{j}" for j in range(n)) for i, n in enumerate(captions_per_image)]
    texts = {}
    for i, caps in enumerate(captions):
        for cap in caps:
            v = images[i] + rng.normal(scale=1.2, size=dim)
            texts[cap] = v / np.linalg.norm(v)
    images[3] = images[2]  # two identical images: ties that must count against the model
    return captions, texts, images


@pytest.mark.parametrize("protocol", ["first5", "all"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recall_matches_brute_force(protocol, seed):
    rng = np.random.default_rng(seed)
    per_image = rng.integers(1, 8, size=14)  # some images with more than five captions
    captions, text_vectors, images = planted(rng, 14, per_image)
    texts, owners = select_captions(captions, protocol)
    text_emb = np.stack([text_vectors[t] for t in texts])
    got = retrieval_recalls(text_emb, images, owners, block=5)  # blocks smaller than the data
    want = brute_force(text_emb @ images.T, owners)
    for direction in ("t2i", "i2t"):
        for key, value in want[direction].items():
            assert got[direction][key] == pytest.approx(value), (direction, key)
    assert got["n_texts"] == len(texts)


def test_protocols_select_captions():
    captions = [tuple(f"a{j}" for j in range(7)), ("b0", "b1")]
    first5, owners5 = select_captions(captions, "first5")
    everything, owners_all = select_captions(captions, "all")
    assert first5 == ["a0", "a1", "a2", "a3", "a4", "b0", "b1"] and owners5.tolist() == [0] * 5 + [1] * 2
    assert len(everything) == 9 and owners_all.tolist() == [0] * 7 + [1] * 2
    with pytest.raises(ValueError):
        select_captions(captions, "some")


def test_i2t_hit_when_any_caption_is_in_top_k():
    # image 0 owns texts 0 and 1; text 1 is its best; text 2 (image 1) is above text 0
    sim = np.array([[0.1, 0.0], [0.9, 0.0], [0.5, 0.8]])
    owners = np.array([0, 0, 1])
    ranks = image_to_text_ranks(sim.T, np.array([0, 1]), owners)
    assert ranks.tolist() == [0, 0]
    assert text_to_image_ranks(sim, owners).tolist() == [0, 0, 0]


def test_ties_count_against_the_model():
    sim = np.ones((2, 2))  # a collapsed model: every score equal
    owners = np.array([0, 1])
    assert text_to_image_ranks(sim, owners).tolist() == [1, 1]
    result = retrieval_recalls(np.ones((2, 1)), np.ones((2, 1)), owners)
    assert result["t2i"]["R@1"] == 0.0 and result["i2t"]["R@1"] == 0.0


def test_recall_changes_when_a_positive_is_pushed_down():
    images = np.eye(3)
    texts = np.eye(3)
    owners = np.array([0, 1, 2])
    assert retrieval_recalls(texts, images, owners)["t2i"]["R@1"] == 1.0
    texts_wrong = texts[[1, 0, 2]]  # texts 0 and 1 now point at each other's images
    assert retrieval_recalls(texts_wrong, images, owners)["t2i"]["R@1"] == pytest.approx(1 / 3)
