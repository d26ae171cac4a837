"""`comco eval`'s tables say when a recall came from too few queries (the probe page's minimum,
comco.report.MIN_TRIALS) and give every empty cell its reason; the CSV keeps every number
(pure Python: planted results, no model)."""

from __future__ import annotations

import csv
import re

from comco.probes.natural.analyses import ANALYSES
from comco.probes.natural.report import write_analyses_report, write_retrieval_report
from comco.report import MIN_TRIALS

MARK = re.compile(r"–[⁰¹²³⁴⁵⁶⁷⁸⁹]+")


def recalls(v: float) -> dict:
    return {"R@1": v, "R@5": v, "R@10": v, "R@1_ci95": [v - 0.1, v + 0.1]}


def payload(n_texts: int, n_images: int) -> dict:
    return {"benchmark": "coco", "benchmark_about": "planted", "protocol": "first5", "protocol_about": "planted",
            "split": {"split": "val", "n_images": n_images, "n_captions": n_texts, "skipped": {}},
            "models": [{"label": "m", "result": {"protocol": "first5", "n_texts": n_texts, "n_images": n_images,
                                                 "t2i": recalls(0.5), "i2t": recalls(0.4)}}],
            "published": [{"source": "published (paper)", "model": "CLIP", "t2i": {"R@1": 0.3}, "i2t": {"R@1": 0.5}}]}


def table_rows(md: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines()
            if line.startswith("|") and not line.startswith("|---")][1:]


def every_dash_has_its_reason(md: str) -> None:
    for row in table_rows(md):
        for text in row:
            if "–" in text:
                assert MARK.fullmatch(text), (row, text)
                assert f"{text[1:]} " in md.split(text, 1)[1], text  # its reason follows the table


def test_retrieval_from_too_few_queries_says_so_and_every_dash_has_its_reason(tmp_path):
    write_retrieval_report(tmp_path, payload(n_texts=40, n_images=8))
    md = (tmp_path / "retrieval.md").read_text()
    measured, published = table_rows(md)
    assert measured[3] == "50.0" and measured[4] == "40.0-60.0"  # 40 text queries: T2I read
    assert measured[7:11] == ["8 image queries: too few to read"] * 4  # 8 image queries: I2T not
    assert md.count(f"fewer than {MIN_TRIALS} queries") == 1
    assert MARK.fullmatch(published[5]) and "the paper publishes R@1 only" in md
    every_dash_has_its_reason(md)
    row = next(csv.DictReader((tmp_path / "retrieval.csv").open()))
    assert row["I2T R@1"] == "40.0"  # the CSV keeps the number
    assert measured[-1] == "12.5" and row["chance R@1"] == "12.5"  # chance R@1: 1 of 8 images
    page = (tmp_path / "retrieval.html").read_text()  # the same table on an HTML page, figure inline
    assert "<th>T2I R@1 95% CI</th>" in page and "<th>chance R@1</th>" in page and "<td>40.0-60.0</td>" in page
    assert "8 image queries: too few to read" in page and "data:image/png;base64," in page


def test_analyses_from_too_few_captions_say_so(tmp_path):
    name = next(iter(ANALYSES))
    variants = list(ANALYSES[name].variants)
    d = ANALYSES[name].direction
    p = payload(n_texts=12, n_images=12)
    p["models"] = [{"label": "m", "analyses": {name: {
        "direction": d, "protocol": "first5", "n_captions": 12, "excluded_captions": 0, "excluded_because": "",
        "variants": {v: {d: recalls(0.5)} for v in variants}}}}]
    p["published"] = {name: [{"source": "published (paper)", "model": "CLIP", "r1": {variants[0]: 0.3}}]}
    write_analyses_report(tmp_path, p)
    md = (tmp_path / "analyses.md").read_text()
    measured, published = table_rows(md)
    assert measured[2:2 + len(variants)] == ["12 captions: too few to read"] * len(variants)
    assert published[2] == "30.0" and all(MARK.fullmatch(c) for c in published[3:])
    assert measured[-2:] == ["12", "8.3"]  # the caption count and chance R@1 (1 of 12 images)
    every_dash_has_its_reason(md)
    assert (tmp_path / "analyses.html").read_text().count("<th>chance R@1</th>") == 1


def test_analyses_tables_carry_the_interval_their_csv_has(tmp_path):
    name = next(iter(ANALYSES))
    variants = list(ANALYSES[name].variants)
    d = ANALYSES[name].direction
    p = payload(n_texts=40, n_images=40)
    p["models"] = [{"label": "m", "analyses": {name: {
        "direction": d, "protocol": "first5", "n_captions": 40, "excluded_captions": 0, "excluded_because": "",
        "variants": {v: {d: recalls(0.5)} for v in variants}}}}]
    p["published"] = {name: []}
    write_analyses_report(tmp_path, p)
    measured, = table_rows((tmp_path / "analyses.md").read_text())
    assert measured[2:2 + len(variants)] == ["50.0 [40.0-60.0]"] * len(variants)
    assert measured[-2:] == ["40", "2.5"]
    page = (tmp_path / "analyses.html").read_text()
    assert "<td>50.0 [40.0-60.0]</td>" in page and "<th>chance R@1</th>" in page
