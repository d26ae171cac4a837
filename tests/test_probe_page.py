"""The probe page (report.md, report.html): headline numbers from results.json, the
leaderboard order, published rows beside (never instead of) measured ones, and one
combined figure per probe that the page embeds."""

from __future__ import annotations

import base64
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.probes import SET, FakeEmbedder, invoke, make_dataset, one_hot, planned_data, small_set, tiny_open_clip

from comco.probes.page import headline, headline_group, leaderboard, page, write_reports
from comco.probes.report import fmt
from comco.probes.tor import tor_dataset
from comco.probes.words import mention_sequence
from comco.report.published import published_model

ROOT = Path(__file__).resolve().parents[1]


def table_after(md: str, heading: str) -> list[dict]:
    """The Markdown table that follows `heading`, as dicts keyed by its header."""
    lines = md.split(heading + "\n", 1)[1].splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    rows = []
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip("|").split(" | ")])
    header, body = rows[0], rows[2:]
    return [dict(zip(header, r)) for r in body]


def pct_cell(stat: dict) -> str:
    """A share with its interval as the results say it, written independently of the page code."""
    if stat["acc"] is None or math.isnan(stat["acc"]):
        return "–"
    return f"{100 * stat['acc']:.1f} [{100 * stat['lo']:.1f}, {100 * stat['hi']:.1f}]"


def shown(stat: dict, of: int | None = None, unit: str = "queries") -> str:
    """What the page shows for a stat: the number from 20 trials on, its count below, a marked dash for none."""
    if stat["n"] == 0:
        return "–"
    if stat["n"] < 20:
        return f"{stat['n']} of {of} kept: too few to read" if of is not None else \
            f"{stat['n']} {unit}: too few to read"
    if 0 < stat.get("clusters", stat["n"]) < 20:  # the bootstrap resamples images: 20 of them at least
        return f"{stat['n']} {unit} from {stat['clusters']} resampled units: too few to read"
    return pct_cell(stat)


def unmarked(text: str) -> str:
    return text.rstrip("⁰¹²³⁴⁵⁶⁷⁸⁹")


# ---------------------------------------------------------------- end to end: two tiny random models


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    pytest.importorskip("torch")
    import torch

    from comco.models import save_checkpoint

    tmp = tmp_path_factory.mktemp("page")
    # five names: a random model's top-4 often is exactly the 4 objects present, so shares have trials
    data = make_dataset(tmp / "data", n=24, objects=(3, 4), object_set=str(small_set(tmp / "set")))
    labels = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        model, spec = tiny_open_clip()
        labels.append(f"ckpt:{save_checkpoint(tmp / f'tiny{seed}.pt', kind='scratch', model=model, model_spec=spec)}")
    out = tmp / "out"
    r = invoke(data, "--model", labels[0], "--model", labels[1], "--probes", "tor,ior", "--templates", "and,photo",
               "--bootstrap", "50", "--no-cache", "--quiet", "--out", out)
    assert r.exit_code == 0, r.output + repr(r.exception)
    return out, labels, json.loads((out / "results.json").read_text())


@pytest.mark.torch
def test_headline_numbers_are_the_results(run):
    out, labels, res = run
    md, page_html = (out / "report.md").read_text(), (out / "report.html").read_text()
    rows = table_after(md, "## Headline")
    assert len(rows) == 2 * len(labels)
    measured = 0
    for label in labels:
        for probe, role, bias in (("tor", "1st", "first-mention bias"), ("ior", "largest", "large-object bias")):
            (row,) = [r for r in rows if r["model"] == label and r["bias"] == bias]
            g = next(g for g in res["probes"][probe][label] if g["n_objects"] == 4 and g.get("template") in
                     ("and", None))
            share = next(s for s in g["metrics"]["conditional"] if s["role"] == role)
            raw = next(s for s in g["metrics"]["unconditional"] if s["role"] == role)
            assert row["measured on"] == f"{probe.upper()}: {g['key']}"
            assert unmarked(row["share % [95 % CI]"]) == shown(share, of=raw["n"])
            assert row["raw top-1 % [95 % CI]"] == shown(raw)
            if share["chance"] is not None:
                assert row["chance"] == f"{100 * share['chance']:.1f}"
            assert row["raw chance"] == f"{100 * raw['chance']:.1f}"
            assert row["n (kept of queries)"] == f"{share['n']} of {raw['n']}"
            assert unmarked(row["published (ComCO, 4 objects)"]) == "–"  # random weights: no published row
            assert f"<td>{shown(raw)}</td>" in page_html
            measured += not row["share % [95 % CI]"].startswith("–")  # a number, or its count when too few
    assert measured >= 2, "the tiny run should give some conditional shares to compare"
    assert "<i>published:</i> CLIP openAI</td><td>50.31</td><td>65.22</td>" in page_html  # reference table


