"""Training data: image paths with candidate captions, from a comco dataset, a
ShareGPT4V JSON file, or a JSONL/CSV list of image path and caption."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from comco.errors import UserError


@dataclass(frozen=True)
class Sample:
    image: Path
    captions: tuple[str, ...]  # one is drawn per epoch
    negatives: tuple[str, ...] = ()  # aligned with captions (LABCLIP hard negatives)


@dataclass(frozen=True)
class TrainData:
    samples: list[Sample]
    source: str  # "comco", "sharegpt4v", "jsonl", "csv"
    description: str


def is_comco_dataset(path: Path) -> bool:
    return path.is_dir() and (path / "scenes.jsonl").is_file()


def load_comco(root: Path, templates: list[str], *, negatives: str | None = None) -> TrainData:
    """Samples from a comco dataset; each sample's captions are those of `templates`.

    A template missing from every record is a user error that names it, because the
    fix is to plan/render with that template.
    """
    from comco.data import require_usable_images
    from comco.data.folder import Dataset

    dataset = Dataset(root)
    samples, used = [], []
    seen: set[str] = set()
    for record in dataset.complete_records():
        captions_by_template = record.get("captions", {})
        seen.update(captions_by_template)
        captions: list[str] = []
        negs: list[str] = []
        for name in templates:
            found = captions_by_template.get(name, [])
            captions.extend(found)
            if negatives is not None:
                negs.extend(captions_by_template.get(negatives, []))
        if not captions or (negatives is not None and len(negs) != len(captions)):
            continue
        samples.append(Sample(dataset.image_path(record), tuple(captions), tuple(negs)))
        used.append(record)
    wanted = ", ".join(repr(t) for t in templates + ([negatives] if negatives else []))
    if not samples:
        have = ", ".join(sorted(seen)) or "none"
        raise UserError(
            f"{root}: no record has captions of template {wanted} (it has: {have}); "
            f"plan and render the dataset with --templates "
            f"{','.join(templates + ([negatives.removesuffix('_swapped')] if negatives else []))}"
        )
    require_usable_images(root, used)  # every image, as `comco validate` checks it, before a model loads
    return TrainData(samples, "comco", f"comco dataset {root} ({len(samples)} images, {wanted})")


def load_sharegpt4v(path: Path, image_root: Path | None) -> TrainData:
    """ShareGPT4V through the one reader of its JSON (comco.probes.natural.sharegpt4v);
    entries left out (no caption) are counted in the description, never dropped silently."""
    from comco.probes.natural.sharegpt4v import load_sharegpt4v as read_sharegpt4v

    split = read_sharegpt4v(path, image_root or path.parent, check_images=False)
    samples = [Sample(item.image, item.captions) for item in split.items]
    if not samples:
        raise UserError(f"{path}: no entry with an image and a gpt caption")
    left_out = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(split.skipped.items()))
    return TrainData(samples, "sharegpt4v",
                     f"ShareGPT4V {path} ({len(samples)} images{'; left out: ' + left_out if left_out else ''})")


def _row_sample(row: dict, root: Path, where: str) -> Sample:
    image = row.get("image") or row.get("filepath")
    caption = row.get("caption") or row.get("title") or row.get("text")
    if not image or not caption:
        raise UserError(f"{where}: needs an 'image' and a 'caption' field")
    return Sample(root / image, (" ".join(str(caption).split()),))


def load_jsonl(path: Path, image_root: Path | None) -> TrainData:
    root = image_root or path.parent
    samples = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise UserError(f"{path}:{number}: not valid JSON") from None
        samples.append(_row_sample(row, root, f"{path}:{number}"))
    return TrainData(samples, "jsonl", f"JSONL {path} ({len(samples)} images)")


def load_csv(path: Path, image_root: Path | None) -> TrainData:
    root = image_root or path.parent
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    samples = [_row_sample(row, root, f"{path}:{i + 2}") for i, row in enumerate(rows)]
    return TrainData(samples, "csv", f"CSV {path} ({len(samples)} images)")


def load_training_data(path: str | Path, *, templates: list[str], image_root: str | Path | None = None,
                       negatives: str | None = None) -> TrainData:
    """Dispatch on what `path` is; `templates` only matters for comco datasets."""
    path = Path(path)
    root = Path(image_root) if image_root else None
    if is_comco_dataset(path):
        data = load_comco(path, templates, negatives=negatives)
    elif not path.exists():
        raise UserError(f"--data {path}: no such file or folder")
    elif path.suffix == ".json":
        data = load_sharegpt4v(path, root)
    elif path.suffix == ".jsonl":
        data = load_jsonl(path, root)
    elif path.suffix == ".csv":
        data = load_csv(path, root)
    else:
        raise UserError(f"--data {path}: expected a comco dataset folder (with scenes.jsonl), "
                        "a ShareGPT4V .json, or a .jsonl/.csv of image and caption")
    if not data.samples:
        raise UserError(f"--data {path}: no samples")
    if data.source != "comco":  # checked whole above; a list of a million images gets a spread-out spot check
        from comco.data.validate import image_problem

        spot = data.samples[:: max(1, len(data.samples) // 100)]
        bad = next(((s.image, why) for s in spot if (why := image_problem(s.image))), None)
        if bad is not None:
            hint = " (set --image-root?)" if bad[1] == "is missing" else ""
            raise UserError(f"--data {path}: image {bad[0]} {bad[1]}{hint}")
    return data
