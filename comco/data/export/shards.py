"""A tar shard writer bounded by bytes and by sample count (WebDataset shards).

A sample is a key and its members (`KEY.png`, `KEY.txt`, `KEY.json`); its members are
written one after another, never split over two shards, which is what WebDataset readers
need to group them again. A shard is closed before the sample that would take it past
`max_bytes` (counted as the finished file: 512-byte headers, data padded to 512, the
two end blocks and tarfile's padding to a 10 KiB record) or past `max_count` samples.
Headers are fixed (mode 0644, owner 0, mtime 0): the same samples give the same bytes.
"""

from __future__ import annotations

import io
import tarfile
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

from comco.errors import UserError
from comco.io import atomic_write

BLOCK = tarfile.BLOCKSIZE
RECORD = tarfile.RECORDSIZE
MIN_SHARD_BYTES = RECORD  # the smallest tar file there is


def member_bytes(size: int) -> int:
    """Bytes one member takes in a tar: its header and its data padded to a block."""
    return BLOCK + -(-size // BLOCK) * BLOCK


def closed_size(payload: int) -> int:
    """The file size of a tar whose members take `payload` bytes, once closed."""
    return -(-(payload + 2 * BLOCK) // RECORD) * RECORD


class ShardWriter:
    """Write samples into `folder/name(0)`, `folder/name(1)`, ...; each shard atomically.

    Args:
        folder: where the shards go.
        name: shard index -> file name ("00000.tar", "0.tar").
        max_bytes: the most bytes one shard file may take.
        max_count: the most samples in one shard.
    """

    def __init__(self, folder: Path, name: Callable[[int], str], max_bytes: int, max_count: int):
        if max_bytes < MIN_SHARD_BYTES:
            raise UserError(f"--shard-size {max_bytes} bytes is too small; give at least {MIN_SHARD_BYTES}")
        if max_count < 1:
            raise UserError(f"--shard-count {max_count}: at least 1 sample per shard")
        self.folder, self.name, self.max_bytes, self.max_count = Path(folder), name, max_bytes, max_count
        self.counts: list[int] = []  # samples per finished or open shard
        self._stack: ExitStack | None = None
        self._tar: tarfile.TarFile | None = None
        self._payload = 0

    def write(self, key: str, members: dict[str, bytes]) -> None:
        """One sample: extension ("png", "txt", "json") -> content."""
        size = sum(member_bytes(len(data)) for data in members.values())
        if closed_size(size) > self.max_bytes:
            raise UserError(f"sample {key} takes {closed_size(size):,} bytes in a shard, more than "
                            f"--shard-size {self.max_bytes:,}; give a larger --shard-size")
        if self._tar is None or self.counts[-1] >= self.max_count or \
                closed_size(self._payload + size) > self.max_bytes:
            self._open()
        for ext, data in members.items():
            info = tarfile.TarInfo(f"{key}.{ext}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            self._tar.addfile(info, io.BytesIO(data))
        self._tar.members.clear()  # tarfile keeps every header it wrote: memory would grow with the shard
        self._payload += size
        self.counts[-1] += 1

    def _open(self) -> None:
        self._finish()
        self._stack = ExitStack()
        f = self._stack.enter_context(atomic_write(self.folder / self.name(len(self.counts)), "wb"))
        self._tar = self._stack.enter_context(tarfile.open(fileobj=f, mode="w", format=tarfile.USTAR_FORMAT))
        self._payload = 0
        self.counts.append(0)

    def _finish(self) -> None:
        if self._stack is not None:
            self._stack.close()  # the tar's end blocks, then the rename into place
        self._stack = self._tar = None

    def close(self) -> list[int]:
        """Finish the last shard; returns the samples per shard."""
        self._finish()
        return self.counts

    def abort(self) -> None:
        """Drop the open shard (its temporary file goes)."""
        if self._stack is not None:
            self._stack.__exit__(RuntimeError, RuntimeError("export aborted"), None)
        self._stack = self._tar = None
