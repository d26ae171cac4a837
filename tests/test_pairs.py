"""Counterfactual minimal pairs (--pairs): each variant changes exactly its factor, the picks are
seeded, pair datasets validate, and bad requests end with one line."""

import json
import subprocess
import sys

import pytest

from comco.errors import UserError
from comco.manifest import load_object_set
from comco.plan import PlanConfig, Planner
from comco.plan.pairs import COMPARED
from comco.record import PAIR_FACTORS, check_record

COMCO = [sys.executable, "-m", "comco.cli"]
SHARED = ("seed", "retry", "index", "camera", "lights", "resolution", "layout", "object_set_hash")


def groups(set_name="simco", n=24, objects=(2, 3, 4), factors=PAIR_FACTORS, **kw):
    cfg = PlanConfig(object_set=set_name, n=n, objects=objects, colors=True, pairs=tuple(factors), **kw)
    recs = list(Planner(cfg, load_object_set(set_name)).records())
    out = {}
    for r in recs:
        out.setdefault(r["pair"]["id"], {})[r["pair"]["factor"]] = r
    return recs, out


def strip(o):
    return {k: o[k] for k in COMPARED}


@pytest.mark.parametrize("set_name", ["simco", "comco"])
def test_each_variant_changes_its_factor_and_nothing_else(set_name):
    recs, by = groups(set_name)
    oset = load_object_set(set_name)
    assert len(recs) == 24 * (1 + len(PAIR_FACTORS))
    for base_id, g in by.items():
        base = g["base"]
        assert base["id"] == base_id and base["pair"] == {"id": base_id, "factor": "base", "changed": []}
        objs = base["objects"]
        large = [o["size_rank"] for o in objs].index(0)
        for factor in PAIR_FACTORS:
            v = g[factor]
            assert v["id"] == f"{base_id}-{factor}" and v["image"] == f"images/{v['id']}.png"
            assert all(v[k] == base[k] for k in SHARED), factor
            assert check_record(v, set(oset.names), oset.hash) == []
            changed = v["pair"]["changed"]
            vo = v["objects"]
            if factor in ("swap-size", "swap-slots", "swap-colors"):
                assert len(vo) == len(objs) and len(changed) == 2
                i, j = changed
                for k in set(range(len(objs))) - {i, j}:
                    assert strip(vo[k]) == strip(objs[k])
                assert [o["name"] for o in vo] == [o["name"] for o in objs]
            if factor == "swap-size":
                assert large in changed
                assert (vo[i]["slot"], vo[j]["slot"]) == (objs[i]["slot"], objs[j]["slot"])
                assert (vo[i]["size_rank"], vo[j]["size_rank"]) == (objs[j]["size_rank"], objs[i]["size_rank"])
                # the planned shares exchange exactly (no object held or shrunk beyond its factor)
                assert (vo[i]["planned_fraction"], vo[j]["planned_fraction"]) == \
                    (objs[j]["planned_fraction"], objs[i]["planned_fraction"])
            if factor == "swap-slots":
                assert (vo[i]["slot"], vo[j]["slot"]) == (objs[j]["slot"], objs[i]["slot"])
                assert [o["size_rank"] for o in vo] == [o["size_rank"] for o in objs]
                assert [o["planned_fraction"] for o in vo] == [o["planned_fraction"] for o in objs]
            if factor == "swap-colors":
                assert (vo[i]["color"], vo[j]["color"]) == (objs[j]["color"], objs[i]["color"])
                assert vo[i]["color"] != vo[j]["color"]
                for k in (i, j):
                    assert {**strip(vo[k]), "color": None} == {**strip(objs[k]), "color": None}
            if factor == "remove":
                assert changed == [] and len(vo) == len(objs) - 1
                left = [strip(o) for o in vo]
                gone = [k for k, o in enumerate(objs) if strip(o) not in left]
                assert len(gone) == 1 and gone[0] != large  # the large object stays
                assert left == [strip(o) for k, o in enumerate(objs) if k != gone[0]]
            if factor in ("add", "count"):
                assert changed == [len(objs)] and len(vo) == len(objs) + 1
                assert [strip(o) for o in vo[:-1]] == [strip(o) for o in objs]
                assert vo[-1]["slot"] not in {o["slot"] for o in objs}
                names = {o["name"] for o in objs}
                assert (vo[-1]["name"] in names) == (factor == "count")


