"""VL-CheckList's layout: TUPLE_JSON annotation files and the corpus YAML files that point at
them, as its `vl_checklist/data_loader.py` reads them: `corpus/v1/TYPE/NAME.yaml` (ANNO_PATH,
IMG_ROOT, TYPE) relative to the working directory, and each annotation a JSON list of
`[image path, {"POS": [texts], "NEG": [texts]}]`, the image at IMG_ROOT joined with the path.
Run VL-CheckList from the export's folder with `TEST_DATA: ["comco"]`.

- `Object/Size/{large,medium,small}` and `Object/Location/{center,margin}`: every object of every
  image that is not a pair's variant: POS is the image's caption (mention order 0, `--template`,
  default `and`), NEG the same caption with that object's name replaced by an object of the set the
  image lacks (drawn with the record's seed). Size from the planned size rank and layout (one-large:
  rank 0 large, the rest small; graded and realistic: rank 0 large, the last small, the others
  medium; equal: no size subset); location from the slot (centre M: center; the corners: margin;
  comco has no slot for VL-CheckList's mid).
- With pairs, `Attribute/size` (swap-size), `Attribute/color` (swap-colors) and `Relation/spatial`
  (swap-slots): each image of a pair with its own caption as POS and its partner's as NEG.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from comco.data.export.pair_items import ImageSink, pair_items
from comco.data.folder import object_set_source
from comco.data.pairing import BASE, has_pairs, pair_entry
from comco.errors import UserError
from comco.io import write_json, write_text

NAME = "comco"  # the corpus name: TEST_DATA
IMAGES = "images"
PAIR_TYPES = {"swap-size": "Attribute/size", "swap-colors": "Attribute/color", "swap-slots": "Relation/spatial"}
DEFAULT_TEMPLATE = "and"
OBJECT_TYPES = {f"Object/Location/{c}" for c in ("center", "margin")} | \
    {f"Object/Size/{c}" for c in ("large", "medium", "small")}


def size_class(layout: str, rank: int, n: int) -> str | None:
    if layout == "equal" or n < 2:
        return None
    if rank == 0:
        return "large"
    return "small" if layout == "one-large" or rank == n - 1 else "medium"


def location_class(slot: str) -> str:
    return "center" if slot == "M" else "margin"


def _writer(dataset, template: str | None):
    """(the list template, the object set) for writing captions the way the dataset's planner did."""
    from comco.manifest import load_object_set
    from comco.plan.captions import load_templates

    config = dataset.info.get("config") or {}
    try:
        book = load_templates(config.get("templates"), text=config.get("templates_text"))
    except UserError:
        book = load_templates()
    name = template or DEFAULT_TEMPLATE
    t = book.templates.get(name)
    if t is None or t.kind != "list":
        raise UserError(f"--template {name}: VL-CheckList's object tuples need a list template of the dataset "
                        f"(one that names every object: and, articles, photo ...)")
    return t, load_object_set(object_set_source(dataset.info))


def object_tuples(record: dict, template, object_set) -> list[tuple[str, str, str, str | None]]:
    """(location class, size class, POS, NEG) for each object of a record."""
    from comco.plan.captions import write_list_caption

    objs, order = record["objects"], record["mention_orders"][0]
    present = {o["name"] for o in objs}
    absent = [n for n in object_set.names if n not in present]
    if not absent:
        return []
    rng = np.random.default_rng([int(record.get("seed", 0)), 7])  # the record's own stream: same data, same tuples

    def fields(o, name=None):
        return {"name": name or o["name"], "color": o.get("color"), "material": o.get("material")}

    pos = write_list_caption(template, [fields(objs[i]) for i in order], object_set)
    out = []
    for j, o in enumerate(objs):
        other = absent[int(rng.integers(len(absent)))]
        neg = write_list_caption(template, [fields(objs[i], other if i == j else None) for i in order], object_set)
        out.append((location_class(o["slot"]), size_class(record["layout"], o["size_rank"], len(objs)), pos, neg))
    return out


def prepare(dataset, opts):
    """(dataset, [(type, record, POS, NEG)], what was left out of the pairs, template name); refuses
    a dataset that gives no tuple before anything is written."""
    records = [r for r in dataset.records() if isinstance(r, dict)]
    template, object_set = _writer(dataset, opts.template)
    tuples = []
    for r in records:
        entry = pair_entry(r)
        if entry and entry["factor"] != BASE:
            continue  # a variant repeats its base but for one factor
        for loc, size, pos, neg in object_tuples(r, template, object_set):
            tuples.append((f"Object/Location/{loc}", r, pos, neg))
            if size:
                tuples.append((f"Object/Size/{size}", r, pos, neg))
    left = {}
    if has_pairs(records):
        try:
            items, left = pair_items(records, None, opts.captions)
        except UserError:
            items = []  # pairs without their factors' captions: only the object tuples
        for it in items:
            kind = PAIR_TYPES.get(it.factor)
            if kind:
                tuples.append((kind, it.pair.base, it.base_caption, it.variant_caption))
                tuples.append((kind, it.pair.variant, it.variant_caption, it.base_caption))
    if not tuples:
        raise UserError(f"{dataset.root}: no image has an object the set lacks a replacement for; "
                        "VL-CheckList's tuples need absent objects")
    return dataset, tuples, left, template.name


def write(prepared, out: Path, opts, bar) -> dict:
    dataset, tuples, left, template = prepared
    sink = ImageSink(dataset, out / IMAGES, bar)
    annotations: dict[str, list] = {}
    for kind, record, pos, neg in tuples:
        annotations.setdefault(kind, []).append([sink.name(record), {"POS": [pos], "NEG": [neg]}])
    files = []
    for kind, rows in annotations.items():
        anno = f"data/{kind}/{NAME}.json"
        write_json(out / anno, rows, indent=None, sort_keys=False)
        corpus = f"corpus/v1/{kind}/{NAME}.yaml"
        write_text(out / corpus, f'ANNO_PATH: "{anno}"\nIMG_ROOT: "{IMAGES}/"\nTYPE: "TUPLE_JSON"\n')
        files += [anno, corpus]
    return {"images": len(sink.placed), "texts": 2 * len(tuples),
            "items": {k: len(v) for k, v in annotations.items()}, "left_out": left, "files": files + [f"{IMAGES}/"],
            "template": template + (" (objects), each factor's (pairs)" if set(annotations) - OBJECT_TYPES else "")}


def usage(out: Path, summary: dict, opts) -> str:
    return (f"cd {out} && VL-CheckList's Evaluate with TEST_DATA: [\"{NAME}\"] and TYPES: "
            f"{list(summary['items'])}")
