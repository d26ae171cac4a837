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
    assert lines[-3].startswith("measured:") and "H200" in lines[-3] and lines[-2].startswith("assumed:")
    # what a real SLURM does to a requeued job, which the estimate leaves out (docs/guide/cluster.md)
    assert lines[-1].startswith("not counted:") and "requeues" in lines[-1] and "at least 121 s" in lines[-1]
    assert list(tmp_path.iterdir()) == []


def test_a_ddp_group_waits_for_its_gpus_and_runs_in_a_kth_of_the_time():
    """Singles s1..s4 (3 s) and a training g of 10 s on a group of two, all ready at once: s1
    takes a GPU, g reserves both and waits for it, s2 may not take the other meanwhile."""
    st = [_st("s1", "probe"), _st("g", "scratch"), _st("s2", "probe"), _st("s3", "probe"), _st("s4", "probe")]
    seconds = {"s1": 3.0, "g": 10.0, "s2": 3.0, "s3": 3.0, "s4": 3.0}
    need = {"s1": 1, "g": 2, "s2": 1, "s3": 1, "s4": 1}
    assert schedule_gpus(st, seconds, 2, need) == 3 + 10 / 2 + 3 + 3
    assert schedule_gpus(st, seconds, 1, {k: min(1, v) for k, v in need.items()}) == 10 + 4 * 3
    with pytest.raises(ValueError, match="more GPUs"):
        schedule_gpus(st, seconds, 1, need)


def test_the_node_plan_shows_the_group_request_and_schedules_it_on_k_gpus(tmp_path, monkeypatch):
    """plan_lines on the full scale with [run.node] train_gpus = 4 (the seconds stubbed: torch's
    FLOP counts are test_the_cluster_plan_...'s; here only the requests and the schedule)."""
    from comco.lab import estimate

    text = RECIPE.read_text(encoding="utf-8")
    run = text.index("\n[run]\n")
    end = text.index("\n", text.index("device = ", run)) + 1
    recipe = load_recipe(_write(tmp_path / "ddp.toml", text[:end] + "\n[run.node]\ntrain_gpus = 4\n" + text[end:]),
                         "full")
    stages = build_stages(recipe)
    seconds = {s.id: (400.0 if s.kind in ("scratch", "finetune") else 10.0) for s in stages}
    monkeypatch.setattr(estimate, "estimate_seconds", lambda st, settings: seconds)
    lines = estimate.plan_lines(recipe, "node", 8)
    rows = dict(zip([s.id for s in stages], lines[1:1 + len(stages)]))
    trainings = [s.id for s in stages if s.kind in ("scratch", "finetune")]
    assert trainings and all("4 whole GPUs (DDP under torchrun)" in rows[t] for t in trainings)
    assert all("GPU share" in rows[s.id] for s in stages if s.kind == "probe")
    assert "on 8 GPU(s) against" in lines[1 + len(stages)]
    assert lines[-1].startswith("assumed: a training on 4 GPUs (run.node.train_gpus) takes 1/4")
    # the same graph with one GPU per training: the same GPU-seconds on 8 GPUs (ideal scaling), but a
    # chain of trainings (scratch, then its fine-tune) is shorter on groups
    single = estimate.plan_lines(load_recipe(RECIPE, "full"), "node", 8)
    assert _seconds(lines, " on 8 GPU(s)") == _seconds(single, " on 8 GPU(s)")
    assert _seconds(lines, "critical path ") < _seconds(single, "critical path ")


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _seconds(lines: list[str], label: str) -> float:
    """A time of the total line: the one before ' on N GPU(s)', or after 'critical path '."""
    total = next(line for line in lines if " GPU(s) against " in line)
    if label.startswith("critical"):
        words = total.split(label)[1].split()[:2]
    else:
        words = total.split(": ", 1)[1].split(label)[0].split()
    return float(words[0]) * {"s": 1, "min": 60, "h": 3600}[words[1]]
