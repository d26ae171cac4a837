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


def lab(recipe: Path, out: Path, *extra: str, expect: int = 0, env=None) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(recipe), "--out", str(out),
                        "--scale", "smoke", "--quiet", *extra], capture_output=True, text=True, timeout=900, env=env)
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


