"""`comco validate`: check a dataset folder and say what is wrong, per record."""

from __future__ import annotations

import json
from pathlib import Path

from comco.data.folder import INFO, SCENES, SINGLES
from comco.io import read_jsonl
from comco.errors import UserError
from comco.plan.planner import SLOTS

RECORD_KEYS = ("id", "seed", "object_set", "object_set_hash", "image", "resolution", "layout",
               "camera", "lights", "objects", "mention_orders", "captions")
OBJECT_KEYS = ("name", "slot", "size_rank", "scale", "location", "rotation_z")


def image_problem(path: Path, size=None) -> str | None:
    """What makes an image file unusable (missing, cut, scrambled, wrong size), or None.

    verify() checks every PNG chunk's CRC (a cut or overwritten file), load() decodes the
    pixels (a damaged stream in intact chunks): about 3 ms for a 512 px render."""
    from PIL import Image

    if not path.is_file():
        return "is missing"
    try:
        with Image.open(path) as img:
            img.verify()
        with Image.open(path) as img:
            img.load()
            got = img.size
    except Exception as exc:  # PIL raises OSError, SyntaxError, ValueError, zlib.error... for bad bytes
        return f"cannot be decoded ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    if size is not None and tuple(got) != tuple(size):
        return f"is {got[0]}x{got[1]} pixels, the record says {size[0]}x{size[1]}"
    return None


def check_record(r: dict, names: set[str] | None, set_hash: str | None, rendered: bool, root: Path) -> list[str]:
    rid = r.get("id", "?")
    missing = [k for k in RECORD_KEYS if k not in r]
    if missing:
        return [f"record {rid}: missing field '{missing[0]}'"]
    out = []
    objs = r["objects"]
    n = len(objs)
    if n == 0:
        return [f"record {rid}: no objects"]
    if set_hash and r["object_set_hash"] != set_hash:
        out.append(f"record {rid}: object_set_hash {r['object_set_hash']} differs from dataset.json's {set_hash}")
    for i, o in enumerate(objs):
        miss = [k for k in OBJECT_KEYS if k not in o]
        if miss:
            out.append(f"record {rid}: objects[{i}] misses '{miss[0]}'")
            continue
        if names is not None and o["name"] not in names:
            out.append(f"record {rid}: objects[{i}] '{o['name']}' is not in the object set")
        if o["slot"] not in SLOTS:
            out.append(f"record {rid}: objects[{i}] has unknown slot '{o['slot']}'")
        if not o["scale"] > 0:
            out.append(f"record {rid}: objects[{i}] scale {o['scale']} is not positive")
    if sorted(o.get("size_rank") for o in objs) != list(range(n)):
        out.append(f"record {rid}: size ranks are not 0..{n - 1}")
    if len({o["slot"] for o in objs if "slot" in o}) != n:
        out.append(f"record {rid}: two objects share a slot")
    names_in = [o["name"] for o in objs]
    if len(set(names_in)) != n:
        out.append(f"record {rid}: an object appears twice")
    orders = r["mention_orders"]
    for k, order in enumerate(orders):
        if sorted(order) != list(range(n)):
            out.append(f"record {rid}: mention_orders[{k}] is not a permutation of the objects")
    for name, caps in r["captions"].items():
        if len(caps) != len(orders):
            out.append(f"record {rid}: captions['{name}'] has {len(caps)} captions for {len(orders)} orders")
    if rendered:
        problem = image_problem(root / r["image"], r["resolution"])
        if problem:
            out.append(f"record {rid}: image {r['image']} {problem}")
        for i, o in enumerate(objs):
            m = o.get("measured")
            if not m:
                out.append(f"record {rid}: objects[{i}] has no measurements")
            elif not (0 <= m.get("fraction", -1) <= 1 and m.get("pixels", -1) >= 0):
                out.append(f"record {rid}: objects[{i}] has impossible measurements {m}")
    return out


def validate_dataset(root: str | Path) -> list[str]:
    root = Path(root)
    if not (root / INFO).is_file() or not (root / SCENES).is_file():
        raise UserError(f"{root} is not a comco dataset (no {INFO} / {SCENES})")
    try:
        info = json.loads((root / INFO).read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return [f"{root / INFO}: not valid JSON"]
    names = None
    try:
        from comco.manifest import load_object_set

        oset = load_object_set(info.get("object_set", ""))
        names = set(oset.names)
        if oset.hash != info.get("object_set_hash"):
            return [f"{INFO}: object set '{oset.name}' has hash {oset.hash} now, the dataset was made with "
                    f"{info.get('object_set_hash')}: the manifest changed since"]
    except UserError as exc:
        return [f"{INFO}: object set cannot be loaded ({exc})"]
    rendered = bool(info.get("rendered"))
    problems, ids, count = [], set(), 0
    try:
        for r in read_jsonl(root / SCENES):
            count += 1
            if r.get("id") in ids:
                problems.append(f"record {r.get('id')}: duplicate id")
            ids.add(r.get("id"))
            problems += check_record(r, names, info.get("object_set_hash"), rendered, root)
    except UserError as exc:
        return problems + [str(exc)]
    counts = info.get("counts", {})
    expected = counts.get("rendered", counts.get("images")) if rendered else counts.get("images")
    if expected is not None and count != expected:
        problems.append(f"{SCENES}: {count} records, dataset.json says {expected}")
    if rendered:
        # Every planned image of this slice is either rendered or listed as a failure.
        shard_i, shard_n = info.get("config", {}).get("render", {}).get("shard", [0, 1])
        planned = len(range(shard_i, counts.get("images", 0), shard_n))
        accounted = counts.get("rendered", 0) + counts.get("failed", 0)
        if accounted != planned:
            problems.append(f"{INFO}: {planned} images planned but {counts.get('rendered', 0)} rendered and "
                            f"{counts.get('failed', 0)} failed: {planned - accounted} are unaccounted for")
    if (root / SINGLES).is_file():
        for s in read_jsonl(root / SINGLES):
            problem = (rendered and info.get("counts", {}).get("singles")
                       and image_problem(root / s["image"], s.get("resolution")))
            if problem:
                problems.append(f"single {s.get('id')}: image {s['image']} {problem}")
    return problems
