"""The lab report finds stages by key and fails loudly, naming the key, when one it needs
is missing (pure Python: no stage runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from comco.lab.graph import build_stages
from comco.lab.keys import REPORT, finetune_key, probe_key, scratch_key
from comco.lab.recipe import load_recipe
from comco.lab.report import MissingStage, write_report
from comco.lab.report.lookup import Run

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"


@pytest.fixture(scope="module")
def stages():
    return build_stages(load_recipe(RECIPE, "smoke"))


def test_a_report_over_unfinished_stages_is_an_internal_error_naming_the_stage(tmp_path, stages):
    with pytest.raises(MissingStage, match="render-train-simco"):
        write_report(tmp_path, stages.get(REPORT), stages)
    assert not (tmp_path / "report.md").exists() and not (tmp_path / "results.json").exists()


def test_a_probe_without_its_results_names_its_key(tmp_path, stages):
    run = Run(tmp_path, stages)
    key = probe_key(finetune_key("simco", "debias", 1))
    folder = stages.get(key).folder(tmp_path)
    folder.mkdir(parents=True)
    (folder / "stage.json").write_text(json.dumps({"id": key.id, "summary": {"results": "results.json"}}))
    assert run.summary(key) == {"results": "results.json"}
    with pytest.raises(MissingStage, match="results.json of stage probe-finetune-simco-debias-s1"):
        run.results(key)
    (folder / "results.json").write_text('{"gates": {}}')
    assert run.results(key) == {"gates": {}}


def test_a_key_outside_the_graph_is_refused_not_read_as_empty(tmp_path, stages):
    run = Run(tmp_path, stages)
    absent = probe_key(scratch_key("simco", 0.5, 0))  # smoke trains p = 0 and 1 only
    assert not run.has(absent)
    with pytest.raises(MissingStage, match="probe-scratch-simco-p0.5-s0"):
        run.results(absent)
