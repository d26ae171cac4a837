"""`comco lab run --dry-run --executor slurm|node --gpus N`: each stage's request and the
wall time on N GPUs against one, as the driver would schedule the graph."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from comco.lab.estimate import schedule_gpus
from comco.lab.graph import build_stages
from comco.lab.recipe import load_recipe

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"


def _st(sid: str, kind: str, **deps: str) -> SimpleNamespace:
    """A stand-in stage: the scheduler reads only id, kind, config and deps."""
    return SimpleNamespace(id=sid, kind=kind, config={}, deps=deps, hash="")


def graph():
    """Two chains (a -> b, c -> d) and a CPU stage e after both."""
    st = [_st("a", "render"), _st("b", "scratch", data="a"), _st("c", "render"), _st("d", "scratch", data="c"),
          _st("e", "report", b="b", d="d")]
    seconds = {"a": 10.0, "b": 5.0, "c": 4.0, "d": 1.0, "e": 2.0}
    on_gpu = {"a": True, "b": True, "c": True, "d": True, "e": False}
    return st, seconds, on_gpu


def test_one_gpu_runs_the_gpu_stages_one_after_the_other_and_more_gpus_reach_the_critical_path():
    st, seconds, on_gpu = graph()
    assert schedule_gpus(st, seconds, 1, on_gpu) == 10 + 5 + 4 + 1 + 2
    assert schedule_gpus(st, seconds, 2, on_gpu) == 10 + 5 + 2  # the longest chain
    assert schedule_gpus(st, seconds, 8, on_gpu) == 17
    # a CPU stage never waits for a GPU
    on_cpu = {**on_gpu, "d": False}
    assert schedule_gpus(st, seconds, 1, on_cpu) == 10 + 5 + 4 + 2  # d ran beside a or b


@pytest.mark.torch
def test_the_cluster_plan_prints_every_request_and_the_wall_time_on_n_gpus(tmp_path):
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(RECIPE), "--scale", "full", "--dry-run",
                        "--executor", "slurm", "--gpus", "8"], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    ids = [s.id for s in build_stages(load_recipe(RECIPE, "full"))]
    assert [line.split()[0] for line in lines[1:1 + len(ids)]] == ids
    rows = dict(zip(ids, lines[1:1 + len(ids)]))
    assert "gpus=1" in rows["render-train-simco"] and "time=240min" in rows["render-train-simco"]
    assert "driver" in rows["captions-simco-p0"] and "driver" in rows["report"]
    total = lines[1 + len(ids)]
    assert "on 8 GPU(s) against" in total and "critical path" in total
    assert lines[-2].startswith("measured:") and "H200" in lines[-2] and lines[-1].startswith("assumed:")
    assert list(tmp_path.iterdir()) == []
