"""The embedding engine: each distinct input encoded once, a second run served from the cache."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.torch


class CountingModel:
    """A LoadedModel stand-in that records every text and image it encodes."""

    identity = "counting/v1"
    device = "cpu"

    def __init__(self):
        self.texts_seen, self.images_seen = [], 0

    def preprocess(self, im):
        import torch

        return torch.tensor(np.asarray(im, dtype=np.float32).mean((0, 1)) / 255)

    def tokenize(self, texts):
        import torch

        self.texts_seen.extend(texts)
        return torch.tensor([[len(t), sum(map(ord, t)) % 97, 1] for t in texts], dtype=torch.float32)

    def encode_text(self, tokens):
        import torch.nn.functional as F

        return F.normalize(tokens, dim=-1)

    def encode_image(self, batch):
        import torch.nn.functional as F

        self.images_seen += len(batch)
        return F.normalize(batch + 0.01, dim=-1)


def _images(folder, colors):
    from PIL import Image

    paths = []
    for i, c in enumerate(colors):
        p = folder / f"{i}.png"
        Image.new("RGB", (8, 8), c).save(p)
        paths.append(p)
    return paths


def test_identical_inputs_are_encoded_once_and_rows_stay_aligned(tmp_path):
    from comco.probes.embed import Embedder

    m = CountingModel()
    emb = Embedder(m, cache_dir=None, batch_size=2)
    out = emb.texts(["a cube", "a cone", "a cube", "a sphere and a cube", "a cone"])
    assert sorted(m.texts_seen) == ["a cone", "a cube", "a sphere and a cube"]
    assert np.array_equal(out[0], out[2]) and np.array_equal(out[1], out[4])
    assert not np.allclose(out[0], out[3])
    paths = _images(tmp_path, [(255, 0, 0), (0, 255, 0), (255, 0, 0)])  # 0 and 2: same bytes
    img = emb.images(paths + paths[:1])
    assert m.images_seen == 2 and np.array_equal(img[0], img[2]) and np.array_equal(img[0], img[3])


def test_second_run_is_served_from_the_cache(tmp_path):
    from comco.probes.embed import Embedder

    texts = [f"a cube and {k} cones" for k in range(20)]
    paths = _images(tmp_path, [(10 * i, 0, 0) for i in range(5)])
    m1 = CountingModel()
    e1 = Embedder(m1, cache_dir=tmp_path / "cache", batch_size=4)
    t1, i1 = e1.texts(texts), e1.images(paths)
    assert e1.stats == {"text_hits": 0, "text_encoded": 20, "image_hits": 0, "image_encoded": 5}

    m2 = CountingModel()
    e2 = Embedder(m2, cache_dir=tmp_path / "cache", batch_size=4)
    t2, i2 = e2.texts(texts[::-1]), e2.images(paths)
    assert m2.texts_seen == [] and m2.images_seen == 0
    assert e2.stats["text_hits"] == 20 and e2.stats["image_hits"] == 5
    assert np.array_equal(t2[::-1], t1) and np.array_equal(i2, i1)

    other = CountingModel()
    other.identity = "counting/v2"  # another model never reads this one's vectors
    Embedder(other, cache_dir=tmp_path / "cache").texts(texts[:3])
    assert len(other.texts_seen) == 3
