"""The scene record as a type: the planner writes exactly the fields comco/record.py names,
and check_record finds what is wrong with a record without touching any file."""

import copy
import typing

from comco.manifest import load_object_set
from comco.plan import PlanConfig, Planner
from comco.record import (
    OBJECT_KEYS,
    OUTPUT_FIELDS,
    REALISM_FIELDS,
    FloorEntry,
    ObjectEntry,
    PairEntry,
    SceneRecord,
    SingleRecord,
    WorldEntry,
    check_record,
    largest,
    measured_ranks,
    object_names,
)


def planner(**kw):
    cfg = PlanConfig(object_set="simco", objects=(2, 3, 4), n=12, **kw)
    return Planner(cfg, load_object_set("simco"))


def test_planned_records_have_exactly_the_typed_fields():
    p = planner(colors=True)
    optional = {"measured", "surface"}
    for rec in p.records():
        # pair / --holdout / realism / outputs datasets only: with their options
        assert set(rec) == set(SceneRecord.__annotations__) - {"pair", "holdout", *REALISM_FIELDS, *OUTPUT_FIELDS}
        for o in rec["objects"]:
            assert set(o) == set(ObjectEntry.__annotations__) - optional
        assert check_record(rec, set(load_object_set("simco").names), rec["object_set_hash"]) == []
    for single in p.singles():
        assert set(single) == set(SingleRecord.__annotations__)
    for rec in planner(colors=True, pairs=("swap-colors", "count"), world=("forest",), depth=True, normals=True,
                       relations=True, floor=("wood",), texture=("noise",), roughness=(0.1, 0.5)).records():
        # occlusion_order is measured, by the renderer
        assert set(rec) == set(SceneRecord.__annotations__) - {"holdout", "occlusion_order"}
        assert set(rec["world"]) == set(WorldEntry.__annotations__)
        assert set(rec["floor"]) == set(FloorEntry.__annotations__)
        assert all(set(o["surface"]) == {"roughness", "texture"} for o in rec["objects"])
        assert set(rec["pair"]) == set(PairEntry.__annotations__)
        assert check_record(rec, set(load_object_set("simco").names), rec["object_set_hash"]) == []
    for rec in planner(colors=True, holdout="color:cube=red").records():
        assert set(rec) == set(SceneRecord.__annotations__) - {"pair", *REALISM_FIELDS, *OUTPUT_FIELDS}
        assert check_record(rec, set(load_object_set("simco").names), rec["object_set_hash"]) == []


def test_the_planner_and_the_readers_are_typed_with_the_record():
    from comco.data import Dataset
    from comco.data.pairing import find_pairs, pair_entry

    def hints(fn):
        return typing.get_type_hints(fn)

    assert hints(Planner.plan)["return"] is SceneRecord
    assert hints(Planner.records)["return"] == typing.Iterator[SceneRecord]
    assert hints(Planner.singles)["return"] == list[SingleRecord]
    assert hints(Dataset.records)["return"] == typing.Iterator[SceneRecord]
    assert hints(Dataset.complete_records)["return"] == list[SceneRecord]
    assert hints(Dataset.singles)["return"] == list[SingleRecord]
    assert hints(pair_entry) == {"record": SceneRecord, "return": PairEntry | None}
    assert hints(find_pairs)["records"] == list[SceneRecord]


def test_check_record_names_each_kind_of_damage():
    rec = next(planner().records())
    names = set(load_object_set("simco").names)
    cases = {
        "missing field 'captions'": lambda r: r.pop("captions"),
        "is not in the object set": lambda r: r["objects"][0].update(name="dragon"),
        "unknown slot": lambda r: r["objects"][0].update(slot="TOP"),
        "size ranks are not": lambda r: r["objects"][0].update(size_rank=7),
        "two objects share a slot": lambda r: r["objects"][1].update(slot=r["objects"][0]["slot"]),
        "not a permutation": lambda r: r["mention_orders"].append([0, 0]),
        "captions for": lambda r: r["captions"]["and"].pop(),
        "has no measurements": None,
        "field 'objects' is a str": lambda r: r.update(objects="cube"),
        "misses 'scale'": lambda r: r["objects"][0].pop("scale"),
    }
    for want, damage in cases.items():
        bad = copy.deepcopy(rec)
        if damage is not None:
            damage(bad)
        problems = check_record(bad, names, rec["object_set_hash"], measured=damage is None)
        assert problems and want in problems[0], (want, problems)
    assert "scale" in OBJECT_KEYS
    assert check_record([1, 2]) == ["a record is a JSON list, not an object"]


def test_largest_and_measured_ranks():
    rec = next(planner().records())
    assert rec["objects"][largest(rec)]["size_rank"] == 0
    assert object_names(rec) == [o["name"] for o in rec["objects"]]
    for i, o in enumerate(rec["objects"]):
        o["measured"] = {"pixels": 100 * (i + 1)}
    assert measured_ranks(rec) == list(reversed(range(len(rec["objects"]))))
