"""Dataset folders: read, write (atomically) and validate.

A dataset folder holds `dataset.json` (generator, configuration, object-set hash,
counts), `scenes.jsonl` (one record per image, the contract of DESIGN.md),
`images/` once rendered, `singles/` with the reference renders and their
`singles.jsonl`, and `metadata.jsonl` for Hugging Face `imagefolder` once images exist.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from comco import GENERATOR, PLAN_VERSION, __version__
from comco.errors import UserError
from comco.io import read_jsonl

INFO = "dataset.json"
SCENES = "scenes.jsonl"
SINGLES = "singles/singles.jsonl"
METADATA = "metadata.jsonl"
FAILURES = "failures.jsonl"


def config_hash(config: dict, object_set_hash: str) -> str:
    blob = json.dumps({"config": config, "object_set_hash": object_set_hash, "plan_version": PLAN_VERSION},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def make_info(config: dict, object_set_name: str, object_set_hash: str, counts: dict) -> dict:
    return {
        "generator": GENERATOR, "version": __version__, "config": config,
        "config_hash": config_hash(config, object_set_hash),
        "object_set": object_set_name, "object_set_hash": object_set_hash, "counts": counts,
    }


def prepare_out(out: Path, info: dict, *, overwrite: bool, resume: bool) -> str:
    """Check an output folder before anything is written.

    Returns "new", "same" (same configuration already there) or "overwrite".
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder")
    existing = out / INFO
    if not existing.is_file():
        if out.is_dir() and any(out.iterdir()) and not (overwrite or resume):
            if (out / SCENES).exists() or (out / "images").exists():
                raise UserError(f"--out {out} holds a dataset without {INFO}; pass --overwrite to replace it")
        return "new"
    try:
        old = json.loads(existing.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise UserError(f"{existing} is corrupt; pass --overwrite to start again") from None
    if old.get("config_hash") == info["config_hash"]:
        return "same"
    if overwrite:
        return "overwrite"
    hint = " (--resume only continues the same configuration)" if resume else ""
    raise UserError(f"--out {out} holds a dataset made with another configuration{hint}; "
                    f"pass --overwrite to replace it or choose another --out")


def check_writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-", delete=True)
        probe.close()
    except OSError as exc:
        raise UserError(f"--out {out} is not writable ({exc.strerror}); choose another folder") from None


class Dataset:
    """Read access to a dataset folder (what probes, training and the lab use)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        if not (self.root / INFO).is_file() or not (self.root / SCENES).is_file():
            raise UserError(f"{self.root} is not a comco dataset (no {INFO} / {SCENES}); "
                            f"make one with `comco plan` or `comco render`")
        self.info = json.loads((self.root / INFO).read_text(encoding="utf-8"))

    def records(self) -> Iterator[dict]:
        return read_jsonl(self.root / SCENES)

    def singles(self) -> list[dict]:
        path = self.root / SINGLES
        if not path.is_file():
            raise UserError(f"{self.root} has no singles/ reference renders; render with --singles")
        return list(read_jsonl(path))

    def has_singles(self) -> bool:
        return (self.root / SINGLES).is_file()

    def image_path(self, record: dict) -> Path:
        return self.root / record["image"]

    def has_images(self) -> bool:
        first = next(iter(self.records()), None)
        return first is not None and self.image_path(first).is_file()

    def __len__(self) -> int:
        return int(self.info["counts"].get("images", 0))


def metadata_rows(records: Iterable[dict], template: str = "and") -> Iterator[dict]:
    """Rows of a Hugging Face imagefolder `metadata.jsonl` (file_name + texts)."""
    for r in records:
        caps = r.get("captions", {})
        row = {"file_name": r["image"], "id": r["id"],
               "objects": [o["name"] for o in r["objects"]],
               "text": (caps.get(template) or [""])[0]}
        for name, values in caps.items():
            row[f"captions_{name}"] = values
        yield row
