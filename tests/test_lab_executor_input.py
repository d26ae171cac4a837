"""Bad input to the executors: exit code 2 and one line, before any job and before OUT is touched."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from comco.errors import UserError
from comco.lab.recipe import parse_recipe

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"


def lab(*args: str, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


def one_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def with_run_slurm(table: str) -> str:
    text = RECIPE.read_text(encoding="utf-8")
    run = text.index("\n[run]\n")
    end = text.index("\n", text.index("device = ", run)) + 1
    return text[:end] + table + text[end:]


def test_slurm_without_sbatch_on_path(tmp_path):
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # python, and no SLURM command
    line = one_line(lab(str(RECIPE), "--scale", "smoke", "--out", str(tmp_path / "out"), "--executor", "slurm",
                        env=env))
    assert "sbatch" in line and "PATH" in line
    assert not (tmp_path / "out").exists()


def test_slurm_without_submitit(tmp_path):
    shadow = tmp_path / "shadow" / "submitit"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no submitit here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "shadow"), os.environ.get("PYTHONPATH", "")])}
    line = one_line(lab(str(RECIPE), "--scale", "smoke", "--out", str(tmp_path / "out"), "--executor", "slurm",
                        env=env))
    assert "pip install submitit" in line and "'.[cluster]'" in line
    assert not (tmp_path / "out").exists()


def test_an_unknown_run_slurm_key_names_itself():
    with pytest.raises(UserError, match=r"unknown recipe key 'run.slurm.partiton'"):
        parse_recipe(with_run_slurm('\n[run.slurm]\npartiton = "gpu"\n'), "smoke")
    with pytest.raises(UserError, match=r"unknown recipe key 'run.slurm.render.queue'"):
        parse_recipe(with_run_slurm('\n[run.slurm.render]\nqueue = "gpu"\n'), "smoke")
    with pytest.raises(UserError, match=r"'run.slurm.gpus' = -1"):
        parse_recipe(with_run_slurm("\n[run.slurm]\ngpus = -1\n"), "smoke")
    ok = parse_recipe(with_run_slurm('\n[run.slurm]\npartition = "gpu"\n[run.slurm.captions]\ncpus = 1\n'), "smoke")
    assert ok.settings["run"]["slurm"] == {"partition": "gpu", "captions": {"cpus": 1}}
    assert ok.settings["run"]["executor"] == "local"  # optional keys take their defaults


def test_the_request_of_a_kind_is_the_table_then_its_kind_then_the_defaults():
    from comco.lab.executors.slurm_request import DEFAULTS, request

    r = parse_recipe(with_run_slurm('\n[run.slurm]\npartition = "gpu"\ntime = 60\n[run.slurm.render]\ntime = 600\n'
                                    'constraint = "a100"\n'), "full")
    render, train, captions = (request(r.settings, k) for k in ("render", "scratch", "captions"))
    assert render["time"] == 600 and render["constraint"] == "a100" and render["partition"] == "gpu"
    assert train["time"] == 60 and "constraint" not in train and train["gpus"] == DEFAULTS["gpus"]
    assert captions["gpus"] == 0  # pure Python: no GPU asked for it


def test_unknown_executor_and_gpus_for_the_local_pool(tmp_path):
    assert "--executor" in one_line(lab(str(RECIPE), "--scale", "smoke", "--out", str(tmp_path / "a"),
                                        "--executor", "cloud"))
    assert "--gpus" in one_line(lab(str(RECIPE), "--scale", "smoke", "--out", str(tmp_path / "b"), "--gpus", "2"))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_second_driver_on_the_same_out(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".lock", "w") as held:  # a first driver holds the folder
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        line = one_line(lab(str(RECIPE), "--scale", "smoke", "--out", str(out), "--executor", "slurm-local"))
    assert "in use by another" in line
    assert sorted(p.name for p in out.iterdir()) == [".lock"]


def test_status_of_a_folder_that_holds_no_run(tmp_path):
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "status", str(tmp_path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "holds no lab run" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def fake_cluster(folder: Path) -> dict:
    """The stand-in SLURM commands on PATH (their sinfo lists the partitions gpu and cpu)."""
    from support import fakeslurm

    fakeslurm.install(folder / "bin")
    return {**os.environ, "PATH": f"{folder / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "FAKE_SLURM_DIR": str(folder / "slurm"), "FAKE_SLURM_PARTITIONS": "gpu*,cpu"}


@pytest.mark.parametrize("table, key, bad", [
    ('\n[run.slurm]\npartition = "gpux"\n', "run.slurm.partition", "gpux"),
    ('\n[run.slurm]\npartition = "gpu"\n[run.slurm.render]\npartition = "cpu,big"\n', "run.slurm.render.partition",
     "big")])
def test_a_partition_the_cluster_does_not_have(tmp_path, table, key, bad):
    pytest.importorskip("submitit")
    env = fake_cluster(tmp_path)
    recipe = tmp_path / "r.toml"
    recipe.write_text(with_run_slurm(table), encoding="utf-8")
    line = one_line(lab(str(recipe), "--scale", "smoke", "--out", str(tmp_path / "out"), "--executor", "slurm",
                        env=env))
    assert f"'{key}'" in line and f"no partition '{bad}'" in line and "cpu, gpu" in line
    assert not (tmp_path / "out").exists() and not (tmp_path / "slurm" / "submissions.jsonl").exists()


def test_the_partitions_sinfo_lists_pass_the_check(tmp_path, monkeypatch):
    """The default partition's "*" and a comma list are understood; without sinfo nothing is asked."""
    from comco.lab.executors import check_partitions

    env = fake_cluster(tmp_path)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("FAKE_SLURM_PARTITIONS", env["FAKE_SLURM_PARTITIONS"])
    settings = {"run": {"slurm": {"partition": "gpu", "render": {"partition": "cpu,gpu"}}}}
    check_partitions(settings)
    settings["run"]["slurm"]["scratch"] = {"partition": "long"}
    with pytest.raises(UserError, match="run.slurm.scratch.partition"):
        check_partitions(settings)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # no sinfo: sbatch has the last word
    check_partitions(settings)


