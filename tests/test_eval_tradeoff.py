"""`comco eval tradeoff`: a model's TOR/IOR shares from its probe folder beside its eval scores from
eval folders, each with its interval, count and chance, as Markdown, HTML, CSV and one figure."""

from __future__ import annotations

import csv

import pytest
from support.export import comco
from support.natural import write_coco
from support.train import make_tiny_checkpoint

pytestmark = pytest.mark.torch


def test_tradeoff_gathers_probe_and_eval_folders_by_model(tmp_path, capsys):
    tiny = make_tiny_checkpoint(tmp_path / "tiny.pt")
    code, _, err = comco(capsys, "probe", "--text-only", "--object-set", "simco", "--objects", "3", "--tuples", "30",
                         "--model", f"ckpt:{tiny}", "--no-cache", "--no-plots", "--device", "cpu",
                         "--out", tmp_path / "p")
    assert code == 0, err
    code, _, err = comco(capsys, "eval", "retrieval", "--benchmark", "coco", "--root", write_coco(tmp_path / "coco"),
                         "--model", f"ckpt:{tiny}", "--no-cache", "--device", "cpu", "--out", tmp_path / "e")
    assert code == 0, err
    code, stdout, err = comco(capsys, "eval", "tradeoff", "--results", tmp_path / "p", "--results", tmp_path / "e",
                              "--out", tmp_path / "t")
    assert code == 0, err
    assert stdout.strip().splitlines()[-1] == f"open {tmp_path / 't' / 'tradeoff.html'}"
    rows = list(csv.DictReader((tmp_path / "t" / "tradeoff.csv").open()))
    measures = {r["measure"]: r for r in rows}
    assert len({r["model"] for r in rows}) == 1  # the probe's and the eval's model matched by label
    assert "TOR first share" in measures and "coco T2I R@1" in measures and "coco I2T R@1" in measures
    for r in rows:  # every number with its interval, count and chance
        assert r["lo"] and r["hi"] and r["n"] and r["chance"], r
        assert float(r["lo"]) <= float(r["score"]) <= float(r["hi"])
    md = (tmp_path / "t" / "tradeoff.md").read_text()
    assert "| chance |" in md and "tradeoff.png" in md
    assert "16 trials: too few to read" in md  # the tiny fixture's T2I: 16 text queries
    page = (tmp_path / "t" / "tradeoff.html").read_text()
    assert "<th>TOR first share</th>" in page and "data:image/png;base64," in page


def test_tradeoff_mistakes_are_one_line(tmp_path, capsys):
    code, _, err = comco(capsys, "eval", "tradeoff", "--results", tmp_path, "--out", tmp_path / "t")
    assert code == 2 and "has no results.json" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "results.json").write_text('{"kind": "retrieval", "benchmark": "coco", "models": []}')
    code, _, err = comco(capsys, "eval", "tradeoff", "--results", tmp_path, "--models", "nope", "--out",
                         tmp_path / "t")
    assert code == 2 and "--models nope is in none of the --results folders" in err


def test_a_cell_reads_score_interval_and_count_or_says_too_few():
    from comco.probes.natural.tradeoff import cell

    stat = {"acc": 0.5, "lo": 0.4, "hi": 0.6, "n": 200, "clusters": 50, "chance": 0.25}
    assert cell(stat) == "50.0 [40.0-60.0] (n=200)"
    assert cell({**stat, "n": 12, "clusters": 12}) == "12 trials: too few to read"
    assert cell(None) == "–"


def _lab_probe(stages, name: str, model: str | None, first: float, largest: float) -> None:
    import json

    folder = stages / name
    folder.mkdir(parents=True)
    deps = {"test": "render-test-simco", **({"model": model} if model else {})}
    (folder / "stage.json").write_text(json.dumps({"kind": "probe", "id": name, "deps": deps}))

    def block(role, value):
        stat = {"role": role, "value": value, "lo": value - 0.1, "hi": value + 0.1, "n": 200, "clusters": 50,
                "chance": 0.25}
        other = {**stat, "role": "other", "value": 0.9}
        return {"3": {"conditional": [other]}, "4": {"conditional": [stat, other], "unconditional": [other]}}

    (folder / "results.json").write_text(json.dumps({"tor": {"and": block("1st", first)},
                                                     "ior": block("largest", largest)}))


@pytest.mark.parametrize("spelling", ["absolute", "relative"])
def test_tradeoff_of_a_lab_run_names_models_by_stage_and_matches_checkpoints(tmp_path, monkeypatch, spelling):
    import json

    from comco.probes.natural.tradeoff import gather_tradeoff, write_tradeoff

    run = tmp_path / "run"
    stages = run / "stages"
    _lab_probe(stages, "probe-scratch-simco-p1-s0", "scratch-simco-p1-s0", 0.6, 0.7)
    _lab_probe(stages, "probe-prior-simco-s0", None, 0.3, 0.4)
    _lab_probe(stages, "probe-heldout-scratch-simco-p1-s0", "scratch-simco-p1-s0", 0.99, 0.99)
    (stages / "probe-heldout-scratch-simco-p1-s0" / "stage.json").write_text(json.dumps(
        {"kind": "probe", "deps": {"test": "render-heldout-simco", "model": "scratch-simco-p1-s0"}}))
    checkpoint = stages / "scratch-simco-p1-s0" / "model.pt"
    monkeypatch.chdir(tmp_path)
    name = str(checkpoint) if spelling == "absolute" else "run/stages/scratch-simco-p1-s0/model.pt"
    ev = tmp_path / "eval"
    ev.mkdir()
    stat = {"acc": 0.8, "lo": 0.7, "hi": 0.9, "n": 300, "clusters": 300, "chance": 0.5}
    (ev / "results.json").write_text(json.dumps({
        "kind": "compositional", "benchmark": "aro-vg-relation", "headline": ["macro accuracy"],
        "models": [{"label": f"ckpt:{name}", "model": f"ckpt:{name}",
                    "scores": {"accuracy": {"all": stat}, "macro accuracy": {"all": {**stat, "acc": 0.75}}}}]}))
    measures, table = gather_tradeoff([ev], lab=run)
    assert list(table) == ["prior-simco-s0", "scratch-simco-p1-s0"]  # only the test-set probes; named by stage
    assert measures == ["TOR first share", "IOR largest share", "aro-vg-relation macro accuracy"]  # headline only
    row = table["scratch-simco-p1-s0"]
    assert row["TOR first share"]["acc"] == 0.6 and row["IOR largest share"]["acc"] == 0.7  # 4 objects, conditional
    assert row["aro-vg-relation macro accuracy"]["acc"] == 0.75  # the eval's ckpt: model matched by its checkpoint
    assert "aro-vg-relation macro accuracy" not in table["prior-simco-s0"]
    written = write_tradeoff(tmp_path / "t", measures, table)
    md = (tmp_path / "t" / "tradeoff.md").read_text()
    assert "| prior-simco-s0 | 30.0 [20.0-40.0] (n=200) | 40.0 [30.0-50.0] (n=200) | – |" in md
    assert len(written) == 4


def test_tradeoff_lab_mistakes_are_one_line(tmp_path, capsys):
    code, _, err = comco(capsys, "eval", "tradeoff", "--lab", tmp_path, "--out", tmp_path / "t")
    assert code == 2 and "has no stages/ folder" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "stages").mkdir()
    code, _, err = comco(capsys, "eval", "tradeoff", "--lab", tmp_path, "--out", tmp_path / "t")
    assert code == 2 and "no finished probe stage" in err
