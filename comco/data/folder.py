"""Dataset folders: read, write (atomically) and validate.

A dataset folder holds `dataset.json` (generator, configuration, object-set hash,
counts), `scenes.jsonl` (one record per image, the contract of DESIGN.md),
`images/` once rendered, `singles/` with the reference renders and their
`singles.jsonl`, and `metadata.jsonl` for Hugging Face `imagefolder` once images exist.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from comco import GENERATOR, PAIRS_VERSION, PLAN_VERSION, __version__
from comco.errors import UserError
from comco.io import read_jsonl
from comco.record import DEPTH_FOLDER, NORMALS_FOLDER, SceneRecord, SingleRecord

INFO = "dataset.json"
SCENES = "scenes.jsonl"
SINGLES = "singles/singles.jsonl"
METADATA = "metadata.jsonl"
FAILURES = "failures.jsonl"


def config_hash(config: dict, object_set_hash: str) -> str:
    """The hash that says two datasets were planned alike.

    Args:
        config: the plan configuration (PlanConfig.to_dict, plus render options).
        object_set_hash: the object set's hash (manifest and mesh files).
    The planner's version (PLAN_VERSION, and PAIRS_VERSION for pair datasets) is part of it:
    another planner never resumes a dataset."""
    versions = {"plan_version": PLAN_VERSION, **({"pairs_version": PAIRS_VERSION} if config.get("pairs") else {})}
    blob = json.dumps({"config": config, "object_set_hash": object_set_hash, **versions}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def make_info(config: dict, object_set_name: str, object_set_hash: str, counts: dict) -> dict:
    """The content of dataset.json.

    Args:
        config: the full configuration; object_set_name / object_set_hash: the set it used;
        counts: images, per object count, rendered, failed, singles."""
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
    except (UnicodeDecodeError, json.JSONDecodeError):
        old = None
    if not isinstance(old, dict):
        if overwrite:
            return "overwrite"
        raise UserError(f"{existing} is corrupt; pass --overwrite to start again")
    if old.get("config_hash") == info["config_hash"]:
        return "same"
    if overwrite:
        return "overwrite"
    hint = " (--resume only continues the same configuration)" if resume else ""
    raise UserError(f"--out {out} holds a dataset made with another configuration{hint}; "
                    f"pass --overwrite to replace it or choose another --out")


def check_writable(out: Path) -> None:
    """Refuse (UserError) an --out folder this process cannot write into, before any work.

    Args:
        out: the folder (created if missing)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-", delete=True)
        probe.close()
    except OSError as exc:
        raise UserError(f"--out {out} is not writable ({exc.strerror}); choose another folder") from None


def read_info(root: Path) -> dict:
    """dataset.json as a dict; a corrupt one is the user's to fix (one line, no traceback)."""
    path = Path(root) / INFO
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path} is corrupt ({exc.__class__.__name__}); make the dataset again") from None
    if not isinstance(info, dict):
        raise UserError(f"{path} is corrupt (not a JSON object); make the dataset again")
    return info