def with_run_node(k) -> str:
    return with_run_slurm(f"\n[run.node]\ntrain_gpus = {k}\n")


def test_train_gpus_is_checked_with_the_recipe():
    with pytest.raises(UserError, match=r"^recipe key 'run.node.train_gpus' = 0: expected 1\.\.64$"):
        parse_recipe(with_run_node(0), "smoke")
    with pytest.raises(UserError, match=r"unknown recipe key 'run.node.gpus'"):
        parse_recipe(with_run_slurm("\n[run.node]\ngpus = 2\n"), "smoke")
    # each training's batch splits over the group: smoke's scratch 16 not into 3, its fine-tunes' 8 not into 16
    with pytest.raises(UserError, match=r"'run.node.train_gpus' = 3: scratch.batch_size 16 does not split into 3"):
        parse_recipe(with_run_node(3), "smoke")
    with pytest.raises(UserError, match=r"'run.node.train_gpus' = 16: finetune.batch_size 8 does not split"):
        parse_recipe(with_run_node(16), "smoke")
    assert parse_recipe(with_run_node(2), "smoke").settings["run"]["node"] == {"train_gpus": 2}
    assert parse_recipe(with_run_slurm(""), "smoke").settings["run"]["node"] == {}  # optional: one GPU each


def test_train_gpus_above_the_gpus_of_the_node_is_one_line_before_anything_runs(tmp_path):
    from support.labrun import fake_gpus

    recipe = tmp_path / "r.toml"
    recipe.write_text(with_run_node(4), encoding="utf-8")
    env = fake_gpus(tmp_path / "bin", 2)
    line = one_line(lab(str(recipe), "--scale", "smoke", "--out", str(tmp_path / "out"), "--executor", "node",
                        env=env))
    assert "recipe key 'run.node.train_gpus' = 4: this run has 2 GPU(s) (nvidia-smi)" in line, line
    line = one_line(lab(str(recipe), "--scale", "smoke", "--out", str(tmp_path / "out"),
                        "--executor", "node", "--gpus", "1", env=fake_gpus(tmp_path / "bin", 8)))
    assert "'run.node.train_gpus' = 4" in line and "(--gpus 1)" in line
    assert not (tmp_path / "out").exists()
    # the dry run plans on the GPUs it is given: fewer than a group is the same line
    line = one_line(lab(str(recipe), "--scale", "full", "--dry-run", "--executor", "node", "--gpus", "2"))
    assert "'run.node.train_gpus' = 4" in line and "(--gpus 2)" in line
