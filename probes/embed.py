"""Embedding engine: batched, inference_mode, each distinct input encoded once, cached on disk.

The cache key is (model identity, input hash): text hashes its characters, an image
hashes its file bytes, so a renamed file still hits and a re-rendered one misses.
Entries live in npz shards under CACHE/<identity>/<kind>/; a run appends one shard,
written atomically, so an interrupted run never corrupts the cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

DEFAULT_CACHE = Path(os.environ.get("COMCO_CACHE", "~/.cache/comco")).expanduser() / "embeddings"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def file_key(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:32]


class EmbeddingCache:
    """Key -> vector store for one model identity and one input kind."""

    def __init__(self, root: Path, identity: str, kind: str):
        safe = re.sub(r"[^A-Za-z0-9._+-]+", "_", identity)
        self.dir = Path(root) / safe / kind
        self._index: dict[str, tuple[int, int]] | None = None
        self._shards: list[np.ndarray] = []

    def _load(self) -> dict[str, tuple[int, int]]:
        if self._index is None:
            self._index = {}
            _sweep_partial(self.dir)
            shards = []
            for f in sorted(self.dir.glob("*.npz")) if self.dir.is_dir() else []:
                if f.name.endswith(".tmp.npz"):  # an older comco's temp file, cut by a kill
                    continue
                shard = _read_shard(f)
                if shard is None:
                    try:  # complete shards are renamed into place, so this one is broken for good
                        f.unlink()
                    except OSError:
                        pass
                    continue
                shards.append(shard)
            # Vectors of another width are stale (not this model's): the width most rows have wins,
            # the others are misses, encoded and stored again.
            rows: dict[int, int] = {}
            for _, emb in shards:
                rows[emb.shape[1]] = rows.get(emb.shape[1], 0) + len(emb)
            width = max(rows, key=rows.get) if rows else None
            for keys, emb in shards:
                if emb.shape[1] != width:
                    continue
                self._shards.append(emb)
                s = len(self._shards) - 1
                self._index.update((str(k), (s, r)) for r, k in enumerate(keys))
        return self._index

    def lookup(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        index = self._load()
        return {k: self._shards[index[k][0]][index[k][1]] for k in keys if k in index}

    def store(self, keys: Sequence[str], emb: np.ndarray) -> None:
        if not len(keys):
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        name = uuid.uuid4().hex
        # The temp name must not match the loader's *.npz (np.savez given a path would add .npz).
        tmp = self.dir / f"{name}.npz.part"
        try:
            with open(tmp, "wb") as f:
                np.savez(f, keys=np.asarray(keys), emb=emb.astype(np.float32))
            os.replace(tmp, self.dir / f"{name}.npz")
        finally:
            tmp.unlink(missing_ok=True)
        index = self._load()
        self._shards.append(emb)
        s = len(self._shards) - 1
        index.update((k, (s, r)) for r, k in enumerate(keys))


PARTIAL_AGE_S = 3600  # a shard being written is renamed within seconds; older parts are a kill's


def _sweep_partial(folder: Path) -> None:
    """Remove temp files that killed runs left (they are never read, but take space)."""
    import time

    if not folder.is_dir():
        return
    for f in [*folder.glob("*.npz.part"), *folder.glob("*.tmp.npz")]:
        try:
            if time.time() - f.stat().st_mtime > PARTIAL_AGE_S:
                f.unlink()
        except OSError:
            pass


def _read_shard(path: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """(keys, embeddings) of one cache shard; None if it cannot be read whole."""
    try:
        with np.load(path, allow_pickle=False) as z:
            keys, emb = np.asarray(z["keys"]), np.asarray(z["emb"], dtype=np.float32)
    except Exception:  # truncated, scrambled, not an npz, missing arrays: all just a miss
        return None
    if emb.ndim != 2 or keys.ndim != 1 or len(keys) != len(emb) or not emb.shape[1]:
        return None
    return keys, emb


@contextmanager
def named(embedder, what: str):
    """Name what the embedding passes inside are of, for their progress bars ("captions (template
    and)" -> "TOR: embedding 616 captions (template and)"). Any embedder takes it (test fakes too)."""
    before = getattr(embedder, "what", None)
    embedder.what = what
    try:
        yield embedder
    finally:
        embedder.what = before