def test_pairs_are_seeded_and_independent_of_batches_and_of_each_other():
    cfg = PlanConfig(object_set="simco", n=30, objects=(2, 3), colors=True, pairs=PAIR_FACTORS)
    p = Planner(cfg, load_object_set("simco"))
    whole = list(p.records())
    assert whole == list(Planner(cfg, load_object_set("simco")).records())
    assert p.plan_group(17) == [r for r in whole if r["index"] == 17]
    # One factor's picks do not depend on which other factors were asked for.
    only = Planner(PlanConfig(object_set="simco", n=30, objects=(2, 3), colors=True, pairs=("swap-slots",)),
                   load_object_set("simco"))
    theirs = {r["id"]: r for r in only.records()}
    mine = {r["id"]: r for r in whole}
    same_attempt = [k for k, r in theirs.items()
                    if r["pair"]["factor"] == "swap-slots" and r["retry"] == mine[k]["retry"]]
    assert same_attempt and all(theirs[k]["objects"] == mine[k]["objects"] for k in same_attempt)


def test_plans_without_pairs_keep_their_configuration():
    plain = PlanConfig(n=5)
    assert "pairs" not in plain.to_dict()
    d = PlanConfig.from_dict({"n": 5, "pairs": "remove,swap-size"}).to_dict()
    assert d["pairs"] == ["swap-size", "remove"]  # PAIR_FACTORS order
    assert PlanConfig.from_dict(d) == PlanConfig(n=5, pairs=("swap-size", "remove"))



def test_the_pairs_planner_version_is_in_the_hash_of_pair_datasets_only(monkeypatch):
    """Another pair planner never resumes a pair dataset; other datasets keep their hash."""
    import comco.data.folder as folder

    plain, paired = PlanConfig(n=5).to_dict(), PlanConfig(n=5, pairs=("remove",)).to_dict()
    before = folder.config_hash(plain, "x"), folder.config_hash(paired, "x")
    monkeypatch.setattr(folder, "PAIRS_VERSION", folder.PAIRS_VERSION + 1)
    assert folder.config_hash(plain, "x") == before[0]
    assert folder.config_hash(paired, "x") != before[1]


