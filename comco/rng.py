"""Seeds: one numpy Generator per image, derived from (dataset seed, image index).

Never the global `random` or `np.random` state: an image's content depends only on
its own seed, so a dataset can be planned, rendered or sharded in any order.
"""

from __future__ import annotations

import numpy as np


def image_seed(dataset_seed: int, index: int, retry: int = 0, stream: int = 0) -> int:
    """A 63-bit seed for one image (and one retry of it); recorded in the scene."""
    hi, lo = np.random.SeedSequence([dataset_seed, index, retry, stream]).generate_state(2, dtype=np.uint32)
    return (int(hi) << 31) + int(lo)


def generator(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))