class Embedder:
    """Normalised text and image embeddings of one loaded model, as float32 numpy arrays.

    `task` (the probe, "TOR") and `what` (see `named`) make each pass's progress label."""

    task = ""
    what: str | None = None

    def __init__(self, loaded, cache_dir: Path | None = DEFAULT_CACHE, batch_size: int = 64,
                 progress: Callable[[str, int], Callable[[int], None]] | None = None, workers: int = 2,
                 remember: bool = False):
        self.m = loaded
        # remember: keep every embedding in memory too (a probe split by a factor embeds each cell again)
        self.memory = {"text": {}, "image": {}} if remember else None
        self.batch_size = batch_size
        self.workers = workers
        self.progress = progress  # progress(label, total) -> advance(n)
        self.caches = {k: EmbeddingCache(cache_dir, loaded.identity, k) for k in ("text", "image")} \
            if cache_dir is not None else None
        self.stats = {"text_hits": 0, "text_encoded": 0, "image_hits": 0, "image_encoded": 0}

    # -- public

    def texts(self, texts: Sequence[str]) -> np.ndarray:
        keys = [text_key(t) for t in texts]
        return self._embed("text", keys, dict(zip(keys, texts)), self._encode_texts)

    def images(self, paths: Sequence[Path]) -> np.ndarray:
        if self.workers > 1 and len(paths) > 8:
            with ThreadPoolExecutor(self.workers) as pool:
                keys = list(pool.map(file_key, paths))
        else:
            keys = [file_key(p) for p in paths]
        return self._embed("image", keys, dict(zip(keys, paths)), self._encode_images)

    # -- internals

    def _embed(self, kind: str, keys: list[str], source: dict, encode) -> np.ndarray:
        unique = list(dict.fromkeys(keys))
        found = {k: self.memory[kind][k] for k in unique if k in self.memory[kind]} if self.memory else {}
        rest = [k for k in unique if k not in found]
        found.update(self.caches[kind].lookup(rest) if self.caches and rest else {})
        todo = [k for k in unique if k not in found]
        self.stats[f"{kind}_hits"] += len(unique) - len(todo)
        self.stats[f"{kind}_encoded"] += len(todo)
        if todo:
            advance = self.progress(self.label(kind, len(todo)), len(todo), f"{kind}s") if self.progress else None
            new = encode([source[k] for k in todo], advance)
            stale = [k for k, v in found.items() if new.ndim == 2 and v.shape[-1] != new.shape[1]]
            if stale:  # cached vectors of another width are not this model's: encode them too
                todo += stale
                new = np.concatenate([new, encode([source[k] for k in stale], None)])
                self.stats[f"{kind}_hits"] -= len(stale)
                self.stats[f"{kind}_encoded"] += len(stale)
            if self.caches:
                self.caches[kind].store(todo, new)
            found.update(zip(todo, new))
        if self.memory is not None:
            self.memory[kind].update(found)
        if not keys:
            return np.zeros((0, 0), np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    @property
    def resolution(self) -> np.dtype:
        """The float type the embeddings were computed in, whose rounding a score carries
        (comco.probes.retrieval.near_ties): float16 under a GPU's autocast, else float32."""
        return np.dtype(np.float16 if str(self.m.device).startswith("cuda") else np.float32)

    def label(self, kind: str, count: int) -> str:
        """"TOR: embedding 616 captions (template and)": the task, the count and what they are."""
        return f"{self.task + ': ' if self.task else ''}embedding {count} {self.what or kind + 's'}"

    def _context(self):
        import torch

        if str(self.m.device).startswith("cuda"):
            return torch.autocast("cuda", dtype=torch.float16)
        return nullcontext()  # fp32 on CPU: autocast there is slower and changes numbers

    def _encode_texts(self, texts: list[str], advance) -> np.ndarray:
        import torch

        # Similar lengths share a batch, so models that cut padding (comco.models.factory) cut more.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), 0), np.float32)
        with torch.inference_mode(), self._context():
            for i in range(0, len(order), self.batch_size):
                idx = order[i:i + self.batch_size]
                f = self.m.encode_text(self.m.tokenize([texts[j] for j in idx])).float().cpu().numpy()
                if out.shape[1] == 0:
                    out = np.empty((len(texts), f.shape[1]), np.float32)
                out[idx] = f
                if advance:
                    advance(len(idx))
        return out

    def _encode_images(self, paths: list[Path], advance) -> np.ndarray:
        import torch

        out = []
        batches = [paths[i:i + self.batch_size] for i in range(0, len(paths), self.batch_size)]
        with ThreadPoolExecutor(max(1, self.workers)) as pool, torch.inference_mode(), self._context():
            # Decode the next batch in threads while the model encodes this one.
            pending = pool.submit(self._load_batch, batches[0])
            for j in range(len(batches)):
                x = pending.result()
                if j + 1 < len(batches):
                    pending = pool.submit(self._load_batch, batches[j + 1])
                out.append(self.m.encode_image(x).float().cpu().numpy())
                if advance:
                    advance(len(batches[j]))
        return np.concatenate(out)

    def _load_batch(self, paths: list[Path]):
        import torch

        return torch.stack([load_image_tensor(p, self.m.preprocess) for p in paths])


def load_image_tensor(path: Path, preprocess):
    from PIL import Image

    with Image.open(path) as im:
        return preprocess(im.convert("RGB"))
