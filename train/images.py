"""Images for training: decoded once into a uint8 cache at the training resolution
(small scratch models, where decoding 512 px PNGs would dominate the step), or read
from files through the model's transform in DataLoader workers (fine-tuning)."""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np
import torch
from PIL import Image

from comco.errors import UserError
from comco.train.task import Batch

OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


def pil_steps(resolution: int):
    """The PIL part of open_clip's eval transform (resize, centre crop, RGB): the cache
    stores its output so training sees exactly what `ckpt:` loading will feed the model."""
    import open_clip

    transform = open_clip.image_transform(resolution, is_train=False, mean=OPENAI_MEAN, std=OPENAI_STD)
    steps = transform.transforms[:-2]  # drop ToTensor and Normalize
    assert type(transform.transforms[-1]).__name__ == "Normalize"

    def apply(image: Image.Image) -> Image.Image:
        for step in steps:
            image = step(image)
        return image

    return apply


def read_image(path: Path, transform: Callable):
    """transform(the PIL image at `path`); an image that cannot be decoded (past the spot
    check of a long list) is a UserError naming it, not a traceback from a worker."""
    try:
        with Image.open(path) as image:
            return transform(image)
    except (OSError, SyntaxError, ValueError) as exc:  # PIL's ways of failing on bad bytes
        raise UserError(f"image {path} cannot be decoded ({exc.__class__.__name__}); replace it or leave it "
                        "out of --data") from None


class CachedImages:
    """All images as one (N, S, S, 3) uint8 array; batches are normalised float tensors."""

    def __init__(self, array: np.ndarray, mean=OPENAI_MEAN, std=OPENAI_STD):
        self.array = array
        self.mean = torch.tensor(mean).view(1, 3, 1, 1)
        self.std = torch.tensor(std).view(1, 3, 1, 1)

    def __len__(self) -> int:
        return len(self.array)

    def __call__(self, indices: list[int]) -> torch.Tensor:
        pixels = torch.from_numpy(self.array[indices]).permute(0, 3, 1, 2).float().div_(255)
        return (pixels - self.mean) / self.std

    @classmethod
    def build(cls, paths: list[Path], resolution: int, cache_dir: Path, threads: int = 4) -> "CachedImages":
        key = hashlib.sha256("\n".join([str(resolution), *_identities(paths)]).encode()).hexdigest()[:16]
        cache = cache_dir / f"images-{resolution}px-{key}.npy"
        if cache.exists():
            return cls(np.load(cache, mmap_mode=None))
        steps = pil_steps(resolution)

        def load(path: Path) -> np.ndarray:
            return np.asarray(read_image(path, steps), dtype=np.uint8)

        with ThreadPoolExecutor(max(1, threads)) as pool:  # PIL decodes without the GIL
            array = np.stack(list(pool.map(load, paths)))
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp.npy")  # DDP ranks build it side by side
        np.save(tmp, array)
        tmp.replace(cache)
        return cls(array)


def _identities(paths: list[Path]) -> list[str]:
    """Each image's path with its size and modification time: a dataset rendered again in
    place (new files renamed over the old ones) gets another cache key, never old pixels."""
    out = []
    for path in paths:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise UserError(f"image {path} is missing; render the dataset (again) with `comco render`") from None
        out.append(f"{path}\t{st.st_size}\t{st.st_mtime_ns}")
    return out


class FileImages:
    """Images read from disk through a transform (PIL -> tensor), e.g. the model's preprocess."""

    def __init__(self, paths: list[Path], transform: Callable):
        self.paths, self.transform = paths, transform

    def __len__(self) -> int:
        return len(self.paths)

    def __call__(self, indices: list[int]) -> torch.Tensor:
        tensors = []
        for i in indices:
            tensors.append(read_image(self.paths[i], lambda image: self.transform(image.convert("RGB"))))
        return torch.stack(tensors)


class MicroBatches(torch.utils.data.Dataset):
    """Item (epoch, indices) -> Batch; texts are drawn from per-sample generators, so a
    worker process produces the same batch the main process would."""

    def __init__(self, images: Callable[[list[int]], torch.Tensor],
                 texts: Callable[[int, list[int]], dict[str, torch.Tensor]]):
        self.images, self.texts = images, texts

    def __getitem__(self, item: tuple[int, list[int]]) -> Batch:
        epoch, indices = item
        return Batch({"image": self.images(indices), **self.texts(epoch, indices)}, len(indices))


def iterate(dataset: MicroBatches, plan: Iterable[tuple[int, list[int]]], workers: int) -> Iterator[Batch]:
    """Batches in plan order; with workers > 0 they are prepared ahead in subprocesses."""
    if workers <= 0:
        return (dataset[item] for item in plan)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=None, sampler=_Plan(plan), num_workers=workers, prefetch_factor=4,
        collate_fn=_identity)
    return iter(loader)


class _Plan(torch.utils.data.Sampler):
    def __init__(self, plan):
        self.plan = plan

    def __iter__(self):
        return iter(self.plan)


def _identity(batch):
    return batch
