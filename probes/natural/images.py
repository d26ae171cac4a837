"""Unreadable images: found, counted and taken out of a split, never silently.

A cheap header check runs before embedding (a file that is not an image at all).
An image whose header reads but whose body does not decode (a truncated JPEG) makes
the embedding batch fail; only then each image is decoded alone to find the culprits.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import numpy as np

from comco.probes.natural.split import NaturalSplit

UNREADABLE = "unreadable_image"


def header_problem(path: Path) -> str | None:
    from PIL import Image

    try:
        with Image.open(path) as im:
            im.size  # noqa: B018  (opening parses the header; nothing is decoded)
    except (OSError, SyntaxError, ValueError) as err:
        return f"{type(err).__name__}: {err}"
    return None


def decode_problem(path: Path, preprocess: Callable) -> str | None:
    from PIL import Image

    try:
        with Image.open(path) as im:
            preprocess(im.convert("RGB"))
    except (OSError, SyntaxError, ValueError) as err:
        return f"{type(err).__name__}: {err}"
    return None


def without_images(split: NaturalSplit, problems: dict[Path, str]) -> NaturalSplit:
    """A copy of split without the given images, each counted as unreadable."""
    if not problems:
        return split
    kept = NaturalSplit(split.benchmark, split.split, split.root, [],
                        split.skipped.copy(), {k: list(v) for k, v in split.skipped_examples.items()})
    for item in split.items:
        if item.image in problems:
            kept.skip(UNREADABLE, f"{item.image} ({problems[item.image]})")
        else:
            kept.items.append(item)
    return kept


def drop_unreadable_headers(split: NaturalSplit, workers: int = 8) -> NaturalSplit:
    # Threads: opening a file is mostly waiting on the disk (a network disk above all).
    paths = [item.image for item in split.items]
    with ThreadPoolExecutor(workers) as pool:
        found = pool.map(header_problem, paths)
        problems = {path: problem for path, problem in zip(paths, found) if problem}
    return without_images(split, problems)


def embed_images(embedder, split: NaturalSplit) -> tuple[np.ndarray, NaturalSplit]:
    """Image embeddings of a split; a body that fails to decode is found, counted and left out."""
    paths = [item.image for item in split.items]
    try:
        return embedder.images(paths), split
    except (OSError, SyntaxError, ValueError):
        problems = {p: why for p in paths if (why := decode_problem(p, embedder.m.preprocess))}
        if not problems:
            raise  # not an image problem: keep the traceback
        split = without_images(split, problems)
        return embedder.images([item.image for item in split.items]), split
