"""The slurm path through submitit's local executor (`--executor slurm-local`) gives the same
stage hashes and the same results.json, byte for byte, as the local pool, on a smoke recipe
cut to one order bias (render, captions, scratch, probe, report: 11 stages, each stage its
own job; 3.2 min local and 7.2 min slurm-local on the shared 2-core machine)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.labrun import lab, stage_hashes

pytestmark = [pytest.mark.bpy, pytest.mark.torch, pytest.mark.slow]  # two lab runs, about 2 min quiet

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"


def smoke_cut(folder: Path) -> Path:
    text = RECIPE.read_text(encoding="utf-8")
    for old, new in (('[scales.smoke]\nstages = ["render", "captions", "scratch", "probe", "finetune", "analyses", '
                      '"labclip", "report"]', '[scales.smoke]\nstages = ["render", "captions", "scratch", "probe", '
                      '"report"]'),
                     ("train_images = 48\ntest_images = 24", "train_images = 16\ntest_images = 8"),
                     ("small_fraction = [0.03, 0.04]\norder_bias = [0.0, 1.0]",
                      "small_fraction = [0.03, 0.04]\norder_bias = [1.0]")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = folder / "smoke-cut.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_submitit_local_jobs_give_the_local_pool_numbers(tmp_path):
    pytest.importorskip("bpy")
    pytest.importorskip("torch")
    pytest.importorskip("submitit")
    recipe = smoke_cut(tmp_path)
    local, jobs = tmp_path / "local", tmp_path / "jobs"
    lab(recipe, local)
    lab(recipe, jobs, "--executor", "slurm-local")
    assert len(stage_hashes(local)) == 11 and stage_hashes(jobs) == stage_hashes(local)
    assert (jobs / "results.json").read_bytes() == (local / "results.json").read_bytes()
    assert len((local / "results.json").read_bytes()) > 5000  # numbers, not an empty report
    assert (jobs / "jobs.json").is_file() and not (local / "jobs.json").exists()
