"""Caches never serve stale or broken data: the embedding cache survives a probe killed while
writing (issue 16, item 5) and the scratch-training image cache notices re-rendered images
(item 2)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.torch


class TinyModel:
    """A LoadedModel stand-in: 3-d text vectors, counted."""

    identity = "tiny/v1"
    device = "cpu"

    def __init__(self):
        self.texts_seen = []

    def tokenize(self, texts):
        import torch

        self.texts_seen.extend(texts)
        return torch.tensor([[len(t), sum(map(ord, t)) % 97, 1] for t in texts], dtype=torch.float32)

    def encode_text(self, tokens):
        import torch.nn.functional as F

        return F.normalize(tokens, dim=-1)


TEXTS = [f"a cube and {k} cones" for k in range(6)]


def test_a_probe_killed_while_writing_leaves_nothing_the_loader_reads(tmp_path):
    """Kill a process in the middle of its cache write (SIGKILL from inside np.savez);
    the next run must neither crash nor read the half-written file."""
    cache = tmp_path / "cache"
    code = textwrap.dedent(f"""
        import os, signal, sys
        import numpy as np
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_reliability_caches import TinyModel, TEXTS
        from comco.probes.embed import Embedder
        real = np.savez
        def dying(file, **arrays):  # write some bytes of the shard, then die as a kill would
            file.write(b"PK\\x03\\x04" + os.urandom(64)) if hasattr(file, "write") else open(file, "wb").write(b"PK")
            os.kill(os.getpid(), signal.SIGKILL)
        np.savez = dying
        Embedder(TinyModel(), cache_dir={str(cache)!r}).texts(TEXTS)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == -signal.SIGKILL, r.stderr[-2000:]
    left = [p.name for p in cache.rglob("*") if p.is_file()]
    assert left, "the killed writer left its partial file behind, as a real kill does"
    assert not [n for n in left if n.endswith(".npz")], left  # nothing the loader's *.npz pattern picks up

    from comco.probes.embed import Embedder

    m = TinyModel()
    out = Embedder(m, cache_dir=cache).texts(TEXTS)
    assert sorted(m.texts_seen) == sorted(TEXTS) and out.shape == (6, 3)
    # The part is swept once it is clearly not being written any more (an hour old).
    (part,) = [p for p in cache.rglob("*") if p.is_file() and not p.name.endswith(".npz")]
    os.utime(part, (part.stat().st_atime - 7200, part.stat().st_mtime - 7200))
    Embedder(TinyModel(), cache_dir=cache).texts(TEXTS[:1])
    assert not part.exists() and len(list(cache.rglob("*.npz"))) == 1


@pytest.mark.parametrize("damage", ["old-temp-name", "truncated", "garbage", "empty", "wrong-arrays"])
def test_a_broken_cache_entry_is_a_miss_and_is_written_again(tmp_path, damage):
    from comco.probes.embed import Embedder, EmbeddingCache

    cache = tmp_path / "cache"
    first = Embedder(TinyModel(), cache_dir=cache).texts(TEXTS)
    folder = EmbeddingCache(cache, TinyModel.identity, "text").dir
    (good,) = folder.glob("*.npz")
    data = good.read_bytes()
    if damage == "old-temp-name":  # what the code before the fix left: <uuid>.tmp.npz, cut short
        (folder / "0123abcd.tmp.npz").write_bytes(data[: len(data) // 2])
        good.unlink()
    elif damage == "truncated":
        good.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        good.write_bytes(os.urandom(len(data)))
    elif damage == "empty":
        good.write_bytes(b"")
    else:
        np.savez(good, something=np.zeros(3))
    m = TinyModel()
    again = Embedder(m, cache_dir=cache).texts(TEXTS)
    assert sorted(m.texts_seen) == sorted(TEXTS)  # encoded again, not read from the broken entry
    assert np.allclose(again, first)
    m3 = TinyModel()
    Embedder(m3, cache_dir=cache).texts(TEXTS)
    assert m3.texts_seen == []  # and stored again: the third run is served from the cache


def test_images_rendered_again_in_place_are_not_served_from_the_old_cache(tmp_path):
    from PIL import Image

    from comco.train.images import CachedImages

    paths = [tmp_path / "images" / f"{i:06d}.png" for i in range(3)]
    paths[0].parent.mkdir()
    for p in paths:
        Image.new("RGB", (32, 32), (200, 10, 10)).save(p)
    first = CachedImages.build(paths, 16, tmp_path / "cache").array.copy()
    # Render again in place: the same names and the same file sizes (one flat colour), new pixels,
    # written a while later (as a render is).
    for p in paths:
        stat = p.stat()
        Image.new("RGB", (32, 32), (10, 10, 200)).save(p)
        assert p.stat().st_size == stat.st_size
        os.utime(p, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    second = CachedImages.build(paths, 16, tmp_path / "cache").array
    assert first[0, 0, 0].tolist() == [200, 10, 10]
    assert second[0, 0, 0].tolist() == [10, 10, 200]
    # Unchanged files still hit the cache (the cached array is what is returned).
    cached = CachedImages.build(paths, 16, tmp_path / "cache").array
    assert np.array_equal(cached, second) and len(list((tmp_path / "cache").glob("*.npy"))) == 2


def test_stale_vectors_of_another_width_are_encoded_again(tmp_path):
    """Shards of another width under this model's identity (stale entries, fewer rows than the
    model's own) are never mixed with its vectors, even when they sort first."""
    from comco.probes.embed import Embedder, EmbeddingCache, text_key

    cache = tmp_path / "cache"
    first = Embedder(TinyModel(), cache_dir=cache).texts(TEXTS)
    folder = EmbeddingCache(cache, TinyModel.identity, "text").dir
    extra = ["a ball", "a cone and a ball"]
    stale = TEXTS[:2] + extra  # two texts the good shard holds too, two only the stale one has
    np.savez(folder / "0000-stale.npz", keys=np.asarray([text_key(t) for t in stale]), emb=np.ones((4, 5)))
    m = TinyModel()
    out = Embedder(m, cache_dir=cache).texts(TEXTS + extra)
    assert out.shape == (8, 3) and np.allclose(out[:6], first)
    assert sorted(m.texts_seen) == sorted(extra)  # the stale ones were encoded again
    m2 = TinyModel()
    assert np.allclose(Embedder(m2, cache_dir=cache).texts(extra), out[6:]) and m2.texts_seen == []
