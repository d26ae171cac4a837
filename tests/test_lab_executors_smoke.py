"""The whole smoke scale of recipes/order-bias.toml (every stage: render, captions, scratch,
probe, finetune, analyses, labclip, report) through the four executors: local, node (a fake
list of two GPUs; the smoke recipe's stages all run on the CPU), slurm (the stand-in SLURM
commands on PATH) and slurm-local (submitit's LocalExecutor) give the same stage hashes and
the same results.json, byte for byte. benchmarks/executors.py prints their wall times."""

from __future__ import annotations

import json

import pytest
from support.labrun import RECIPE, differences, executor_runs, stage_hashes

from comco.lab.graph import build_stages
from comco.lab.recipe import load_recipe

pytestmark = [pytest.mark.slow, pytest.mark.bpy, pytest.mark.torch]


def test_the_four_executors_give_the_same_smoke_run(tmp_path):
    pytest.importorskip("bpy")
    pytest.importorskip("torch")
    pytest.importorskip("submitit")
    runs = executor_runs(RECIPE, tmp_path)
    stages = build_stages(load_recipe(RECIPE, "smoke"))
    kinds = {s.kind for s in stages}
    assert kinds == {"render", "captions", "scratch", "probe", "finetune", "labclip", "report"}
    assert any(s.config.get("analyses") for s in stages)  # the DeBias analyses ride on the fine-tunes' probes
    for out, _ in runs.values():
        assert set(stage_hashes(out)) == {s.id for s in stages}  # every stage finished
    assert differences(runs) == []
    results = json.loads((runs["local"][0] / "results.json").read_text())
    assert results  # numbers, not an empty report
    # each executor put its stages where it says: jobs.json only for the slurm paths, node logs for node
    assert not (runs["local"][0] / "jobs.json").exists() and not (runs["node"][0] / "jobs.json").exists()
    jobs = json.loads((runs["slurm"][0] / "jobs.json").read_text())
    assert {e["cluster"] for e in jobs.values()} == {"slurm"} and len(jobs) > 20
    assert {e["cluster"] for e in json.loads((runs["slurm-local"][0] / "jobs.json").read_text()).values()} == {"local"}
    assert (runs["node"][0] / "stages" / "scratch-simco-p0-s0" / "logs" / "node.log").is_file()
