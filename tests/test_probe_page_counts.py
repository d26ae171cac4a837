"""Numbers that cannot be read say so: a probe page cell built from too few trials shows its
count, every "–" carries the mark of a reason that follows its table, a `--probes pairs`
run's headline holds its pair scores, and scenes and pair variants are counted apart."""

from __future__ import annotations

import re
from pathlib import Path

from support.pairs import pair_records

from comco.probes.page import page
from comco.probes.probe_data import ProbeData
from comco.probes.report import MIN_TRIALS, markdown, tables
from comco.probes.runner import _scene_counts

MARK = re.compile(r"–([⁰¹²³⁴⁵⁶⁷⁸⁹]+)")


def stat(role, acc, n, chance=0.25):
    nan = float("nan")
    return {"role": role, "acc": acc if n else nan, "lo": acc if n else nan, "hi": acc if n else nan, "n": n,
            "clusters": n, "chance": chance if n else None}


def tor_group(kept: int, queries: int) -> dict:
    roles = ("1st", "2nd", "3rd", "4th")
    return {"key": "and, 4 objects, bare-name gallery", "template": "and", "n_objects": 4, "queries": queries,
            "kept_conditional": kept, "skipped": 0, "gallery": 18,
            "metrics": {"conditional": [stat(r, 0.5, kept) for r in roles],
                        "unconditional": [stat(r, 0.3, queries, 1 / 18) for r in roles]}}


def results(probes: dict, asked=None, dataset=None) -> dict:
    models = [{"label": m, "name": "ViT-S-32", "pretrained": "none", "identity": m}
              for m in next(iter(probes.values()))]
    return {"seed": 0, "n_boot": 20, "options": {"text_only": False, "probes": asked}, "skipped": {},
            "dataset": dataset or {"root": "x", "hash": "h", "records": 8, "scenes": 8, "variants": 0, "gallery": 18},
            "models": models, "probes": probes}


def headline_rows(md: str) -> list[list[str]]:
    part = md.split("## Headline", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in ln.strip("|").split(" | ")] for ln in part.splitlines() if ln.startswith("| m (")]


def check_every_dash_has_its_reason(md: str) -> int:
    """Each marked "–" in a table has its footnote in the paragraph after that table; returns the marks seen."""
    seen = 0
    for block in re.split(r"\n(?=#)", md):
        for table, after in re.findall(r"((?:^\|.*\n)+)\n?([^\n|#][^\n]*)?", block, flags=re.M):
            marks = set(MARK.findall(table))
            bare = [c for ln in table.splitlines() for c in ln.strip("|").split(" | ") if c.strip() == "–"]
            assert not bare, f"a '–' without its reason:\n{table}"
            for m in marks:
                assert f"{m} " in after, f"mark {m} has no footnote after\n{table}"
            seen += len(marks)
    return seen


def test_a_headline_share_from_too_few_kept_queries_says_so_and_the_minimum_is_stated_once(tmp_path):
    res = results({"tor": {"m (none)": [tor_group(kept=2, queries=32)]}}, asked=["tor"])
    md = page(res, tables(res), {}).markdown(tmp_path)
    (row,) = headline_rows(md)
    assert row[3] == "2 of 32 kept: too few to read"  # not "50.0 [50.0, 50.0]"
    assert row[5] == "30.0 [30.0, 30.0]"  # the raw rate over all 32 queries is readable
    assert md.count(f"fewer than {MIN_TRIALS} trials") == 1
    assert "50.0 [" not in md  # neither in the headline nor in the TOR tables
    assert "2 of 32 kept: too few to read" in markdown("tor", tables(res)["tor"], res)


def test_a_share_from_no_kept_query_is_a_dash_with_its_reason(tmp_path):
    res = results({"tor": {"m (none)": [tor_group(kept=0, queries=8)]}}, asked=["tor"])
    md = page(res, tables(res), {}).markdown(tmp_path)
    (row,) = headline_rows(md)
    assert MARK.fullmatch(row[3]) and MARK.fullmatch(row[4])  # share and its chance
    assert "0 of 8 kept: no query had its top-n retrieved items exactly the n objects present" in md
    assert check_every_dash_has_its_reason(md) >= 3  # share, chance, published column
    assert check_every_dash_has_its_reason(markdown("tor", tables(res)["tor"], res)) == 1  # one reason, every role


def test_enough_kept_queries_show_the_number():
    res = results({"tor": {"m (none)": [tor_group(kept=MIN_TRIALS, queries=40)]}}, asked=["tor"])
    (row,) = headline_rows(page(res, tables(res), {}).markdown(Path(".")))
    assert row[3] == "50.0 [50.0, 50.0]"


def pair_group(factor, n_objects, trials, pairs):
    return {"key": f"{factor} (and captions), " + (f"{n_objects} objects" if n_objects else "all object counts"),
            "factor": factor, "template": "and", "n_objects": n_objects, "queries": trials, "pairs": pairs,
            "identical": 0, "no_captions": 0, "orphans": 0,
            "metrics": {"scores": [stat("text", 0.75, trials), stat("image", 0.5, trials),
                                   stat("group", 0.25, trials, 1 / 6), stat("matching", 0.625, trials, 0.5)]}}


