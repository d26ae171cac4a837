"""The lab's SLURM path against stand-in sbatch / srun / sacct / scancel / scontrol
(tests/support/fakeslurm.py: jobs run as local processes): job arrays, the recipe's
[run.slurm] request in the batch file, logs per stage, a preempted job requeued, a lost
job submitted again, a driver killed and restarted with no stage run twice, a failed stage
reported with its log, and `comco lab status` while jobs run.

The recipe is the cheapest that exercises the graph: two renders (one job array) and
the caption variants the driver makes itself. One local run is the reference.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import fakeslurm
from support.labrun import lab, same_data, stage_hashes, tiny_recipe

pytestmark = [pytest.mark.bpy]

def driver(recipe: Path, out: Path, env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "comco.cli", "lab", "run", str(recipe), "--out", str(out),
                             "--scale", "smoke", "--quiet", "--executor", "slurm"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def status(out: Path, env) -> str:
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "status", str(out)], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def until(condition, what: str, timeout: float = 600) -> None:
    end = time.time() + timeout
    while not condition():
        assert time.time() < end, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.5)


def attempts(out: Path, stage: str) -> list[dict]:
    path = out / "stages" / stage / "logs" / "attempts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


@pytest.fixture(scope="module")
def recipe(tmp_path_factory):
    return tiny_recipe(tmp_path_factory.mktemp("recipe"))


@pytest.fixture(scope="module")
def local_run(recipe, tmp_path_factory):
    pytest.importorskip("bpy")
    out = tmp_path_factory.mktemp("local") / "run"
    lab(recipe, out)
    return out


@pytest.fixture
def slurm_env(tmp_path):
    """The stand-in commands first on PATH, their state in tmp_path/slurm; every job ended after."""
    pytest.importorskip("submitit")
    fakeslurm.install(tmp_path / "bin")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "FAKE_SLURM_DIR": str(tmp_path / "slurm"), "COMCO_SLURM_POLL_S": "0.5"}
    old = os.environ.get("FAKE_SLURM_DIR")
    os.environ["FAKE_SLURM_DIR"] = env["FAKE_SLURM_DIR"]
    yield env
    fakeslurm.stop_all()
    if old is None:
        del os.environ["FAKE_SLURM_DIR"]
    else:
        os.environ["FAKE_SLURM_DIR"] = old


def journaled(data: Path) -> dict[str, tuple[int, int]]:
    """The images a render's journal holds as finished: {path: (inode, mtime ns)}; an image
    rendered again is written anew (a temp file renamed over it)."""
    from comco.render.journal import read_journal

    out = {}
    for entry in read_journal(data).values() if data.is_dir() else ():
        if entry.get("status") == "ok":
            st = (data / entry["record"]["image"]).stat()
            out[entry["record"]["image"]] = (st.st_ino, st.st_mtime_ns)
    return out


def jobs(out: Path) -> dict:
    return json.loads((out / "jobs.json").read_text())


def job_state(job: str) -> dict:
    return fakeslurm.load(job)


def test_like_stages_go_out_as_one_array_with_the_recipe_request_and_give_the_local_results(
        recipe, local_run, slurm_env, tmp_path):
    out = tmp_path / "run"
    lab(recipe, out, "--executor", "slurm", env=slurm_env)
    assert stage_hashes(out) == stage_hashes(local_run)
    same_data(out, local_run)
    # the two renders were one sbatch: a job array of two tasks; the captions ran in the driver
    subs = [json.loads(line) for line in (tmp_path / "slurm" / "submissions.jsonl").read_text().splitlines()]
    assert subs == [{"job": "1000", "name": "comco-render", "tasks": 2}]
    assert set(jobs(out)) == {"render-train-simco", "render-test-simco"}
    assert sorted(e["jobs"][0] for e in jobs(out).values()) == ["1000_0", "1000_1"]
    # [run.slurm] with its [run.slurm.render] table, as sbatch flags
    batch = (out / "slurm" / "1000" / "1000_submission.sh").read_text()
    for flag in ("--partition=gpu", "--account=lab", "--time=30", "--cpus-per-task=2", "--gpus-per-node=1",
                 "--array=0-1%2", "--mem=32GB"):
        assert f"#SBATCH {flag}" in batch, flag
    # each stage's logs in its folder: links to the job's stdout / stderr
    logs = out / "stages" / "render-train-simco" / "logs"
    job = jobs(out)["render-train-simco"]["jobs"][0]
    assert (logs / f"{job}.out").resolve().is_file() and (logs / f"{job}.err").resolve().is_file()
    assert [a["job_id"] for a in attempts(out, "render-train-simco")] == [job]
    assert "0 failed, 0 left" in status(out, slurm_env).splitlines()[-1]

    # a stage whose job fails: the driver names it, quotes its log, and `lab status` shows it
    victim = out / "stages" / "render-test-simco"
    (victim / "stage.json").unlink()
    (victim / "data" / "dataset.json").write_text("{ this is not JSON", encoding="utf-8")
    r = lab(recipe, out, "--executor", "slurm", expect=1, env=slurm_env)
    assert "stage render-test-simco failed (job 1001)" in r.stderr
    assert "Traceback" not in r.stderr.splitlines()[0]
    quoted = [line.strip() for line in r.stderr.splitlines() if line.startswith("    ")]
    assert quoted and any("Error" in line for line in quoted)  # the job's own traceback, its last lines
    shown = status(out, slurm_env)
    row = next(line for line in shown.splitlines() if line.startswith("render-test-simco"))
    assert "failed" in row and "job 1001" in row
    assert any(line.strip().startswith("|") and "Error" in line for line in shown.splitlines())
    assert "1 failed" in shown.splitlines()[-1]

    # the cause removed, the next driver submits the failed stage again (it does not adopt the failed job)
    shutil.rmtree(victim / "data")
    lab(recipe, out, "--executor", "slurm", env=slurm_env)
    assert jobs(out)["render-test-simco"]["jobs"] == ["1000_1", "1001", "1002"]
    assert stage_hashes(out) == stage_hashes(local_run)
    assert "0 failed, 0 left" in status(out, slurm_env).splitlines()[-1]


def test_a_preempted_job_is_requeued_and_a_lost_job_submitted_again_and_the_data_is_the_same(
        recipe, local_run, slurm_env, tmp_path):
    out = tmp_path / "run"
    proc = driver(recipe, out, slurm_env)
    try:
        until(lambda: (out / "jobs.json").is_file()
              and (out / "stages" / "render-test-simco" / "logs" / "running.json").is_file(),
              "the test render to run")
        train, test = (jobs(out)[s]["jobs"][0] for s in ("render-train-simco", "render-test-simco"))
        fakeslurm.kill(test)  # the node under the test render is lost: no result, no checkpoint
        data = out / "stages" / "render-train-simco" / "data"
        until(lambda: len(journaled(data)) >= 3, "the training render to journal some images")
        # preemption as submitit's own SlurmJob._interrupt(timeout=True) does it: USR2 to the task,
        # which checkpoints the (Checkpointable) stage job and requeues it with `scontrol requeue`
        subprocess.run(["scancel", train, "--signal", "USR2"], env=slurm_env, check=True)
        before = journaled(data)  # what the first attempt had finished (it may add one before it stops)
        assert proc.wait(timeout=900) == 0, proc.stderr.read()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert job_state(train)["restarts"] == 1 and job_state(train)["state"] == "COMPLETED"
    assert [a["job_id"] for a in attempts(out, "render-train-simco")] == [train, train]  # the same job, again
    assert [a["restart"] for a in attempts(out, "render-train-simco")] == [0, 1]
    # the requeued job resumed from the render's journal: what the first attempt finished is the same file
    after = journaled(data)
    assert before and all(after[image] == stat for image, stat in before.items())
    lost = jobs(out)["render-test-simco"]["jobs"]
    assert lost[0] == test and len(lost) == 2 and job_state(test)["state"] == "NODE_FAIL"
    assert stage_hashes(out) == stage_hashes(local_run)
    same_data(out, local_run)


def test_a_driver_killed_and_started_again_reattaches_and_runs_no_stage_twice(recipe, local_run, slurm_env, tmp_path):
    out = tmp_path / "run"
    first = driver(recipe, out, slurm_env)
    try:
        until(lambda: (out / "jobs.json").is_file() and all(
            (out / "stages" / s / "logs" / "running.json").is_file() for s in ("render-train-simco",
                                                                           "render-test-simco")),
              "both render jobs to run")
        shown = status(out, slurm_env)
        for stage in ("render-train-simco", "render-test-simco"):
            row = next(line for line in shown.splitlines() if line.startswith(stage))
            assert "running" in row and "job 1000_" in row and "node fakenode1" in row and "min" in row, row
        assert next(line for line in shown.splitlines() if line.startswith("captions-simco-p0")).split()[1] == "left"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert fakeslurm.live_jobs()  # the jobs outlive their driver, as on a cluster
    lab(recipe, out, "--executor", "slurm", env=slurm_env)
    subs = (tmp_path / "slurm" / "submissions.jsonl").read_text().splitlines()
    assert len(subs) == 1  # nothing submitted again
    for stage in ("render-train-simco", "render-test-simco"):
        assert len(attempts(out, stage)) == 1
    assert stage_hashes(out) == stage_hashes(local_run)
    same_data(out, local_run)
    # and a third driver finds everything done: no job at all
    lab(recipe, out, "--executor", "slurm", env=slurm_env)
    assert len((tmp_path / "slurm" / "submissions.jsonl").read_text().splitlines()) == 1


def test_no_more_jobs_are_queued_at_once_than_max_queued(slurm_env, tmp_path):
    from support.labrun import SLURM_TABLE

    recipe = tiny_recipe(tmp_path, SLURM_TABLE.replace("[run.slurm]\n", "[run.slurm]\nmax_queued = 1\n"))
    out = tmp_path / "run"
    lab(recipe, out, "--executor", "slurm", env=slurm_env)
    # the two renders, ready together, went out one at a time: two jobs of one task, not an array of two
    subs = [json.loads(line) for line in (tmp_path / "slurm" / "submissions.jsonl").read_text().splitlines()]
    assert [s["tasks"] for s in subs] == [1, 1]
    first, second = (job_state(s["job"]) for s in subs)
    assert first["state"] == second["state"] == "COMPLETED" and second["submitted"] >= first["end"]
    assert len(stage_hashes(out)) == 4


def test_a_large_render_runs_as_a_shard_array_and_merges_into_the_same_dataset(local_run, slurm_env, tmp_path):
    from support.labrun import SLURM_TABLE

    recipe = tiny_recipe(tmp_path, SLURM_TABLE.replace("[run.slurm]\n", "[run.slurm]\nmax_queued = 8\n"))
    text = recipe.read_text().replace("[scales.smoke.render]\n", "[scales.smoke.render]\nshard_images = 12\n")
    recipe.write_text(text)
    out = tmp_path / "run"
    lab(recipe, out, "--executor", "slurm", env=slurm_env)
    # 30 training images in 3 shards, and the 6 test images in one job: one array of four renders
    subs = [json.loads(line) for line in (tmp_path / "slurm" / "submissions.jsonl").read_text().splitlines()]
    assert subs == [{"job": "1000", "name": "comco-render", "tasks": 4}]
    assert {f"render-train-simco-shard-{i}-of-3" for i in range(3)} <= set(jobs(out))
    assert "render-train-simco" not in jobs(out)  # the merge ran in the driver
    same_data(out, local_run)  # the merged dataset is the one render's, record for record


def test_comco_render_with_shards_is_an_array_and_a_merge_job_that_waits_for_it(slurm_env, tmp_path):
    out = tmp_path / "data"
    args = ["--object-set", "simco", "--objects", "2-3", "--n", "9", "--preset", "draft", "--resolution", "64",
            "--large-fraction", "0.12", "--small-fraction", "0.03-0.04",
            "--workers", "1", "--singles", "--quiet"]
    r = subprocess.run([sys.executable, "-m", "comco.cli", "render", *args, "--out", str(out), "--executor", "slurm",
                        "--shards", "3"], capture_output=True, text=True, timeout=300, env=slurm_env)
    assert r.returncode == 0, r.stderr[-2000:]
    subs = [json.loads(line) for line in (tmp_path / "slurm" / "submissions.jsonl").read_text().splitlines()]
    assert [s["tasks"] for s in subs] == [3, 1]
    merge = fakeslurm.load(subs[1]["job"])
    assert merge["options"]["dependency"] == f"afterok:{subs[0]['job']}"
    until(lambda: fakeslurm.load(subs[1]["job"])["state"] not in fakeslurm.LIVE, "the merge job", timeout=600)
    assert fakeslurm.load(subs[1]["job"])["state"] == "COMPLETED"
    one = tmp_path / "one"
    r = subprocess.run([sys.executable, "-m", "comco.cli", "render", *args, "--out", str(one)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (out / "scenes.jsonl").read_bytes() == (one / "scenes.jsonl").read_bytes()
    assert (out / "singles" / "singles.jsonl").read_bytes() == (one / "singles" / "singles.jsonl").read_bytes()


def test_a_sigkilled_slurm_local_driver_leaves_its_jobs_to_the_next_driver_which_adopts_them(
        recipe, local_run, tmp_path):
    """submitit's local jobs outlive a driver killed with SIGKILL (it cannot cancel them); the next
    driver watches them to their end instead of starting their stages again beside them."""
    pytest.importorskip("submitit")
    from comco.lab.executors.slurm import LocalController, _alive

    env = {**os.environ, "COMCO_SLURM_POLL_S": "0.5"}
    out = tmp_path / "run"
    renders = ("render-train-simco", "render-test-simco")
    first = subprocess.Popen([sys.executable, "-m", "comco.cli", "lab", "run", str(recipe), "--out", str(out),
                              "--scale", "smoke", "--quiet", "--executor", "slurm-local"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    controllers: dict[str, str] = {}
    try:
        until(lambda: (out / "jobs.json").is_file() and all(
            (out / "stages" / s / "logs" / "running.json").is_file() for s in renders), "both render jobs to run")
        controllers = {s: jobs(out)[s]["jobs"][0] for s in renders}
        data = out / "stages" / "render-train-simco" / "data"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
        assert _alive(int(controllers["render-train-simco"]))  # its job runs on without a driver
        before = journaled(data)
        lab(recipe, out, "--executor", "slurm-local", env=env)
    finally:
        if first.poll() is None:
            first.kill()
        for job in controllers.values():  # a failed test leaves no job running
            found = LocalController.find(job, out / "slurm" / "%j")
            if found is not None:
                found.send_signal(signal.SIGTERM)
    for stage in renders:
        assert jobs(out)[stage]["jobs"] == [controllers[stage]]  # adopted, not submitted again
        assert len(attempts(out, stage)) == 1  # each stage started once: never twice at a time
    assert not any(_alive(int(job)) for job in controllers.values())
    after = journaled(data)
    assert all(after[image] == stat for image, stat in before.items())  # nothing rendered again
    assert stage_hashes(out) == stage_hashes(local_run)
    same_data(out, local_run)
