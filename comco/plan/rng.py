"""Seeds: one numpy Generator stream per image, derived from (dataset seed, image index).

Never the global `random` or `np.random` state: an image's content depends only on
its own seed, so a dataset can be planned, rendered or sharded in any order.

Both steps are cheap on purpose. numpy's SeedSequence costs about 18 us and a fresh
PCG64 about as much again, per image, in a plan of 100,000; so seeds are hashed
with BLAKE2b instead and one PCG64 per planner is re-seeded by
setting its state (3 us). The recorded seed alone still reproduces the stream:
`generator(seed)` gives the same numbers as `Reseedable().seed(seed)`.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np

from comco.errors import UserError

SEED_MAX = 2**63 - 1  # image seeds pack the dataset seed as a signed 64-bit number; numpy takes no negatives


def check_seed(seed: int, flag: str = "--seed") -> None:
    """The seeds comco takes everywhere (plan, probe, train): 0..2**63-1."""
    if not 0 <= seed <= SEED_MAX:
        raise UserError(f"{flag} {seed}: use a whole number in 0..{SEED_MAX} (2**63-1)")


def image_seed(dataset_seed: int, index: int, retry: int = 0) -> int:
    """A 63-bit seed for one image (one retry of it); recorded in the scene."""
    key = struct.pack("<3q", dataset_seed, index, retry)
    return int.from_bytes(hashlib.blake2b(key, digest_size=8, person=b"comco-image").digest(), "little") >> 1


def pair_seed(seed: int, factor: int) -> int:
    """The seed of the stream that picks which objects a pair variant changes: derived from the
    base attempt's own seed and the factor's number, so one factor's picks never move another's
    (and the base scene's own stream stays as it is without --pairs)."""
    key = struct.pack("<Qq", seed, factor)
    return int.from_bytes(hashlib.blake2b(key, digest_size=8, person=b"comco-pairs").digest(), "little") >> 1


def _pcg_state(seed: int) -> dict:
    d = hashlib.blake2b(struct.pack("<Q", seed), digest_size=32, person=b"comco-pcg64").digest()
    return {"bit_generator": "PCG64",
            "state": {"state": int.from_bytes(d[:16], "little"), "inc": int.from_bytes(d[16:], "little") | 1},
            "has_uint32": 0, "uinteger": 0}


class Reseedable:
    """One Generator whose stream is replaced per image; valid until the next `seed` call."""

    def __init__(self) -> None:
        self._bits = np.random.PCG64(0)
        self._gen = np.random.Generator(self._bits)

    def seed(self, seed: int) -> np.random.Generator:
        self._bits.state = _pcg_state(seed)
        return self._gen


def generator(seed: int) -> np.random.Generator:
    """A fresh Generator with the stream of `seed` (the same numbers the planner drew)."""
    return Reseedable().seed(seed)


def factor_seed(seed: int, factor: str) -> int:
    """The seed of a realism factor's own stream (comco/plan/worlds.py, ...): derived from the
    image's seed and the factor's name, so a factor's draws never move the scene's (which
    stay as they were without it) nor another factor's."""
    key = struct.pack("<Q", seed) + factor.encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8, person=b"comco-factor").digest(), "little") >> 1