@pytest.mark.torch
def test_leaderboard_is_sorted_by_each_index(run):
    out, labels, res = run
    md = (out / "report.md").read_text()
    for heading, probe, role in (("### By first-mention bias", "tor", "1st"), ("### By large-object bias", "ior",
                                                                              "largest")):
        title = next(ln for ln in md.splitlines() if ln.startswith(heading))
        rows = table_after(md, title)
        assert sorted(r["model"] for r in rows) == sorted(labels)
        values = []
        for r in rows:
            g = next(g for g in res["probes"][probe][r["model"]] if g["n_objects"] == 4
                     and g.get("template") in ("and", None))
            s = next(s for s in g["metrics"]["conditional"] if s["role"] == role)
            raw = next(u for u in g["metrics"]["unconditional"] if u["role"] == role)
            assert unmarked(r["share % [95 % CI]"]) == shown(s, of=raw["n"])
            values.append(-1.0 if math.isnan(s["acc"]) or s["n"] < 20 else s["acc"])  # too few: not ranked
        assert values == sorted(values, reverse=True)
        ranks = [r["rank"] for r in rows if not r["rank"].startswith("–")]
        assert ranks == sorted(ranks, key=int) and ranks[:1] in (["1"], [])


@pytest.mark.torch
def test_one_combined_figure_per_probe_on_the_page(run):
    out, _, res = run
    figures = sorted(p.name for p in (out / "plots").iterdir())
    assert figures == sorted(f"{p}.png" for p in res["probes"])  # no file per object count any more
    md, page_html = (out / "report.md").read_text(), (out / "report.html").read_text()
    embedded = [base64.b64decode(d) for d in re.findall(r"src='data:image/png;base64,([^']+)'", page_html)]
    assert len(embedded) == len(figures)
    for name in figures:
        assert f"](plots/{name})" in md
        assert (out / "plots" / name).read_bytes() in embedded  # the page shows exactly the file
    for probe in res["probes"]:  # the per-table files stay
        assert (out / f"{probe}.csv").read_text().startswith("probe,group,metric,source,model,role,value")
        assert (out / f"{probe}.md").is_file()
    from PIL import Image

    with Image.open(out / "plots" / "tor.png") as im:  # 2 templates x 2 metrics rows, 3 and 4 objects
        assert im.format == "PNG" and im.size[1] > 4 * 2.5 * 110 * 0.9


@pytest.mark.torch
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium (Debian's package) to open the page")
def test_page_renders_in_chromium(run, tmp_path):
    out = run[0]
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "probe_page.py"), "--out", str(out),
                        "--screenshot", str(tmp_path / "page.png")], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    lines = r.stdout.splitlines()
    figures = [ln for ln in lines if ln.startswith("ok ") and "loaded True" in ln]
    assert len(figures) == len(list((out / "plots").iterdir()))
    layouts = [ln for ln in lines if ln.endswith(" layout")]  # the figures' titles, legends, labels
    assert sorted(layouts) == sorted(f"ok   {p.stem} layout" for p in (out / "plots").iterdir())


# ---------------------------------------------------------------- the page's rules, on planted results


def first_mention_wins(text: str):
    """A planted text tower: the first-mentioned object dominates the caption's embedding."""
    return one_hot({n: 0.5 ** k for k, n in enumerate(mention_sequence(text, SET.names))})


def planted_results(models: list[dict], data=None) -> dict:
    data = data or planned_data(n=60)  # at least 20 four-object images: the bootstrap resamples images
    groups = tor_dataset(data, FakeEmbedder(first_mention_wins), ["and"], n_boot=20, seed=0)
    return {"seed": 0, "n_boot": 20, "dataset": {"root": "x", "hash": "h", "records": 12, "gallery": 18},
            "options": {"text_only": False}, "models": models, "skipped": {},
            "probes": {"tor": {m["label"]: groups for m in models}}}