@pytest.mark.parametrize("args, says", [
    (["--pairs", "swap-colors"], "add --colors"),
    (["--pairs", "swap-size", "--layout", "equal"], "equal layout"),
    (["--pairs", "count", "--objects", "5"], "no free slot"),
    (["--pairs", "add", "--objects", "3-5"], "no free slot"),
    (["--pairs", "remove", "--objects", "1-2"], "at least 2 objects"),
    (["--pairs", "swap-size,shuffle"], "known: swap-size, swap-slots, swap-colors, remove, add, count"),
])
def test_bad_pair_requests_end_with_one_line(tmp_path, args, says):
    r = subprocess.run([*COMCO, "plan", "--n", "3", *args, "--out", str(tmp_path / "d")], capture_output=True,
                       text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert says in r.stderr and not (tmp_path / "d" / "scenes.jsonl").exists()


def test_pair_datasets_validate_and_damage_is_named(tmp_path):
    from comco.data import run_plan, validate_dataset

    out = tmp_path / "d"
    cfg = PlanConfig(object_set="simco", n=6, objects=(2, 3), colors=True, pairs=PAIR_FACTORS)
    run_plan(cfg, out, quiet=True)
    info = json.loads((out / "dataset.json").read_text())
    assert info["config"]["pairs"] == list(PAIR_FACTORS)
    assert info["counts"]["images"] == 6 * 7 and info["counts"]["scenes"] == 6
    assert validate_dataset(out) == []
    lines = (out / "scenes.jsonl").read_text().splitlines()

    def damaged(edit):
        recs = [json.loads(x) for x in lines]
        edit(recs)
        (out / "scenes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        return " | ".join(validate_dataset(out))

    assert "changed" in damaged(lambda rs: rs[3]["pair"].update(changed=[7]))
    assert "no base record" in damaged(lambda rs: rs[1]["pair"].update(id="999999") or rs[1].update(id="999999-"
                                                                                                       "swap-size"))
    assert "missing" in damaged(lambda rs: rs.pop(2))
    assert "appears twice" in damaged(lambda rs: rs[1]["objects"][1].update(name=rs[1]["objects"][0]["name"]))
    assert "no 'pair' entry" in damaged(lambda rs: rs[0].pop("pair"))
    (out / "scenes.jsonl").write_text("\n".join(lines) + "\n")
    assert validate_dataset(out) == []


def test_a_variant_that_cannot_be_made_replans_its_base():
    # comco's objects are half natural-coloured: many scenes have no two colours to swap and are
    # drawn again with new objects; every kept base then has its swap.
    recs, by = groups("comco", n=30, objects=(2,), factors=("swap-colors",))
    assert any(g["base"]["retry"] >= 20 for g in by.values())
    assert all(set(g) == {"base", "swap-colors"} for g in by.values())


def test_too_many_objects_for_count_is_refused_in_the_planner_too():
    with pytest.raises(UserError, match="no free slot"):
        Planner(PlanConfig(objects=(4, 5), pairs=("count",)), load_object_set("simco"))


# -- the factor captions ---------------------------------------------------------------------

def test_factor_templates_are_written_only_in_pair_datasets_or_when_named():
    oset = load_object_set("simco")
    plain = Planner(PlanConfig(object_set="simco", n=2, objects=(2,)), oset).plan(0)
    assert set(plain["captions"]) == {"and", "articles", "photo", "long"}
    named = Planner(PlanConfig(object_set="simco", n=2, objects=(2,), captions=("counts", "relations")), oset).plan(0)
    assert set(named["captions"]) == {"counts", "relations"}
    paired = Planner(PlanConfig(object_set="simco", n=2, objects=(2,), layout="equal", pairs=("remove",)), oset)
    assert "sizes" not in paired.plan(0)["captions"]  # no sizes to name in the equal layout
    assert {"relations", "relations_depth", "counts"} <= set(paired.plan(0)["captions"])
    with pytest.raises(UserError, match="different sizes"):
        Planner(PlanConfig(object_set="simco", n=2, layout="equal", captions=("sizes",)), oset)


def test_size_words_follow_planned_ranks_and_swap_with_the_sizes():
    recs, by = groups("simco", factors=("swap-size",))
    for g in by.values():
        for rec in g.values():
            for order, cap in zip(rec["mention_orders"], rec["captions"]["sizes"]):
                words = [("large" if rec["objects"][i]["size_rank"] == 0 else "small") for i in order]
                assert cap == " and ".join(f"a {w} {rec['objects'][i]['name']}" for w, i in zip(words, order))
        assert g["base"]["captions"]["sizes"] != g["swap-size"]["captions"]["sizes"]


def test_relations_name_the_first_two_mentioned_and_flip_with_their_slots():
    from comco.plan.placement import SLOT_UV

    recs, by = groups("comco", factors=("swap-slots", "swap-size"))
    flipped = 0
    for g in by.values():
        base, swapped = g["base"], g["swap-slots"]
        i, j = swapped["pair"]["changed"]
        for k, order in enumerate(base["mention_orders"]):
            a, b = (base["objects"][x] for x in order[:2])
            cap = base["captions"]["relations"][k]
            assert cap.startswith(f"the {a['name']} is ") and cap.endswith(f" the {b['name']}")
            (ua, va), (ub, vb) = SLOT_UV[a["slot"]], SLOT_UV[b["slot"]]
            if abs(ua - ub) >= abs(va - vb) / 2:
                assert ("to the left of" in cap) == (ua < ub)
            else:
                assert ("above" in cap) == (va < vb)
                assert ("behind" in base["captions"]["relations_depth"][k]) == (va < vb)
            if set(order[:2]) == {i, j}:  # the swapped pair named first: the relation turns round
                assert cap != swapped["captions"]["relations"][k]
                flipped += 1
        # a size swap moves no object: the relations stay
        assert base["captions"]["relations"] == g["swap-size"]["captions"]["relations"]
    assert flipped > 10


def test_counts_use_the_manifest_plurals_and_one_phrase_per_name():
    oset = load_object_set("comco")
    recs, by = groups("comco", factors=("count",))
    for g in by.values():
        v = g["count"]
        twin = v["objects"][-1]["name"]
        for cap in v["captions"]["counts"]:
            assert f"two {oset.get(twin).plural}" in cap
            assert cap.count(" and ") == len(v["objects"]) - 2
        for cap in g["base"]["captions"]["counts"]:
            assert "two " not in cap


def test_whole_word_mention_checks_read_the_factor_captions():
    from comco.plan.captions import load_templates
    from comco.probes.words import contains_word, mention_sequence

    book = load_templates()
    fixed = " ".join([*book.relation_words.values(), *book.count_words.values(),
                      *(w for t in book.templates.values() for w in t.size_words),
                      *(" ".join([t.caption, t.object, t.several, t.single]) for t in book.templates.values())])
    for set_name in ("simco", "comco"):
        oset = load_object_set(set_name)
        forms = {o.name: [o.plural, *o.synonyms] for o in oset.objects}
        # no word a template adds is the name of an object, so a match is always an object
        assert not [f for o in oset.objects for f in [o.name, *forms[o.name]] if contains_word(fixed, f)]
        recs, by = groups(set_name, n=12, factors=("count", "add"))
        for rec in recs:
            names = [o["name"] for o in rec["objects"]]
            for k, order in enumerate(rec["mention_orders"]):
                ordered = list(dict.fromkeys(names[i] for i in order))
                for t in ("sizes", "counts"):
                    assert mention_sequence(rec["captions"][t][k], oset.names, forms) == ordered, t
                assert mention_sequence(rec["captions"]["relations"][k], oset.names, forms) == \
                    list(dict.fromkeys(names[i] for i in order[:2]))