def test_a_pairs_run_headline_holds_the_pair_scores_it_measured(tmp_path):
    groups = [pair_group("remove", 2, 24, 12), pair_group("remove", 3, 24, 12), pair_group("remove", None, 48, 24),
              pair_group("swap-size", 2, 6, 3)]
    res = results({"pairs": {"m (none)": groups}}, asked=["pairs"],
                  dataset={"root": "x", "hash": "h", "records": 56, "scenes": 8, "variants": 48, "gallery": 18})
    md = page(res, tables(res), {}).markdown(tmp_path)
    rows = headline_rows(md)
    assert "not measured" not in md.split("## Headline", 1)[1].split("\n## ", 1)[0]  # no TOR / IOR rows
    assert rows == [["m (none)", "remove (and captions)", "75.0 [75.0, 75.0]", "50.0 [50.0, 50.0]",
                     "25.0 [25.0, 25.0]", "62.5 [62.5, 62.5]", "48 trials, 24 pairs"],
                    ["m (none)", "swap-size (and captions), 2 objects", *["6 trials: too few to read"] * 4,
                     "6 trials, 3 pairs"]]
    assert "8 scenes, 48 pair variants" in md and "56 scenes" not in md
    check_every_dash_has_its_reason(md)


def test_scenes_and_variants_are_counted_apart():
    records = pair_records(n=4, objects=(2,))  # four bases, three variants each
    data = ProbeData(root=Path("/p"), info={}, records=records, singles=[], names=[], image_path=lambda r: r)
    assert _scene_counts(data) == {"scenes": 4, "variants": 12}
    plain = [r for r in records if r["pair"]["factor"] == "base"]
    assert _scene_counts(ProbeData(root=Path("/p"), info={}, records=plain, singles=[], names=[],
                                   image_path=lambda r: r)) == {"scenes": 4, "variants": 0}


def test_the_page_has_a_table_of_contents_and_folds_each_probes_tables(tmp_path):
    res = results({"tor": {"m (none)": [tor_group(kept=24, queries=40)]}}, asked=["tor"])
    doc = page(res, tables(res), {})
    md, html = doc.markdown(tmp_path), doc.html("t")
    sections = [ln[3:] for ln in md.splitlines() if ln.startswith("## ")]
    assert sections[:2] == ["Headline", "TOR: text-based object retrieval, by mention position"]
    anchors = re.findall(r"^- \[([^]]+)\]\(#([^)]+)\)$", md, flags=re.M)
    assert [a for a, _ in anchors] == sections
    ids = re.findall(r"<h2 id='([^']+)'>", html)
    assert [s for _, s in anchors] == ids and all(f"href='#{i}'" in html for i in ids)
    tor = md.split("## TOR", 1)[1]
    folded = tor.split("<details><summary>", 1)[1].split("</details>", 1)[0]
    assert folded.startswith("2 tables, one per group and metric")
    assert "### and, 4 objects, bare-name gallery - conditional" in folded
    assert html.count("<details>") == 1 and "<summary>2 tables, one per group" in html


def clustered(role, acc, n, clusters):
    return {**stat(role, acc, n), "lo": acc, "hi": acc, "clusters": clusters}


def test_too_few_counts_the_units_the_bootstrap_resamples():
    """Issue 37 item 6: 32 trials from 8 pairs showed "0.0 [0.0, 0.0]" (the interval of 8 draws
    read as one of 32); the cell now says how few units there are, and the headline skips it."""
    from comco.probes.report import cell, readable
    from comco.report import Dashes

    few = clustered("1st", 0.0, 32, 8)
    assert cell(few, Dashes()) == "32 trials from 8 resampled units: too few to read"
    assert not readable(few)
    many = clustered("1st", 0.5, 64, 24)  # enough units: the number and its interval
    assert cell(many, Dashes()) == "50.0 [50.0, 50.0]" and readable(many)
    legacy = {"role": "1st", "acc": 0.5, "lo": 0.4, "hi": 0.6, "n": 40}  # results.json from before clusters
    assert readable(legacy)


def test_a_page_of_mostly_too_few_cells_ends_with_the_size_to_render():
    roles = ("1st", "2nd", "3rd", "4th")
    group = {"key": "and, 4 objects, bare-name gallery", "template": "and", "n_objects": 4, "queries": 32,
             "kept_conditional": 32, "skipped": 0, "gallery": 18,
             "metrics": {"unconditional": [clustered(r, 0.25, 32, 8) for r in roles]}}
    res = results({"tor": {"m (none)": [group]}}, dataset={"root": "x", "hash": "h", "records": 8, "scenes": 8,
                                                            "variants": 0, "gallery": 18})
    md = page(res, tables(res), {}).markdown(Path("."))
    last = md.strip().splitlines()[-1]
    assert last == ("4 of 4 cells are too few to read (under 20 resampled units); to read most of them, render "
                    "about 50 scenes (`comco render --n 50`; this dataset has 8).")
    readable_group = {**group, "metrics": {"unconditional": [clustered(r, 0.25, 400, 100) for r in roles]}}
    res = results({"tor": {"m (none)": [readable_group]}})
    assert "cells are too few to read" not in page(res, tables(res), {}).markdown(Path("."))
