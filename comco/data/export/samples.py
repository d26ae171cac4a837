"""What every export writes per image, read from scenes.jsonl one record at a time.

A sample is one image with the captions of one template (all of them, one per mention
order, or only the first) and its per-object fields; nothing holds more than one record,
so an export's memory does not grow with the dataset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from comco.data.folder import SCENES, Dataset, image_file, output_files, record_key
from comco.errors import UserError

CAPTION_MODES = ("all", "first")
# per-object fields, as lists in object order (the Hugging Face convention for detection sets)
OBJECT_FIELDS = ("name", "slot", "size_rank", "scale", "color", "material", "planned_fraction")
MEASURED_FIELDS = ("pixels", "fraction", "bbox", "visible_fraction")
# measured with --depth / --relations only: columns when the dataset's first record has them
OUTPUT_MEASURED_FIELDS = ("depth_m", "occluded_by")


@dataclass
class Sample:
    key: str  # the record's id: the tar key and the file's stem
    image: Path  # the dataset's image file
    captions: list[str]  # the template's captions exported (empty: a dataset without captions)
    row: dict  # the fields of a metadata row: id, captions, mention orders, objects ...
    outputs: dict[str, Path] = field(default_factory=dict)  # --depth / --normals: field -> the dataset's file


def dataset_templates(dataset: Dataset) -> list[str]:
    """The caption templates of the dataset's first record, in its order."""
    first = next(iter(dataset.records()), None)
    if not isinstance(first, dict):
        raise UserError(f"{dataset.root / SCENES} holds no scene records; make the dataset again")
    captions = first.get("captions")
    return [k for k, v in captions.items() if v] if isinstance(captions, dict) else []


def choose_template(dataset: Dataset, template: str | None) -> str | None:
    """The template to export: the one asked for (it must exist) or the dataset's first."""
    have = dataset_templates(dataset)
    if template is None:
        return have[0] if have else None
    if template not in have:
        listed = ", ".join(have) if have else "none: it has no captions"
        raise UserError(f"--template {template}: {dataset.root} has no such captions (templates: {listed})")
    return template


def object_fields(dataset: Dataset) -> tuple[str, ...]:
    """The per-object fields every row carries, decided once for the dataset: a column that is
    null throughout (colours of a dataset without --colors, measurements of an unmeasured one)
    is left out, since Arrow's type inference (Hugging Face datasets) fails on lists of nulls."""
    first = next(iter(dataset.records()), {})
    objects = first.get("objects") or [{}]
    colors = bool((dataset.info.get("config") or {}).get("colors")) or any(o.get("color") for o in objects)
    measured = all(isinstance(o.get("measured"), dict) for o in objects)
    extra = tuple(f for f in OUTPUT_MEASURED_FIELDS if measured and all(f in o["measured"] for o in objects))
    return tuple(f for f in OBJECT_FIELDS if f != "color" or colors) + (MEASURED_FIELDS if measured else ()) + extra


def object_columns(record: dict, fields: tuple[str, ...]) -> dict[str, list]:
    """Each object field as a list over the record's objects."""
    objects = record["objects"]
    measured = MEASURED_FIELDS + OUTPUT_MEASURED_FIELDS
    return {f: [(o.get("measured") or {}).get(f) if f in measured else o.get(f) for o in objects]
            for f in fields}


def samples(dataset: Dataset, template: str | None, captions: str = "all") -> Iterator[Sample]:
    """One Sample per record of scenes.jsonl, in file order; a record without its image or
    its template's captions ends the export with one line."""
    if captions not in CAPTION_MODES:
        raise UserError(f"--mention-orders {captions}: choose {' or '.join(CAPTION_MODES)}")
    seen_one, fields = False, object_fields(dataset)
    for line, record in enumerate(dataset.records(), 1):
        if not isinstance(record, dict) or not isinstance(record.get("objects"), list) or "id" not in record:
            raise UserError(f"{dataset.root / SCENES}:{line} is not a scene record; "
                            f"`comco validate {dataset.root}` lists the problems")
        key = record_key(record)  # the tar key and the file's stem
        image = image_file(dataset.root, record)
        if not image.is_file():
            hint = "render it (`comco render`)" if not seen_one else "finish it (`comco render --resume`)"
            raise UserError(f"{dataset.root}: record {key} has no image ({record['image']}); {hint} first")
        texts, orders = [], []
        if template is not None:
            texts = list((record.get("captions") or {}).get(template) or [])
            if not texts:
                raise UserError(f"{dataset.root}: record {key} has no '{template}' captions; "
                                f"`comco validate {dataset.root}` lists the problems")
            orders = list(record.get("mention_orders") or [])[:len(texts)]
            if captions == "first":
                texts, orders = texts[:1], orders[:1]
        row = {"id": key}
        if template is not None:  # no caption columns at all for a dataset without captions
            row.update(text=texts[0], captions=texts, template=template, mention_orders=orders)
        row.update(layout=record.get("layout"), large_slot=record.get("large_slot"),
                   n_objects=len(record["objects"]), seed=record.get("seed"),
                   objects=object_columns(record, fields))
        row.update({k: record[k] for k in ("relations", "occlusion_order") if k in record})
        outputs = {name: path for name, path, _ in output_files(dataset.root, record)}
        seen_one = True
        yield Sample(key, image, texts, row, outputs)
