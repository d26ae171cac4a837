"""What is checked before a job goes to SLURM, and what an sbatch that says no gives, against the
stand-in commands of tests/support/fakeslurm.py (the faults a real SLURM gives only when it is
configured so: no accounting, a node without GPUs, a small MaxArraySize, an sbatch that
refuses). Each ends with exit code 2 and one line, before anything is written or left queued.
The same checks on the real cluster: tests/cluster/test_real_slurm.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import fakeslurm

from comco.errors import UserError
from comco.lab.executors import _gres_gpus, _limit_minutes, check_request

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"
RENDER = ["render", "--object-set", "simco", "--objects", "2-3", "--n", "9", "--preset", "draft", "--resolution",
          "32", "--large-fraction", "0.12", "--small-fraction", "0.03-0.04", "--workers", "1", "--quiet"]


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """The stand-in commands first on PATH; its node: 8 CPUs, 64000 MB, no GPU, 8 h, partitions gpu* and cpu."""
    pytest.importorskip("submitit")
    fakeslurm.install(tmp_path / "bin")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "FAKE_SLURM_DIR": str(tmp_path / "slurm"), "FAKE_SLURM_PARTITIONS": "gpu*,cpu",
           "FAKE_SLURM_NODE": "8|64000|(null)|8:00:00"}
    monkeypatch.setenv("FAKE_SLURM_DIR", env["FAKE_SLURM_DIR"])
    yield env
    fakeslurm.stop_all()


def comco(*args: str, env, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "comco.cli", *args], capture_output=True, text=True, timeout=300,
                          env=env, cwd=cwd)


def one_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, (r.stdout + r.stderr)[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def recipe_with(folder: Path, table: str) -> Path:
    text = RECIPE.read_text(encoding="utf-8")
    run = text.index("\n[run]\n")
    end = text.index("\n", text.index("device = ", run)) + 1
    path = folder / "recipe.toml"
    path.write_text(text[:end] + table + text[end:], encoding="utf-8")
    return path


def submissions(tmp_path: Path) -> list[dict]:
    path = tmp_path / "slurm" / "submissions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


# ---------------------------------------------------------------- the lab

@pytest.mark.parametrize("table, key, said", [
    ("", "recipe key 'run.slurm.gpus' = 1 (the default, for the render jobs)", "has a GPU"),
    ("\n[run.slurm]\ngpus = 0\ncpus = 16\n", "recipe key 'run.slurm.cpus' = 16", "the largest node has 8 CPUs"),
    ("\n[run.slurm]\ngpus = 0\n[run.slurm.scratch]\nmemory = 100\n", "recipe key 'run.slurm.scratch.memory' = 100",
     "the largest node has 62 GB of memory"),
    ("\n[run.slurm]\ngpus = 0\ntime = 600\n", "recipe key 'run.slurm.time' = 600", "allows at most 480 min"),
])
def test_a_request_no_node_can_run_names_its_key(fake, tmp_path, table, key, said):
    line = one_line(comco("lab", "run", str(recipe_with(tmp_path, table)), "--scale", "smoke", "--out",
                          str(tmp_path / "out"), "--executor", "slurm", env=fake))
    assert line.startswith(f"comco: error: {key}: ") and said in line, line
    assert not (tmp_path / "out").exists() and submissions(tmp_path) == []


def test_a_cluster_without_accounting_is_refused_before_anything_is_written(fake, tmp_path):
    env = {**fake, "FAKE_SLURM_NO_ACCOUNTING": "1"}
    line = one_line(comco("lab", "run", str(recipe_with(tmp_path, "\n[run.slurm]\ngpus = 0\n")), "--scale", "smoke",
                          "--out", str(tmp_path / "out"), "--executor", "slurm", env=env))
    assert "Slurm accounting storage is disabled" in line
    assert "AccountingStorageType=accounting_storage/slurmdbd" in line
    assert not (tmp_path / "out").exists() and submissions(tmp_path) == []


def test_a_job_sbatch_refuses_ends_the_lab_run_with_its_words(fake, tmp_path):
    env = {**fake, "FAKE_SLURM_REFUSE": "render"}
    line = one_line(comco("lab", "run", str(recipe_with(tmp_path, "\n[run.slurm]\ngpus = 0\n")), "--scale", "smoke",
                          "--out", str(tmp_path / "out"), "--executor", "slurm", env=env))
    assert "sbatch refused the render job(s) of render-train-simco ..." in line
    assert "Requested node configuration is not available" in line and "gpus=0 cpus=4 mem=32G" in line
    assert not (tmp_path / "out" / "jobs.json").exists() and submissions(tmp_path) == []


# ---------------------------------------------------------------- comco render --executor slurm

def test_render_takes_the_lab_slurm_keys_from_flags_and_a_file(fake, tmp_path):
    config = tmp_path / "cluster.toml"
    config.write_text('[slurm]\npartition = "cpu"\ncpus = 3\nmemory = 5\ntime = 7\naccount = "lab"\n')
    r = comco(*RENDER, "--executor", "slurm", "--shards", "2", "--slurm-config", str(config), "--slurm", "cpus=2",
              "--out", str(tmp_path / "data"), env=fake)
    assert r.returncode == 0, r.stderr[-2000:]
    array = submissions(tmp_path)[0]["job"]
    batch = (tmp_path / "data.shards" / "slurm" / array / f"{array}_submission.sh").read_text()
    for flag in ("--partition=cpu", "--cpus-per-task=2", "--mem=5GB", "--time=7", "--account=lab", "--array=0-1%2"):
        assert f"#SBATCH {flag}" in batch, flag
    assert "#SBATCH --gpus-per-node=0" in batch  # --device cpu asks for no GPU
    # a recipe's [run.slurm] (and its [run.slurm.render]) is such a file too
    recipe = recipe_with(tmp_path, '\n[run.slurm]\npartition = "gpu"\ngpus = 0\n[run.slurm.render]\ncpus = 6\n')
    r = comco(*RENDER, "--executor", "slurm", "--slurm-config", str(recipe), "--out", str(tmp_path / "two"), env=fake)
    assert r.returncode == 0, r.stderr[-2000:]
    array = submissions(tmp_path)[-2]["job"]
    batch = (tmp_path / "two.shards" / "slurm" / array / f"{array}_submission.sh").read_text()
    assert "#SBATCH --partition=gpu" in batch and "#SBATCH --cpus-per-task=6" in batch


@pytest.mark.parametrize("args, said", [
    (["--slurm", "cpus=16"], "--slurm cpus=16: no node of the default partition 'gpu' can run it (the largest node "
                             "has 8 CPUs"),
    (["--slurm", "partition=cpu", "--device", "cuda"], "gpus = 1 (the default; set it with --slurm gpus=N): no node "
                                                       "of partition 'cpu' has a GPU"),
    (["--slurm", "time=600"], "--slurm time=600: no node of the default partition 'gpu' can run it (allows at most "
                              "480 min"),
    (["--slurm", "cpu=2"], "--slurm cpu=2: give KEY=VALUE with KEY one of partition, account"),
    (["--slurm", "cpus=two"], "--slurm cpus=two: cpus takes a whole number"),
    (["--slurm", "cpus=0"], "--slurm cpus=0: expected 1..1024"),
    (["--shards", "1000000"], "--shards 1000000: more shards than images (--n 9); use at most 9"),
])
def test_render_requests_are_checked_before_anything_is_written(fake, tmp_path, args, said):
    line = one_line(comco(*RENDER, "--executor", "slurm", *args, "--out", str(tmp_path / "data"), env=fake))
    assert said in line, line
    assert not (tmp_path / "data").exists() and not (tmp_path / "data.shards").exists()
    assert submissions(tmp_path) == []


def test_render_shards_beyond_the_cluster_array_size_and_flags_without_slurm(fake, tmp_path):
    env = {**fake, "FAKE_SLURM_MAX_ARRAY": "4"}
    line = one_line(comco(*RENDER, "--executor", "slurm", "--shards", "5", "--out", str(tmp_path / "a"), env=env))
    assert "--shards 5: this cluster's job arrays take at most 4 tasks (MaxArraySize 4" in line
    line = one_line(comco(*RENDER, "--slurm", "cpus=2", "--out", str(tmp_path / "b"), env=fake))
    assert "add --executor slurm" in line
    n = [a if a != "9" else "200" for a in RENDER]
    line = one_line(comco(*n, "--executor", "slurm-local", "--shards", "100", "--out", str(tmp_path / "c"), env=fake))
    assert "--shards 100 with --executor slurm-local" in line and "at most 64" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]  # no shard folder, no job


def test_a_refused_merge_job_cancels_the_shards_and_leaves_nothing(fake, tmp_path):
    env = {**fake, "FAKE_SLURM_REFUSE": "^merge-"}
    line = one_line(comco(*RENDER, "--executor", "slurm", "--shards", "3", "--out", str(tmp_path / "data"), env=env))
    assert line.startswith("comco: error: sbatch refused the render's jobs (Batch job submission failed: Requested "
                           "node configuration is not available); asked for gpus=0 cpus=4 mem=32G time=240min")
    [shards] = submissions(tmp_path)  # the shard array went out, the merge job did not
    assert shards["tasks"] == 3
    assert all(t["state"] == "CANCELLED" or t["cancel"] for t in fakeslurm.matching(shards["job"]))
    assert not (tmp_path / "data").exists() and not (tmp_path / "data.shards").exists()


# ---------------------------------------------------------------- reading sinfo

def test_sinfo_figures_are_read_as_slurm_writes_them():
    assert _gres_gpus("(null)") == 0 and _gres_gpus("gpu:4") == 4 and _gres_gpus("gpu:a100:4(S:0-1)") == 4
    assert _gres_gpus("gpu:a100:2,gpu:v100:2(S:0),shard:8") == 4
    assert _limit_minutes("infinite") is None and _limit_minutes("30:00") == 30 and _limit_minutes("2:00:00") == 120
    assert _limit_minutes("1-00:00:00") == 1440 and _limit_minutes("90") == 90
    nodes = [{"partition": "cpu", "default": True, "cpus": 32, "memory_mb": 128000, "gpus": 0, "minutes": None},
             {"partition": "gpu", "default": False, "cpus": 16, "memory_mb": 256000, "gpus": 4, "minutes": 1440}]
    where = lambda key: key  # noqa: E731
    check_request({"gpus": 2, "cpus": 16, "memory": 200, "time": 1440, "partition": "gpu"}, where, nodes)
    check_request({"gpus": 0, "cpus": 32, "memory": 100, "time": 10000}, where, nodes)  # the default partition
    check_request({"gpus": 2, "cpus": 8, "memory": 8, "time": 60, "partition": "cpu,gpu"}, where, nodes)
    with pytest.raises(UserError, match=r"^cpus: no one node of partition 'cpu, gpu' has gpus=2, cpus=32"):
        check_request({"gpus": 2, "cpus": 32, "memory": 8, "time": 60, "partition": "cpu,gpu"}, where, nodes)
    check_request({"gpus": 9, "cpus": 1, "memory": 1, "time": 1, "partition": "big"}, where, nodes)  # sinfo lacks it
    check_request({"gpus": 9, "cpus": 1, "memory": 1, "time": 1}, where, None)  # no sinfo: sbatch has the last word
