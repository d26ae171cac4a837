"""`comco lab run --dry-run`: the stage graph with per-stage estimates (GPU, or CPU at the CPU scales)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from comco.lab.graph import build_stages
from comco.lab.recipe import load_recipe, parse_recipe

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"


@pytest.mark.torch
def test_dry_run_lists_every_stage_with_an_estimate_and_writes_nothing(tmp_path):
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(RECIPE), "--scale", "full", "--dry-run"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    ids = [s.id for s in build_stages(load_recipe(RECIPE, "full"))]
    listed = [line.split()[0] for line in lines[1:1 + len(ids)]]
    assert listed == ids
    assert all(line.split()[-1] in ("s", "min", "h") for line in lines[1:1 + len(ids)])
    assert f"{len(ids)} stages of recipe 'order-bias' at scale 'full'" in lines[len(ids) + 1]
    assert lines[-1].startswith("assumed")  # GPU rates, or this CPU's where run.device auto finds no GPU
    assert list(tmp_path.iterdir()) == []


@pytest.mark.torch
def test_estimates_follow_the_work():
    """Twice the steps, about twice the training estimate; a wider model costs more per step."""
    from comco.lab.estimate import estimate_seconds

    def scratch_seconds(text: str) -> float:
        recipe = parse_recipe(text, "smoke")
        stages = build_stages(recipe)
        est = estimate_seconds(stages, recipe.settings)
        return est["scratch-simco-p0-s0"]

    text = RECIPE.read_text()
    i = text.index("[scales.smoke.scratch]")
    base = scratch_seconds(text)
    longer = scratch_seconds(text[:i] + text[i:].replace("steps = 4", "steps = 8", 1))
    wider = scratch_seconds(text[:i] + text[i:].replace("width = 64", "width = 256", 1))
    assert longer == pytest.approx(2 * base, rel=1e-6)
    assert wider > base


def test_a_run_without_out_and_without_dry_run_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(RECIPE), "--scale", "smoke"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--out" in lines[0] and "--dry-run" in lines[0]


def test_ready_stages_start_deepest_chain_first():
    """The p = 1 trainings (fine-tuned, then probed) outrank the p = 0 ones (only probed),
    so the fine-tunes do not queue up at the end of a run."""
    from comco.lab.graph import build_stages
    from comco.lab.recipe import load_recipe
    from comco.lab.run import chain_depths

    stages = build_stages(load_recipe(RECIPE, "small"))
    depth = chain_depths(stages)
    assert depth["report"] == 1
    # p = 1: training, fine-tune, its probe, report; p = 0: training, probe, report
    assert depth["scratch-simco-p1-s0"] == depth["scratch-simco-p0-s0"] + 1 == 4
    assert depth["scratch-simco-p0-s0"] == depth["probe-scratch-simco-p0-s0"] + 1
    for s in stages:  # every stage outranks what waits on it
        for dep in s.deps.values():
            assert depth[dep] > depth[s.id]


@pytest.mark.torch
def test_a_cpu_scale_is_estimated_at_the_cpus_rates(monkeypatch):
    """smoke, small and medium run on the CPU ([run] device = "cpu"): their estimate is the CPU's."""
    from comco.lab import estimate
    from comco.lab.estimate import dry_run_lines, estimate_seconds

    recipe = load_recipe(RECIPE, "smoke")
    lines = dry_run_lines(recipe, jobs=2)
    assert lines[0].endswith("est. on one CPU core")
    assert "with 2 side by side on this machine's CPU" in lines[-2]
    assert lines[-1].startswith("assumed (measured on a 2-core CPU):")
    stages = build_stages(recipe)
    cpu = estimate_seconds(stages, recipe.settings)
    on_gpu = dict(recipe.settings, run=dict(recipe.settings["run"], device="cuda"))
    gpu = estimate_seconds(stages, on_gpu)
    monkeypatch.setattr(estimate, "CPU_FLOPS", estimate.CPU_FLOPS / 10)  # a slower core ...
    assert estimate_seconds(stages, recipe.settings)["scratch-simco-p0-s0"] > cpu["scratch-simco-p0-s0"]
    assert estimate_seconds(stages, on_gpu) == gpu  # ... changes the CPU scale's estimate, not a GPU one


def test_the_schedule_starts_whatever_is_ready():
    """A stage waiting on its input does not hold a free slot: B waits on A, C and D start beside A."""
    from types import SimpleNamespace

    from comco.lab.estimate import schedule

    def stage(name, *deps):
        return SimpleNamespace(id=name, deps={f"in{i}": d for i, d in enumerate(deps)})

    stages = [stage("A"), stage("B", "A"), stage("C"), stage("D")]
    seconds = dict.fromkeys("ABCD", 10.0)
    assert schedule(stages, seconds, 2) == 20.0
    assert schedule(stages, seconds, 1) == 40.0
    assert schedule(stages, seconds, 4) == 20.0  # B still waits for A


@pytest.mark.torch
def test_dry_run_says_cpu_when_auto_finds_no_gpu(monkeypatch):
    """Issue 37 item 4: the full scale's run.device is auto; on a machine without a GPU the dry
    run used to estimate (and say) "on one GPU", which is not where it would run."""
    from comco.lab import estimate

    recipe = load_recipe(RECIPE, "full")
    assert recipe.settings["run"]["device"] == "auto"
    monkeypatch.setattr(estimate, "gpu_here", lambda: False)
    lines = estimate.dry_run_lines(recipe)
    assert "on one CPU core" in lines[0] and "GPU" not in lines[0]
    assert "run.device auto: no GPU here" in lines[-3] or any("no GPU here" in line for line in lines)
    monkeypatch.setattr(estimate, "gpu_here", lambda: True)
    assert "on one GPU" in estimate.dry_run_lines(recipe)[0]