class Dataset:
    """Read access to a dataset folder (what probes, training and the lab use)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        if not (self.root / INFO).is_file() or not (self.root / SCENES).is_file():
            raise UserError(f"{self.root} is not a comco dataset (no {INFO} / {SCENES}); "
                            f"make one with `comco plan` or `comco render`")
        self.info = read_info(self.root)

    def records(self) -> Iterator[SceneRecord]:
        return read_jsonl(self.root / SCENES)

    def complete_records(self) -> list[SceneRecord]:
        """Every record, refusing a scenes.jsonl that lacks records dataset.json counts: a
        probe or a training run on the rest would silently measure another dataset."""
        records = list(self.records())
        odd = next((k for k, r in enumerate(records, 1) if not isinstance(r, dict) or "objects" not in r), None)
        if odd is not None:
            raise UserError(f"{self.root / SCENES}: record {odd} is not a scene record; "
                            f"`comco validate {self.root}` lists the problems")
        missing = missing_ids(self.root, self.info, (r.get("id") for r in records if isinstance(r, dict)))
        counts = self.info.get("counts") or {}
        expected = counts.get("rendered", counts.get("images")) if self.info.get("rendered") else counts.get("images")
        if missing:
            what = describe_ids(missing)
        elif isinstance(expected, int) and len(records) < expected:
            what = f"{expected - len(records)} records"
        elif isinstance(expected, int) and len(records) > expected:
            raise UserError(f"{self.root / SCENES} holds {len(records)} records but {INFO} counts {expected}; "
                            f"`comco validate {self.root}` lists the problems")
        else:
            return records
        raise UserError(f"{self.root / SCENES} lacks records that {INFO} counts (missing: {what}); "
                        f"restore the file or make the dataset again (`comco render --resume`)")

    def singles(self) -> list[SingleRecord]:
        path = self.root / SINGLES
        if not path.is_file():
            raise UserError(f"{self.root} has no singles/ reference renders; render with --singles")
        return list(read_jsonl(path))

    def has_singles(self) -> bool:
        return (self.root / SINGLES).is_file()

    def image_path(self, record: SceneRecord | SingleRecord) -> Path:
        return self.root / record["image"]

    def has_images(self) -> bool:
        first = next(iter(self.records()), None)
        return first is not None and self.image_path(first).is_file()

    def __len__(self) -> int:
        return int(self.info["counts"].get("images", 0))


def expected_ids(root: Path, info: dict) -> list[str] | None:
    """The ids dataset.json says scenes.jsonl holds (None when it does not say): every
    planned image of the slice, less the ones failures.jsonl lists as failed."""
    counts, config = info.get("counts"), info.get("config")
    if not isinstance(counts, dict) or not isinstance(config, dict) or not isinstance(counts.get("images"), int):
        return None
    render = config.get("render") if isinstance(config.get("render"), dict) else {}
    shard = render.get("shard", [0, 1]) if info.get("rendered") else [0, 1]
    try:
        shard_i, shard_n = (int(x) for x in shard)
    except (TypeError, ValueError):
        return None
    factors = pair_factors(info)
    ids = [rid for i in range(shard_i, scene_count(info), max(1, shard_n)) for rid in group_ids(i, factors)]
    if info.get("rendered") and counts.get("failed"):
        if not (Path(root) / FAILURES).is_file():
            return None  # which ones failed is not known here (a derived copy); the count still is
        failed = {f.get("id") for f in read_jsonl(Path(root) / FAILURES) if isinstance(f, dict)}
        ids = [i for i in ids if i not in failed]
    return ids


def failure_counts(failures: list[dict]) -> dict:
    """dataset.json's failure counts: `failed` counts scene images (with `rendered`, every planned
    image of the slice), `singles_failed` the single-object renders."""
    singles = sum(1 for f in failures if str(f.get("key", "")).startswith("single:"))
    return {"failed": len(failures) - singles, "singles_failed": singles}


def pair_factors(info: dict) -> tuple[str, ...]:
    """The --pairs factors a dataset was planned with (empty for an ordinary dataset)."""
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    pairs = config.get("pairs") or ()
    return tuple(pairs) if isinstance(pairs, (list, tuple)) else ()


def scene_count(info: dict) -> int:
    """Planned scenes: the images, or with --pairs the base scenes (each has 1 + factors images)."""
    counts = info.get("counts") if isinstance(info.get("counts"), dict) else {}
    return int(counts.get("scenes", counts.get("images", 0)))


def group_ids(index: int, factors: tuple[str, ...] = ()) -> list[str]:
    """The record ids of scene `index`: its own, then one per pair factor (comco.plan.pairs.pair_id)."""
    base = f"{index:06d}"
    return [base] + [f"{base}-{f}" for f in factors]


def missing_ids(root: Path, info: dict, present: Iterable) -> list[str]:
    expected = expected_ids(root, info)
    if expected is None:
        return []
    have = set(present)
    return [i for i in expected if i not in have]


def describe_ids(ids: list[str], show: int = 5) -> str:
    more = f" and {len(ids) - show} more" if len(ids) > show else ""
    return f"record{'s' if len(ids) > 1 else ''} {', '.join(ids[:show])}{more}"


def object_set_source(info: dict) -> str:
    """Where a dataset's object set is loaded from: the folder or built-in name its
    configuration recorded (a user set's manifest `name` is not a place to find it)."""
    config = info.get("config")
    source = config.get("object_set") if isinstance(config, dict) else None
    return str(source or info.get("object_set") or "")


def safe_image_path(image, folders: tuple[str, ...] = ("images", "singles")) -> str:
    """A record's `image` as written by comco: FOLDER/NAME.png, one file in one of its folders.
    Anything else (an absolute path, '..', a deeper path) is refused: a merge would write there."""
    ok = isinstance(image, str) and "\\" not in image and not image.startswith("/")
    parts = image.split("/") if ok else []
    if not (len(parts) == 2 and parts[0] in folders and parts[1] not in ("", ".", "..")
            and not parts[1].startswith(".")):
        raise UserError(f"record image {image!r} is not a file in {' or '.join(f + '/' for f in folders)}; "
                        f"the records were edited (make the dataset again)")
    return image


# The ids comco writes (000042, 000042-swap-size): they become file names and tar keys in exports.
RECORD_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,99}")


