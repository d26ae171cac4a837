"""A lab run small enough for the executor tests: two renders and their caption variants."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "order-bias.toml"
SLURM_TABLE = """
[run.slurm]
partition = "gpu"
account = "lab"
time = 90
retries = 1

[run.slurm.render]
time = 30
cpus = 2
"""


def tiny_recipe(folder: Path, extra: str = SLURM_TABLE) -> Path:
    text = RECIPE.read_text(encoding="utf-8")
    text = text.replace('[scales.smoke]\nstages = ["render", "captions", "scratch", "probe", "finetune", "analyses", '
                        '"labclip", "report"]', '[scales.smoke]\nstages = ["render", "captions"]')
    text = text.replace("[scales.smoke.data]\nobject_sets = [\"simco\"]\ntrain_images = 48\ntest_images = 24",
                        "[scales.smoke.data]\nobject_sets = [\"simco\"]\ntrain_images = 30\ntest_images = 6")
    text = text.replace("[scales.smoke.render]\n", "[scales.smoke.render]\nworkers = 1\n")
    assert text.count('stages = ["render", "captions"]') == 1 and "train_images = 30" in text
    run = text.index("\n[run]\n")
    end = text.index("\n", text.index("device = ", run)) + 1  # the last key of the base [run] table
    text = text[:end] + extra + text[end:]
    path = folder / "tiny.toml"
    path.write_text(text, encoding="utf-8")
    return path


def lab(recipe: Path, out: Path, *extra: str, expect: int = 0, env=None,
        timeout: float = 1800) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(recipe), "--out", str(out),
                        "--scale", "smoke", "--quiet", *extra], capture_output=True, text=True, timeout=timeout,
                       env=env)
    assert r.returncode == expect, r.stderr[-3000:]
    return r


def stage_hashes(out: Path) -> dict[str, str]:
    return {p.parent.name: json.loads(p.read_text())["hash"] for p in (out / "stages").glob("*/stage.json")}


def same_data(a: Path, b: Path) -> None:
    """Every stage's dataset records byte for byte and its images pixel for pixel (a PNG's bytes
    carry Blender's metadata, which differs from one render to the next)."""
    import numpy as np
    from PIL import Image

    pixels = lambda p: np.asarray(Image.open(p))  # noqa: E731
    for stage in ("render-train-simco", "render-test-simco", "captions-simco-p0", "captions-simco-p1"):
        da, db = a / "stages" / stage / "data", b / "stages" / stage / "data"
        assert (da / "scenes.jsonl").read_bytes() == (db / "scenes.jsonl").read_bytes(), stage
        images = sorted(p.name for p in (da / "images").iterdir())
        assert images == sorted(p.name for p in (db / "images").iterdir()) and images
        assert all(np.array_equal(pixels(da / "images" / n), pixels(db / "images" / n)) for n in images), stage



EXECUTORS = ("local", "node", "slurm", "slurm-local")


def fake_gpus(folder: Path, n: int, base_env: dict | None = None) -> dict:
    """An environment whose PATH starts with an nvidia-smi that lists n 80 GiB GPUs."""
    import os

    folder.mkdir(parents=True, exist_ok=True)
    rows = "\\n".join(f"{i}, 81920" for i in range(n))
    (folder / "nvidia-smi").write_text(f"#!/bin/sh\nprintf '{rows}\\n'\n")
    (folder / "nvidia-smi").chmod(0o755)
    env = dict(base_env or os.environ)
    return {**env, "PATH": f"{folder}{os.pathsep}{env['PATH']}"}


def executor_runs(recipe: Path, folder: Path, executors=EXECUTORS) -> dict[str, tuple[Path, float]]:
    """The recipe's smoke scale run once through each executor, one after the other, into
    folder/<executor>; {executor: (its OUT, its wall seconds)}.

    node runs on this machine with a fake list of two GPUs (an nvidia-smi on PATH): a smoke
    recipe's device is "cpu", so every stage is placed on the CPU cores, each in its own
    process; slurm runs against the stand-in SLURM commands (tests/support/fakeslurm.py) on
    PATH; slurm-local through submitit's LocalExecutor."""
    import os
    import time

    from support import fakeslurm

    fakeslurm.install(folder / "bin")
    slurm_env = {**os.environ, "PATH": f"{folder / 'bin'}{os.pathsep}{os.environ['PATH']}",
                 "FAKE_SLURM_DIR": str(folder / "slurm-state"), "COMCO_SLURM_POLL_S": "0.5"}
    envs = {"local": None, "node": fake_gpus(folder / "gpus", 2), "slurm": slurm_env,
            "slurm-local": {**os.environ, "COMCO_SLURM_POLL_S": "0.5"}}
    old = os.environ.get("FAKE_SLURM_DIR")
    os.environ["FAKE_SLURM_DIR"] = slurm_env["FAKE_SLURM_DIR"]  # fakeslurm.stop_all reads it
    runs = {}
    try:
        for name in executors:
            out = folder / name
            t0 = time.perf_counter()
            # a whole smoke run: minutes each on a quiet machine, far more on a loaded one
            lab(recipe, out, *(() if name == "local" else ("--executor", name)), env=envs[name], timeout=4 * 3600)
            runs[name] = (out, time.perf_counter() - t0)
    finally:
        fakeslurm.stop_all()
        if old is None:
            os.environ.pop("FAKE_SLURM_DIR", None)
        else:
            os.environ["FAKE_SLURM_DIR"] = old
    return runs


def differences(runs: dict[str, tuple[Path, float]]) -> list[str]:
    """What the runs do not share with the first: stage hashes, then results.json byte for byte."""
    (first, (ref, _)), *rest = runs.items()
    found = []
    for name, (out, _) in rest:
        a, b = stage_hashes(ref), stage_hashes(out)
        for sid in sorted(set(a) | set(b)):
            if a.get(sid) != b.get(sid):
                found.append(f"{name}: stage {sid} hash {b.get(sid)} against {a.get(sid)} ({first})")
        if (out / "results.json").read_bytes() != (ref / "results.json").read_bytes():
            found.append(f"{name}: results.json differs from {first}'s")
    return found
