"""Issue 25 item 6: what a user wrote (template, set, recipe names, a recipe's description,
model paths) reaches report.md and the per-probe .md tables escaped, once, in comco.report's
writers: no raw HTML (an `<img onerror=...>` or a `<script>` would run in a Markdown viewer
that renders HTML) and no `|` that ends a table cell early. report.html escapes already and
must not escape twice."""

from __future__ import annotations

import re

import pytest

from comco.report import Doc, markdown_table, md_cell, md_line, md_text
from comco.report.tables import csv_text

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert(document.cookie)</script>"
HOSTILE = [IMG, SCRIPT, "set|with|pipes", "two\nlines | and a pipe", "<!-- hidden -->", "<?php ?>", "</table>"]
RAW_HTML = re.compile(r"<[A-Za-z/!?]")  # what CommonMark would pass through as HTML


def cells(line: str) -> list[str]:
    """A GFM table row split as GitHub splits it: on every "|" not preceded by a backslash."""
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def table_rows(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("|")]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_table_keeps_its_columns_and_no_raw_html(text):
    md = markdown_table(["name", text, "n"], [[text, text, 3], {"name": text, "n": 4}])
    assert not RAW_HTML.search(md), md
    rows = table_rows(md)
    assert len(rows) == 4 and all(len(cells(r)) == 3 for r in rows), md


def test_a_document_escapes_every_block_it_writes(tmp_path):
    figure = tmp_path / "plot.png"
    figure.write_bytes(b"\x89PNG\r\n\x1a\n")
    doc = Doc()
    doc.h(1, f"comco lab: {IMG} (small scale)")
    doc.p(f"{SCRIPT}\n\nrecipe described as {IMG}, with `code` and **bold** kept")
    doc.h(2, f"Object set `{SCRIPT}`")
    doc.table(["template", "share"], [[f"{IMG}|x", "51.2"], ["a|b", "3"]])
    doc.img(figure, f"plot of {IMG} ] [")
    md = doc.markdown(tmp_path)
    assert not RAW_HTML.search(md), md
    assert all(len(cells(r)) == 2 for r in table_rows(md)), md
    assert "`code` and **bold** kept" in md  # Markdown's own marks are not escaped
    assert "&lt;img src=x onerror=alert(1)>" in md  # shown as written, not dropped
    assert "](plot.png)" in md and md.count("![") == 1


def test_the_html_page_escapes_once(tmp_path):
    doc = Doc()
    doc.h(1, IMG)
    doc.table(["a"], [[SCRIPT]])
    page = doc.html(IMG)
    assert "<img src=x" not in page and "<script>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&amp;lt;" not in page


def test_text_that_only_looks_like_html_stays_readable():
    assert md_text("p < 0.05, 3<4, a -> b, x <= y") == "p < 0.05, 3<4, a -> b, x <= y"
    assert md_line("one\ntwo") == "one two"
    assert md_cell("a|b") == "a\\|b"
    assert csv_text(["a"], [[IMG]]) == f"a\n{IMG}\n"  # CSV is data, not Markdown: kept as it is


def test_the_per_probe_tables_escape_group_names_and_model_labels():
    from comco.probes.report import markdown

    stat = {"role": "first", "acc": 0.5, "lo": 0.4, "hi": 0.6, "n": 10}
    tab = {"group": f"template {SCRIPT}|x", "metric": f"share {IMG}", "n_objects": None, "roles": ["first"],
           "rows": {f"hf:/models/{IMG}|evil": {"first": stat}}, "notes": {}}
    results = {"dataset": {"root": f"/data/{IMG}", "hash": "abc"}, "seed": 0}
    md = markdown("tor", [tab], results)
    assert not RAW_HTML.search(md), md
    assert all(len(cells(r)) == 3 for r in table_rows(md)), md
    assert "## template &lt;script>" in md
