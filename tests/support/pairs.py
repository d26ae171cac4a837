"""Shared test builders (pairs): pair datasets written directly, without Blender or the pair planner.

Each planned base record gets three variants built here by hand (swap-size, swap-slots, remove),
in the record schema of pair datasets: `"pair": {"id", "factor", "changed"}`, variant id
f"{BASE}-{FACTOR}", and captions of the templates that name each factor, written here too:
`sizes` ("a large X and a small Y"), `relations` ("the X is to the left of the Y") and `and`.
"""

from __future__ import annotations

import copy
from pathlib import Path

from comco.data.folder import INFO, SCENES
from comco.io import read_json, read_jsonl, write_json, write_jsonl
from comco.plan import PlanConfig, Planner
from comco.plan.camera import Camera
from support.probes import SET, paint

FACTORS_BUILT = ("swap-size", "swap-slots", "remove")


def _u(record: dict, obj: dict) -> float:
    w, h = record["resolution"]
    return Camera.default(w, h).project(tuple(obj["location"]))[0]


def write_captions(record: dict) -> dict:
    """The record's `sizes`, `relations` and `and` captions, one per mention order."""
    objs = record["objects"]
    sizes, relations, plain = [], [], []
    for order in record["mention_orders"]:
        named = [objs[i] for i in order]
        sizes.append(" and ".join(f"a {'large' if o['size_rank'] == 0 else 'small'} {o['name']}" for o in named))
        plain.append(" and ".join(o["name"] for o in named))
        if len(named) >= 2:
            a, b = named[0], named[1]
            side = "left" if _u(record, a) < _u(record, b) else "right"
            relations.append(f"the {a['name']} is to the {side} of the {b['name']}")
        else:
            relations.append(f"the {named[0]['name']}")
    record["captions"] = {"and": plain, "sizes": sizes, "relations": relations}
    return record


def _variant(base: dict, factor: str, changed: list[int]) -> dict:
    v = copy.deepcopy(base)
    v["id"] = f"{base['id']}-{factor}"
    v["image"] = f"images/{v['id']}.png"
    v["pair"] = {"id": base["id"], "factor": factor, "changed": changed}
    return v


def make_pairs(base: dict, small: int | None = None) -> list[dict]:
    """The base (with its pair entry) and its three variants; `small` picks the small object that
    swaps size with the largest (default: the last small one)."""
    base = copy.deepcopy(base)
    base["pair"] = {"id": base["id"], "factor": "base", "changed": []}
    objs = base["objects"]
    big = [o["size_rank"] for o in objs].index(0)
    others = [i for i in range(len(objs)) if i != big]
    small = others[-1] if small is None else small
    out = [write_captions(base)]

    v = _variant(base, "swap-size", [big, small])
    a, b = v["objects"][big], v["objects"][small]
    for key in ("size_rank", "scale", "planned_fraction"):
        a[key], b[key] = b[key], a[key]
    v["large_slot"] = b["slot"]
    out.append(write_captions(v))

    v = _variant(base, "swap-slots", [big, small])
    a, b = v["objects"][big], v["objects"][small]
    for key in ("slot", "location"):
        a[key], b[key] = b[key], a[key]
    v["large_slot"] = a["slot"]
    out.append(write_captions(v))

    gone = others[0]
    v = _variant(base, "remove", [])
    del v["objects"][gone]
    ranks = sorted(range(len(v["objects"])), key=lambda i: v["objects"][i]["size_rank"])
    for r, i in enumerate(ranks):
        v["objects"][i]["size_rank"] = r
    v["mention_orders"] = [[i - (i > gone) for i in order if i != gone] for order in base["mention_orders"]]
    out.append(write_captions(v))
    return out


def pair_records(n: int = 12, objects=(2, 3), seed: int = 5) -> list[dict]:
    """Planned simco bases and their variants, in memory (measured pixels follow the planned ranks)."""
    planner = Planner(PlanConfig(object_set="simco", objects=tuple(objects), n=n, resolution=(32, 32), seed=seed), SET)
    out = []
    for r in planner.records():
        for rec in make_pairs(r):
            for o in rec["objects"]:
                px = 400 // (o["size_rank"] + 1)
                o["measured"] = {"pixels": px, "fraction": px / 1024, "bbox": [0, 0, 8, 8], "visible_fraction": 1.0}
            out.append(rec)
    return out


def write_pair_dataset(root: Path, records: list[dict] | None = None, *, n: int = 4, objects=(2, 3)) -> Path:
    """A dataset folder of planned bases and their variants, painted (tiny images) and measured."""
    from comco.data.writer import run_plan

    cfg = PlanConfig(object_set="simco", objects=tuple(objects), n=n, resolution=(32, 32), seed=2)
    run_plan(cfg, root, quiet=True, singles=False)
    if records is None:
        records = [rec for r in read_jsonl(root / SCENES) for rec in make_pairs(r)]
    write_jsonl(root / SCENES, [paint(r, root / r["image"]) for r in records])
    info = read_json(root / INFO, "dataset.json")
    # dataset.json counts the planned ids 000000...; the pair planner's own count of variants is not
    # this builder's to invent, so the check of expected ids is left out here.
    info["counts"].pop("images", None)
    write_json(root / INFO, info)
    return root


def planned_pair_dataset(root: Path, *, n: int = 4, objects=(2, 3), factors=FACTORS_BUILT, seed: int = 2) -> Path:
    """A pair dataset as `comco render --pairs` plans it (the pair planner's variants and captions),
    painted and measured: one that `comco validate` accepts, as `comco export` requires."""
    from comco.data.writer import run_plan

    cfg = PlanConfig(object_set="simco", objects=tuple(objects), n=n, resolution=(32, 32), pairs=tuple(factors),
                     seed=seed)
    run_plan(cfg, root, quiet=True, singles=False)
    write_jsonl(root / SCENES, [paint(r, root / r["image"]) for r in read_jsonl(root / SCENES)])
    return root
