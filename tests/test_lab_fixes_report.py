"""Issue 39 item 1: the fixes' table the lab report opens with reads each fix against the plain
contrastive model of its seed by the one rule (pure Python: planted probe results, no stage runs)."""

from __future__ import annotations

import pytest

from comco.lab.keys import finetune_key, probe_key, scratch_key
from comco.lab.report.context import SetContext
from comco.lab.report.fixes import fixes_sections, half_truths
from comco.lab.report.verdict import SUPPORTED
from comco.report import Doc

SEEDS = (0, 1, 2)


def shares(first: float, n: int = 4, trials: int = 240) -> list[dict]:
    """Per-role values whose first share is `first` (the rest split evenly)."""
    rest = (1 - first) / (n - 1)
    return [{"role": r, "value": v, "n": trials, "chance": 1 / n}
            for r, v in zip(("1st", "2nd", "3rd", "4th"), [first] + [rest] * (n - 1))]


def result(tor: float, ior: float = 0.5, r1: float = 0.9, truths: tuple = (0.8, 0.6)) -> dict:
    return {"tor": {"and": {"4": {"unconditional": shares(tor)}}},
            "ior": {"4": {"unconditional": shares(ior)}},
            "sensitivity": {"4": shares(0.3)},
            "gates": {"set R@1": {"value": r1, "n": 240}},
            "half_truths": {"all": [{"role": k, "value": v, "n": 240} for k, v in
                                    zip(("absent object", "wrong count"), truths)]}}


class PlantedRun:
    def __init__(self, results: dict):
        self.planted = results

    def has(self, key) -> bool:
        return key in self.planted

    def results(self, key) -> dict:
        return self.planted[key]


def settings(variants: list[dict], finetunes: list[dict]) -> dict:
    return {"data": {"order_bias": [0.0, 1.0]}, "scratch": {"seeds": list(SEEDS), "variants": variants},
            "finetune": {"order_bias": 1.0, "variants": finetunes}, "gates": {"min_passing": 2}}


def planted(tmp_path, fail=()):
    """The plain model is order-biased at p = 1 (TOR first 80 %); orderaug removes it (30 %) at
    a cost of ~5 points of set R@1; siglip changes nothing but noise; the free Long-CLIP
    fine-tune lowers TOR a little against the frozen one. `fail`: probe keys below their gates."""
    o, res = "simco", {}
    noise = (-0.01, 0.0, 0.01)
    for seed, e in zip(SEEDS, noise):
        for p, tor in ((1.0, 0.80), (0.0, 0.26)):
            res[probe_key(scratch_key(o, p, seed))] = result(tor + e, r1=0.92 + e)
            res[probe_key(scratch_key(o, p, seed, "orderaug"))] = result(0.30 + e / 2, r1=0.87 + e)
            res[probe_key(scratch_key(o, p, seed, "siglip"))] = result(tor - e, r1=0.92)
        res[probe_key(finetune_key(o, "longclip", seed))] = result(0.78 + e, r1=0.90)
        res[probe_key(finetune_key(o, "longclip-free", seed))] = result(0.70 + e, r1=0.90)
    s = settings([{"name": "orderaug", "objective": "orderaug"}, {"name": "siglip", "objective": "siglip"}],
                 [{"name": "longclip", "kind": "longclip"}, {"name": "longclip-free", "kind": "longclip",
                                                             "freeze": False}])
    c = SetContext(Doc(), run=PlantedRun(res), fig=tmp_path, oset=o, s=s)
    return c, {k for k in res if k not in fail}


def lead_rows(c: SetContext) -> dict:
    (lead,) = c.leads
    (table,) = [b for b in lead.blocks if b[0] == "table"]
    header, rows = table[1], table[2]
    return {(r[0].split(":")[0], r[1]): dict(zip(header, r)) for r in rows}


