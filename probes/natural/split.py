"""One evaluation split of a natural benchmark: images, each with its captions.

Loaders only read annotation files and check that images exist; decoding happens
while embedding. Everything a loader leaves out (an image file that is missing, an
image without captions) is counted in `skipped` so that every report can say so:
nothing is dropped silently.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from comco.errors import UserError


@dataclass(frozen=True)
class ImageCaptions:
    image: Path
    captions: tuple[str, ...]


@dataclass
class NaturalSplit:
    benchmark: str
    split: str
    root: Path
    items: list[ImageCaptions]
    skipped: Counter = field(default_factory=Counter)
    skipped_examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def n_images(self) -> int:
        return len(self.items)

    @property
    def n_captions(self) -> int:
        return sum(len(item.captions) for item in self.items)

    def skip(self, reason: str, what: str) -> None:
        """Count one left-out entry; keep the first few names for the report."""
        self.skipped[reason] += 1
        examples = self.skipped_examples.setdefault(reason, [])
        if len(examples) < 5:
            examples.append(what)

    def add(self, image: Path, captions: list[str]) -> None:
        """Add an image if its file exists and it has a caption; count it otherwise."""
        captions = [c.strip() for c in captions if c and c.strip()]
        if not captions:
            self.skip("no_caption", image.name)
        elif not image.is_file():
            self.skip("missing_image", str(image))
        else:
            self.items.append(ImageCaptions(image, tuple(captions)))

    def summary(self) -> dict:
        return {
            "benchmark": self.benchmark,
            "split": self.split,
            "root": str(self.root),
            "n_images": self.n_images,
            "n_captions": self.n_captions,
            "skipped": dict(self.skipped),
            "skipped_examples": self.skipped_examples,
        }


def require_file(path: Path, benchmark: str, layout: str) -> Path:
    """Return path if it is a file, else stop with the file named and the layout expected."""
    if not path.is_file():
        raise UserError(f"{benchmark}: missing file {path}; expected layout: {layout}")
    return path


def require_dir(path: Path, benchmark: str, layout: str) -> Path:
    if not path.is_dir():
        raise UserError(f"{benchmark}: missing folder {path}; expected layout: {layout}")
    return path


def first_existing(candidates: list[Path], benchmark: str, layout: str, folder: bool = False) -> Path:
    """The first candidate that exists; when none does, name the first (canonical) one."""
    for path in candidates:
        if (path.is_dir() if folder else path.is_file()):
            return path
    check = require_dir if folder else require_file
    return check(candidates[0], benchmark, layout)


def text_lines(path: Path, benchmark: str, newline: str | None = None) -> Iterator[str]:
    """The lines of a UTF-8 text file, as open() gives them; a file in another encoding (Latin-1
    captions) is a UserError naming it and the first byte that is not UTF-8."""
    try:
        with path.open(encoding="utf-8", newline=newline) as f:
            yield from f
    except UnicodeDecodeError as err:
        byte = err.object[err.start:err.start + 1].hex()
        raise UserError(f"{benchmark}: {path} is not UTF-8 text (it holds the byte 0x{byte}: Latin-1?); "
                        "save it as UTF-8, as the benchmark ships it") from None


def read_json(path: Path, benchmark: str):
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{benchmark}: {path} is not valid JSON ({err})") from None


def field_of(entry: dict, key: str, path: Path, benchmark: str):
    """A required key of an annotation entry; a missing one names the file and key."""
    if not isinstance(entry, dict) or key not in entry:
        raise UserError(f"{benchmark}: {path} has an entry without '{key}'; is this the right file?")
    return entry[key]
