"""Issue 16 item 20: "ties count against the model" must not depend on float32 rounding.

In float32, a text scored against two identical images can get two different scores,
depending on where the rows sit in the matrix (BLAS kernels); the positive then wins or
loses the tie at random. With float64 similarities and a tie tolerance it always loses.
"""

import numpy as np

from comco.probes.natural.recall import retrieval_recalls


def _unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_a_duplicate_of_the_positive_image_always_ranks_above_it():
    rng = np.random.default_rng(0)
    for d, n in ((881, 1911), (946, 2715), (166, 2890), (291, 476)):  # shapes where float32 disagrees
        images = _unit(rng, n, d)
        half = n // 2
        images[half:2 * half] = images[:half]  # image half+i is image i again
        queries = np.arange(0, half, 7)
        texts = images[queries].copy()  # each text is exactly its image's embedding ...
        owners = queries + half  # ... and belongs to the later copy
        for block in (2048, 5):
            result = retrieval_recalls(texts, images, owners, block=block, return_ranks=True)
            t2i, _ = result["ranks"]
            # the earlier copy scores exactly as high: a tie, counted against the model, every time
            assert (t2i == 1).all(), (d, n, block, np.bincount(t2i)[:3])
            assert result["t2i"]["R@1"] == 0.0


def test_a_duplicate_negative_caption_always_ranks_above_the_positive():
    rng = np.random.default_rng(1)
    d, n = 881, 600
    images = _unit(rng, n, d)
    texts = np.concatenate([images, images])  # text i (of image i) and text n+i (of image (i+1) % n)
    owners = np.concatenate([np.arange(n), (np.arange(n) + 1) % n])
    _, i2t = retrieval_recalls(texts, images, owners, return_ranks=True)["ranks"]
    # image i: its own text ties with an identical text of another image -> rank 1, never 0
    assert (i2t == 1).all(), np.bincount(i2t)[:3]


def test_clear_winners_are_not_called_ties():
    rng = np.random.default_rng(2)
    images = _unit(rng, 300, 64)
    result = retrieval_recalls(images.copy(), images, np.arange(300))
    assert result["t2i"]["R@1"] == 1.0 and result["i2t"]["R@1"] == 1.0