def test_the_lead_table_reads_each_fix_by_the_one_rule(tmp_path):
    c, passing = planted(tmp_path)
    numbers = fixes_sections(c, passing, [3, 4])
    rows = lead_rows(c)
    aug = rows["orderaug", "1"]
    tor, ior, r1 = ("Δ TOR first share (points)", "Δ IOR largest share (points)", "Δ set R@1 (points)")
    assert aug[tor].startswith("-50.") and aug[tor].endswith(": lowers")
    assert aug[r1].endswith(": lower")
    assert aug[ior] == "+0.0 [+0.0, +0.0]: no change measurable"
    assert rows["siglip", "1"][tor].endswith("no change measurable")
    assert rows["longclip-free vs longclip", "1"][tor].endswith(": lowers")
    assert set(aug) == {"fix", "p", tor, ior, r1}
    assert ("orderaug", "0") in rows and ("longclip", "0") not in rows  # fine-tunes have one p
    assert (tmp_path / "simco-fixes.png").is_file()
    entry = numbers["arms"]["orderaug p1"]["figures"]["TOR first share"]
    assert entry["verdict"]["verdict"] == SUPPORTED and entry["reading"] == "lowers"
    assert entry["change"]["n"] == 3
    found = {f.question: f for f in c.findings}
    q = next(q for q in found if q.startswith("Does orderaug") and "TOR first share" in q)
    assert found[q].judgement.verdict == SUPPORTED
    assert not any("p = 0" in q and "siglip" in q for q in found)  # the findings list holds the biased p only


def test_a_model_below_its_gates_drops_its_seed_from_the_pair(tmp_path):
    fail = {probe_key(scratch_key("simco", 1.0, 2, "orderaug"))}
    c, passing = planted(tmp_path, fail)
    numbers = fixes_sections(c, passing, [4])
    entry = numbers["arms"]["orderaug p1"]
    assert entry["passing"] == [2, 3]
    assert entry["figures"]["TOR first share"]["change"]["n"] == 2
    table = next(b for b in c.doc.blocks if b[0] == "table")
    assert ["orderaug", "1", "2 of 3"] == table[2][2][:3]  # after the plain rows of p = 1 and 0


def test_one_passing_pair_cannot_answer(tmp_path):
    fail = {probe_key(scratch_key("simco", 1.0, s, "orderaug")) for s in (1, 2)}
    c, passing = planted(tmp_path, fail)
    fixes_sections(c, passing, [4])
    cell = lead_rows(c)["orderaug", "1"]["Δ TOR first share (points)"]
    assert "cannot answer: 1 passing model(s), fewer than 2" in cell


def test_a_recipe_without_fixes_has_no_fixes_table(tmp_path):
    c, passing = planted(tmp_path)
    c.s["scratch"]["variants"] = [{"name": "bidir", "text_attention": "bidirectional"}]
    assert fixes_sections(c, passing, [4]) == {} and c.leads == []


@pytest.mark.parametrize("groups, expected", [
    ({"all": [{"value": 0.8, "n": 10}, {"value": 0.6, "n": 10}]}, 0.7),
    ({"3": [{"value": 0.5, "n": 10}], "4": [{"value": 0.9, "n": 10}]}, 0.9),  # no pooled group: the asked count
    ({"all": [{"value": 0.8, "n": 10}, {"value": None, "n": 0}]}, 0.8),  # a kind the data cannot build
    ({}, None),
])
def test_half_truths_is_the_mean_over_the_kinds(groups, expected):
    got = half_truths({"half_truths": groups} if groups else {}, "4")
    assert got == pytest.approx(expected) if expected is not None else got is None


def test_the_half_truth_probe_is_asked_by_the_fixes_recipe_only():
    from comco.lab.graph import build_stages
    from comco.lab.recipe import load_recipe

    def probes(name):
        recipe = load_recipe(f"recipes/{name}.toml", "smoke")
        return [st for st in build_stages(recipe) if st.kind == "probe" and not st.config.get("prior")
                and not st.config.get("shift")]

    assert all(st.config.get("half_truths") is True for st in probes("fixes"))
    assert not any("half_truths" in st.config for st in probes("order-bias"))


def test_the_findings_open_with_the_lead_table(tmp_path):
    from comco.lab.report.findings import findings_section

    c, passing = planted(tmp_path)
    fixes_sections(c, passing, [4])
    doc = Doc()
    findings_section(doc, [], c.findings, many_sets=False, leads=c.leads)
    kinds = [b[0] for b in doc.blocks]
    assert kinds[0] == "h" and doc.blocks[1][1].startswith("**Which fix moves which bias")
    assert kinds[2] == "table"
    detail = [b for b in c.doc.blocks if b[0] == "table"][1]  # the paired changes, every figure
    assert {r[2] for r in detail[2]} >= {"plain contrastive, p = 1 (its base)", "longclip"}


def test_a_fix_without_a_passing_model_says_why_its_cells_are_empty(tmp_path):
    fail = {probe_key(scratch_key("simco", 1.0, s, "siglip")) for s in SEEDS}
    c, passing = planted(tmp_path, fail)
    fixes_sections(c, passing, [4])
    cell = lead_rows(c)["siglip", "1"]["Δ TOR first share (points)"]
    assert cell == "no pair to compare: 0 fix and 3 plain model(s) passed their gates"
