"""benchmarks/lab.py --run: a lab run folder read back against its recipe's budget; a resumed
run is never passed off as one run's wall time (issue 26 item 8)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_lab", ROOT / "benchmarks" / "lab.py")
lab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lab)


def _run_folder(tmp_path: Path, recipe: str, invocations: list[dict]) -> Path:
    out = tmp_path / "run"
    (out / "stages").mkdir(parents=True)
    shutil.copy(ROOT / "recipes" / f"{recipe}.toml", out / "recipe.toml")
    (out / "results.json").write_text(json.dumps({"recipe": recipe, "scale": "small", "object_sets": {}}))
    for i, (sid, seconds) in enumerate((("render-train-simco", 600.0), ("captions-simco-p0", 60.0))):
        (out / "stages" / sid).mkdir()
        (out / "stages" / sid / "stage.json").write_text(json.dumps(
            {"id": sid, "kind": sid.split("-")[0], "seconds": seconds, "finished": 1000.0 + 700 * i}))
    (out / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in invocations))
    return out


def test_a_run_in_one_go_is_timed_against_its_recipes_budget(tmp_path, capsys):
    out = _run_folder(tmp_path, "order-bias", [
        {"state": "new", "ran": ["render-train-simco", "captions-simco-p0"],
         "seconds": {"render-train-simco": 600.0, "captions-simco-p0": 60.0}, "wall_seconds": 1200.0}])
    lab.run_benchmark(out)
    text = capsys.readouterr().out
    assert "wall time: 20.0 min against 40 min (0.50 of it); sum of stage seconds 11.0 min" in text
    assert "render" in text and "600" in text


@pytest.mark.parametrize("invocations", [
    [{"state": "same", "ran": ["captions-simco-p0"], "seconds": {"captions-simco-p0": 60.0}, "wall_seconds": 90.0}],
    [{"state": "new", "ran": ["render-train-simco"], "seconds": {"render-train-simco": 600.0}, "wall_seconds": 700.0},
     {"state": "same", "ran": ["captions-simco-p0"], "seconds": {"captions-simco-p0": 60.0}, "wall_seconds": 90.0}],
])
def test_a_resumed_run_is_not_timed_as_one(tmp_path, capsys, invocations):
    lab.run_benchmark(_run_folder(tmp_path, "origins", invocations))
    text = capsys.readouterr().out
    assert "a resumed run" in text and "1.5 min" in text
    assert "wall time:" not in text and "against 30 min" not in text


def test_a_folder_that_is_no_run_ends_with_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys

    (tmp_path / "results.json").write_text("{}")  # a committed docs/lab-* folder keeps no run log
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "lab.py"), "--run", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"lab.py: --run {tmp_path}: no runs.jsonl, recipe.toml; pass the folder `comco lab run --out` wrote"]