def record_key(record) -> str:
    """A record's id, checked before it names a file or a tar member: one component of the
    digits, letters, '-' and '_' that comco writes. Anything else (a number, null, '..', a
    path, a dot that a WebDataset reader would take for an extension) is refused."""
    rid = record.get("id") if isinstance(record, dict) else None
    if not isinstance(rid, str) or not RECORD_ID.fullmatch(rid):
        raise UserError(f"record id {json.dumps(rid)} is not an id comco writes (digits, letters, '-', '_'); "
                        f"the records were edited (make the dataset again)")
    return rid


def image_file(root: str | Path, record: dict, folders: tuple[str, ...] = ("images",), key: str = "image") -> Path:
    """The record's image (or the per-image file under `key`) in the dataset folder
    (safe_image_path), refusing a symbolic link that leads out of it: an export would pack, copy
    or hard-link the file it points to."""
    root = Path(root)
    path = root / safe_image_path(record.get(key), folders)
    if path.exists() and not path.resolve().is_relative_to(root.resolve()):
        raise UserError(f"record {record.get('id')}: {key} {record[key]} is a symbolic link out of {root}; "
                        f"copy the file into the dataset")
    return path


# The per-image outputs (--depth, --normals): record field, folder, and the PIL modes comco writes.
OUTPUT_FILES = (("depth", DEPTH_FOLDER, ("I;16", "I")), ("normals", NORMALS_FOLDER, ("RGB",)))


def output_files(root: str | Path, record: dict) -> list[tuple[str, Path, tuple[str, ...]]]:
    """(field, file, modes) of each per-image output the record lists, each checked as image_file
    checks its image."""
    return [(key, image_file(root, record, (folder,), key), modes) for key, folder, modes in OUTPUT_FILES
            if key in record]


def metadata_rows(records: Iterable[SceneRecord], template: str = "and") -> Iterator[dict]:
    """Rows of a Hugging Face imagefolder `metadata.jsonl` (file_name + texts)."""
    for r in records:
        caps = r.get("captions", {})
        row = {"file_name": r["image"], "id": r["id"],
               "objects": [o["name"] for o in r["objects"]],
               "text": (caps.get(template) or [""])[0]}
        for name, values in caps.items():
            row[f"captions_{name}"] = values
        yield row
