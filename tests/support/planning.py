"""Shared test helpers (planning and the command line): imported by the test files, never collected.

The realism, output and hold-out tests all plan small simco datasets in-process, run the real
`comco` command as a subprocess, refuse bad options by name and compare tiny Cycles renders;
this is their one copy of that plumbing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from comco.errors import UserError
from comco.manifest import load_object_set
from comco.plan import PlanConfig, Planner

COMCO = [sys.executable, "-m", "comco.cli"]
RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "order-bias.toml"
# tiny Cycles renders for the bpy tests: small, few samples, one worker (images in plan order)
TINY_CYCLES = ("--resolution", "48", "--preset", "cycles", "--samples", "4", "--workers", "1", "--quiet")


def run(*args, cwd=None) -> subprocess.CompletedProcess:
    """The real `comco` command in a subprocess (arguments str()-ed), its output captured."""
    return subprocess.run([*COMCO, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def plan_records(n: int = 40, *, seed: int = 3, objects: str = "2-4", object_set: str = "simco",
                 **options) -> list[dict]:
    """The records the planner makes for these options (PlanConfig.from_dict keys), in order."""
    cfg = PlanConfig.from_dict({"object_set": object_set, "objects": objects, "n": n, "seed": seed, **options})
    return list(Planner(cfg, load_object_set(object_set)).records())


def assert_refused(options: dict, words: str) -> None:
    """Building the planner for these simco options raises the UserError that matches `words`."""
    with pytest.raises(UserError, match=words):
        Planner(PlanConfig.from_dict({"object_set": "simco", **options}), load_object_set("simco"))


def render_each(root: Path, common: list[str], variants: dict[str, list[str]]) -> None:
    """`comco render COMMON VARIANT --out ROOT/NAME` for each named variant; each must succeed."""
    for name, extra in variants.items():
        r = run("render", *common, *extra, "--out", root / name)
        assert r.returncode == 0, r.stderr[-2000:]


def pixels(folder: Path, i: int) -> np.ndarray:
    """Image i of a dataset folder as a float array (H, W, channels)."""
    from PIL import Image

    return np.asarray(Image.open(Path(folder) / "images" / f"{i:06d}.png"), dtype=float)