def test_published_rows_meet_the_same_weights_only():
    assert published_model("ViT-B-32", "openai") == "CLIP openAI"
    assert published_model("ViT-H-14", "laion2b_s32b_b79k") == "CLIP LAION"
    assert published_model("ViT-B-16", "datacomp_xl_s13b_b90k") == "CLIP Datacomp"
    assert published_model("roberta-ViT-B-32", "laion2b_s12b_b32k") == "CLIP Roberta"
    assert published_model("ViT-B-16-SigLIP", "webli") == "SigLIP"
    assert published_model("ViT-B-16-SigLIP2", "webli") is None
    assert published_model("ViT-B-32", "/w/negclip.pth") == "NegCLIP"
    assert published_model("ViT-S-32", "none") is None and published_model("ViT-B-32", None) is None
    assert published_model("ckpt:/x/openai-like.pt", None, "ckpt/scratch/ab") is None


def test_headline_group_prefers_four_objects_and_the_and_template():
    g = [{"key": "photo, 4 objects", "n_objects": 4, "template": "photo"},
         {"key": "and, 3 objects", "n_objects": 3, "template": "and"},
         {"key": "and, 4 objects", "n_objects": 4, "template": "and"}]
    assert headline_group(g)["key"] == "and, 4 objects"
    assert headline_group(g[:2])["key"] == "photo, 4 objects"
    assert headline_group([{"key": "2", "n_objects": 2}, {"key": "5", "n_objects": 5}])["key"] == "5"
    assert headline_group([{"key": "colours", "n_objects": None}]) is None


def test_leaderboard_order_ties_and_missing():
    def entry(v):
        return {"first": None if v is None else {"group": "g", "share": {"acc": v}, "raw": None}}

    head = {"a": entry(0.3), "b": entry(float("nan")), "c": entry(0.7), "d": entry(None), "e": entry(0.3)}
    assert [m for m, _ in leaderboard(head, "first")] == ["c", "a", "e", "b", "d"]
    few = {"first": {"group": "g", "share": {"acc": 0.9, "n": 2}, "raw": None}}  # 2 kept: too few to rank
    assert [m for m, _ in leaderboard({"f": few, **head}, "first")] == ["c", "a", "e", "f", "b", "d"]


def test_page_puts_the_published_row_beside_a_model_of_the_same_weights(tmp_path):
    models = [{"label": "ViT-B-32 (openai)", "name": "ViT-B-32", "pretrained": "openai", "identity": "x"}]
    res = planted_results(models)
    doc = page(res, {}, {})
    rows = table_after(doc.markdown(tmp_path), "## Headline")
    first = next(r for r in rows if r["bias"] == "first-mention bias")
    g = next(g for g in res["probes"]["tor"]["ViT-B-32 (openai)"] if g["n_objects"] == 4)
    assert first["share % [95 % CI]"] == fmt(g["metrics"]["conditional"][0]) == "100.0 [100.0, 100.0]"
    assert first["published (ComCO, 4 objects)"] == "*published:* CLIP openAI 50.31"
    large = next(r for r in rows if r["bias"] == "large-object bias")
    assert large["measured on"] == "not measured (ior not run)" and large["share % [95 % CI]"] == "–¹"
    assert large["published (ComCO, 4 objects)"] == "*published:* CLIP openAI 65.22"
    assert "## Leaderboard" not in doc.markdown(tmp_path)  # one model: nothing to rank


def test_without_plots_the_page_is_still_written(tmp_path):
    models = [{"label": f"m{i} (none)", "name": f"m{i}", "pretrained": "none", "identity": "x"} for i in (1, 2)]
    written = write_reports(tmp_path, planted_results(models), plots=False)
    assert {p.name for p in written} >= {"results.json", "tor.md", "tor.csv", "report.md", "report.html"}
    assert not (tmp_path / "plots").exists() and "<img" not in (tmp_path / "report.html").read_text()
    md = (tmp_path / "report.md").read_text()
    assert "## Leaderboard" in md and "m1 (none) has random weights" in md
    assert headline(json.loads((tmp_path / "results.json").read_text()))["m1 (none)"]["first"]["share"]["acc"] == 1.0
