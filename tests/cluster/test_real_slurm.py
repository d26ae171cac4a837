"""comco on a real one-node SLURM (tests/cluster/start-slurm.sh; skipped with the reason without it).

What the stand-in commands of tests/support/fakeslurm.py cannot show: sbatch, the scheduler,
slurmd and slurmdbd as they are. The walk-through of docs/guide/cluster.md, read from the page:
a sharded render whose merge equals a local render, and a cut lab recipe whose results.json
equals the local pool's byte for byte; the checks before submitting against the real sinfo and
an sbatch that refuses; a cancelled and a requeued stage that each run once (one owner at a
time); a SIGKILLed driver started again; `comco lab status` on a pending job array, a job that
started but whose stage has not, and a cancelled one.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from support.labrun import RECIPE, lab, same_data, stage_hashes, tiny_recipe
from support.realslurm import cancel, commands, sacct_state, squeue, until, walkthrough

pytestmark = [pytest.mark.slurm_real, pytest.mark.bpy]

HOST = socket.gethostname().split(".")[0]


def comco(*args: str, cwd=None, env=None, expect: int = 0, timeout: float = 600) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "comco.cli", *args], capture_output=True, text=True, cwd=cwd, env=env,
                       timeout=timeout)
    assert r.returncode == expect, (r.stdout + r.stderr)[-3000:]
    return r


def one_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    return r.stderr.strip()


def run(cmd: list[str], cwd: Path, env=None) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=1800)
    assert r.returncode == 0, (" ".join(cmd[3:]) + "\n" + r.stdout + r.stderr)[-3000:]
    return r


def without(cmd: list[str], *options: str) -> list[str]:
    """The command without these options and their values."""
    out, skip = [], False
    for word in cmd:
        if skip:
            skip = False
        elif word in options:
            skip = True
        else:
            out.append(word)
    return out


def pixels(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path))


def with_slurm_table(text: str) -> str:
    """A recipe's text with the walk-through's [run.slurm] table after its [run] table."""
    run_at = text.index("\n[run]\n")
    end = text.index("\n", text.index("device = ", run_at)) + 1
    return text[:end] + "\n" + walkthrough("recipe") + text[end:]


def jobs(out: Path) -> dict:
    return json.loads((out / "jobs.json").read_text())


def log_lines(out: Path, stage: str, name: str) -> list[dict]:
    path = out / "stages" / stage / "logs" / name
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


# ---------------------------------------------------------------- the walk-through

def test_the_walkthrough_render_is_a_shard_array_whose_merge_equals_a_local_render(tmp_path):
    check = commands("check")
    for cmd in check:  # sinfo and sacct answer
        run(cmd, tmp_path)
    [render] = commands("render")
    r = run(render, tmp_path)
    said = r.stdout + r.stderr
    assert "submitted 3 shard jobs" in said and "merge job" in said
    out = tmp_path / render[render.index("--out") + 1]
    follow = said.split("sacct -j ")[1].split("`")[0]  # the command it prints: sacct -j ARRAY,MERGE
    array, merge = follow.split(",")
    until(lambda: sacct_state(merge) not in ("", "PENDING", "RUNNING", "COMPLETING"), "the merge job", timeout=900)
    assert sacct_state(merge) == "COMPLETED" and all(sacct_state(f"{array}_{i}") == "COMPLETED" for i in range(3))
    # the same render here, in one piece
    local = without(render, "--executor", "--shards", "--slurm")
    local[local.index("--out") + 1] = "one"
    run(local, tmp_path)
    one = tmp_path / "one"
    assert (out / "scenes.jsonl").read_bytes() == (one / "scenes.jsonl").read_bytes()
    assert (out / "singles" / "singles.jsonl").read_bytes() == (one / "singles" / "singles.jsonl").read_bytes()
    images = sorted(p.relative_to(one) for p in one.rglob("*.png"))
    assert len(images) >= 12 and images == sorted(p.relative_to(out) for p in out.rglob("*.png"))
    assert all(np.array_equal(pixels(out / p), pixels(one / p)) for p in images)


def test_the_walkthrough_lab_run_gives_the_local_results_byte_for_byte(tmp_path, slurm_env):
    text = RECIPE.read_text(encoding="utf-8")
    cut = text.replace('[scales.smoke]\nstages = ["render", "captions", "scratch", "probe", "finetune", "analyses", '
                       '"labclip", "report"]', '[scales.smoke]\nstages = ["render", "captions", "scratch", "probe", '
                       '"report"]')
    assert cut != text
    (tmp_path / "my-recipe.toml").write_text(with_slurm_table(cut), encoding="utf-8")
    run_cmd, status_cmd = commands("lab")
    run(run_cmd, tmp_path, env=slurm_env)
    shown = run(status_cmd, tmp_path).stdout.splitlines()
    out = tmp_path / run_cmd[run_cmd.index("--out") + 1]
    assert shown[-1] == f"{len(stage_hashes(out))} stages: {len(stage_hashes(out))} done, 0 running, 0 queued, " \
                        "0 failed, 0 left"
    submitted = {job for entry in jobs(out).values() for job in entry["jobs"]}
    assert submitted and all(sacct_state(job) == "COMPLETED" for job in submitted)  # real jobs, all of them
    local = tmp_path / "local"
    lab(tmp_path / "my-recipe.toml", local, "--executor", "local")
    assert stage_hashes(out) == stage_hashes(local)
    assert (out / "results.json").read_bytes() == (local / "results.json").read_bytes()


# ---------------------------------------------------------------- checked before anything is submitted

def test_what_no_node_can_run_and_what_sbatch_refuses_end_with_one_line_and_leave_nothing(tmp_path):
    render = commands("render")[0][3:]
    base = render[:render.index("--executor")]
    cpus = int(subprocess.run(["sinfo", "-h", "-N", "-o", "%c"], capture_output=True, text=True).stdout.split()[0])
    too_many = one_line(comco(*base, "--executor", "slurm", "--slurm", f"cpus={cpus + 1}", "--out", "a",
                              cwd=tmp_path, expect=2))
    assert f"--slurm cpus={cpus + 1}" in too_many and f"the largest node has {cpus} CPUs" in too_many
    gpu = one_line(comco(*base, "--device", "cuda", "--executor", "slurm", "--out", "b", cwd=tmp_path, expect=2))
    assert "gpus = 1 (the default" in gpu and "has a GPU" in gpu
    shards = one_line(comco(*base, "--executor", "slurm", "--shards", "1000000", "--out", "c", cwd=tmp_path, expect=2))
    assert "--shards 1000000" in shards
    # sbatch itself refuses (a feature no node has): its words, the shard jobs cancelled, nothing left
    refused = one_line(comco(*base, "--executor", "slurm", "--shards", "2", "--slurm", "constraint=nosuchfeature",
                             "--slurm", "cpus=1", "--slurm", "memory=1", "--out", "d", cwd=tmp_path, expect=2))
    assert "sbatch refused" in refused and "Invalid feature specification" in refused
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # the lab: the recipe's default gpus = 1 on this GPU-less node, then a constraint sbatch refuses
    (tmp_path / "r.toml").write_text(RECIPE.read_text(encoding="utf-8"), encoding="utf-8")
    line = one_line(comco("lab", "run", "r.toml", "--scale", "smoke", "--executor", "slurm", "--out", "run",
                          cwd=tmp_path, expect=2))
    assert line.startswith("comco: error: recipe key 'run.slurm.gpus' = 1 (the default") and "has a GPU" in line
    assert not (tmp_path / "run").exists()
    text = with_slurm_table(RECIPE.read_text(encoding="utf-8"))
    text = text.replace("time = 20\n", 'time = 20\nconstraint = "nosuch"\n')
    (tmp_path / "r.toml").write_text(text, encoding="utf-8")
    line = one_line(comco("lab", "run", "r.toml", "--scale", "smoke", "--executor", "slurm", "--out", "run",
                          cwd=tmp_path, expect=2))
    assert "sbatch refused the render job(s)" in line and "Invalid feature specification" in line
    assert not (tmp_path / "run" / "jobs.json").exists()


# ---------------------------------------------------------------- jobs stopped under a running driver

@pytest.fixture(scope="module")
def renders(tmp_path_factory):
    """The tiny recipe (two renders and their captions) with renders long enough to be caught
    running, and its local run: the reference."""
    folder = tmp_path_factory.mktemp("recipe")
    path = tiny_recipe(folder, "\n" + walkthrough("recipe"))
    text = path.read_text().replace("train_images = 30\ntest_images = 6", "train_images = 200\ntest_images = 120")
    path.write_text(text)
    local = folder / "local"
    lab(path, local)
    return path, local


def driver(recipe: Path, out: Path, env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "comco.cli", "lab", "run", str(recipe), "--out", str(out),
                             "--scale", "smoke", "--quiet", "--executor", "slurm"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def running(out: Path, stage: str, job: str | None = None) -> str | None:
    """The job whose process holds the stage now (its running.json), if it is `job` (or any)."""
    path = out / "stages" / stage / "logs" / "running.json"
    try:
        holder = json.loads(path.read_text()).get("job_id")
    except (OSError, ValueError):
        return None
    return holder if job in (None, holder) else None


RENDERS = ("render-train-simco", "render-test-simco")


def test_a_cancelled_and_a_requeued_stage_each_run_once(renders, tmp_path, slurm_env):
    """One job at a time (max_queued = 1). The first render's job is cancelled while it runs. Its
    process runs on (submitit ignores SIGTERM; SLURM kills it at KillWait, 30 s) and is held
    (SIGSTOP, after SLURM's SIGCONT and SIGTERM) until the driver, which waits 15 s for a
    result, has submitted the stage again: then it finishes the stage, and the new job, which
    SLURM starts once the old one's processes are gone (a node with a job completing takes no
    new one), takes that result instead of rendering again. The second render's job is
    requeued while it runs and let start again at once (scontrol update StartTime=now: SLURM
    would hold it 121 s); its old process finishes the stage, and the requeued job takes that
    result. On more nodes than one the new job may start beside the old process: it then
    waits for the stage's owner lock (tests/test_lab_owner.py)."""
    recipe, local = renders
    text = recipe.read_text().replace("[run.slurm]\n", "[run.slurm]\nmax_queued = 1\n")
    (tmp_path / "one-at-a-time.toml").write_text(text)
    out = tmp_path / "run"
    proc = driver(tmp_path / "one-at-a-time.toml", out, slurm_env)
    stopped = None
    try:
        first = until(lambda: next((s for s in RENDERS if running(out, s)), None), "a render to run", timeout=300)
        second = next(s for s in RENDERS if s != first)
        holder = json.loads((out / "stages" / first / "logs" / "running.json").read_text())
        old = holder["job_id"]
        subprocess.run(["scancel", old], check=True)
        # SLURM ends a job with SIGCONT and SIGTERM to its processes: hold the old one after those
        until(lambda: (squeue(old) or {}).get("state") != "RUNNING", "the cancelled job to end")
        time.sleep(1)
        os.kill(holder["pid"], signal.SIGSTOP)
        stopped = holder["pid"]
        new = until(lambda: jobs(out)[first]["jobs"][1:], "the driver to submit the cancelled stage again")[0]
        os.kill(stopped, signal.SIGCONT)
        job = until(lambda: running(out, second), "the second render to run", timeout=600)
        subprocess.run(["scontrol", "requeue", job], check=True)
        until(lambda: (squeue(job) or {}).get("reason") == "BeginTime", "the requeued job to wait for its BeginTime")
        subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=True)
        assert proc.wait(timeout=900) == 0, proc.stderr.read()[-3000:]
        until(lambda: squeue(job) is None and sacct_state(job) == "COMPLETED", "the requeued job to end")
    finally:
        if stopped is not None:
            try:
                os.kill(stopped, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
        cancel(*(j for e in (jobs(out).values() if (out / "jobs.json").is_file() else ()) for j in e["jobs"]))
    for stage in RENDERS:
        owners = log_lines(out, stage, "owners.jsonl")
        assert [o["did"] for o in owners].count("finished") == 1, owners  # the stage ran to its end once
        done = next(i for i, o in enumerate(owners) if o["did"] == "finished")
        assert all(o["did"] == "found it finished" for o in owners[done + 1:]), owners  # and not again
    # the cancelled stage: the old job CANCELLED, its process finished the stage (or, killed
    # at KillWait on a slow machine, left it to the new job, which then ran it)
    assert jobs(out)[first]["jobs"] == [old, new]
    assert sacct_state(old) == "CANCELLED" and sacct_state(new) == "COMPLETED"
    owners = log_lines(out, first, "owners.jsonl")
    assert [o["job_id"] for o in owners if o["did"] != "finished"] == [old, new], owners
    assert owners[-1]["job_id"] == new, owners
    # the requeued stage: one job, started twice; its first start finished the stage, the second found it so
    assert jobs(out)[second]["jobs"] == [job]
    assert [(a["job_id"], a["restart"]) for a in log_lines(out, second, "attempts.jsonl")] == [(job, 0), (job, 1)]
    assert [o["did"] for o in log_lines(out, second, "owners.jsonl")] == ["started", "finished", "found it finished"]
    assert stage_hashes(out) == stage_hashes(local)
    same_data(out, local)


def test_a_sigkilled_driver_started_again_reattaches_to_its_jobs(renders, tmp_path, slurm_env):
    recipe, local = renders
    out = tmp_path / "run"
    first = driver(recipe, out, slurm_env)
    try:
        until(lambda: all(running(out, s) for s in RENDERS), "both renders to run", timeout=300)
        submitted = {s: jobs(out)[s]["jobs"] for s in RENDERS}
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
        assert all(squeue(j[0]) for j in submitted.values())  # the jobs outlive their driver
        lab(recipe, out, "--executor", "slurm", env=slurm_env)
    finally:
        if first.poll() is None:
            first.kill()
        cancel(*(j for e in (jobs(out).values() if (out / "jobs.json").is_file() else ()) for j in e["jobs"]))
    for stage in RENDERS:
        assert jobs(out)[stage]["jobs"] == submitted[stage]  # adopted, nothing submitted again
        assert sacct_state(submitted[stage][0]) == "COMPLETED"
        assert [o["did"] for o in log_lines(out, stage, "owners.jsonl")] == ["started", "finished"]
    assert stage_hashes(out) == stage_hashes(local)
    same_data(out, local)


# ---------------------------------------------------------------- lab status against squeue and sacct

def test_lab_status_reads_a_pending_array_a_started_job_and_a_cancelled_one(tmp_path):
    from comco.io import write_json
    from comco.lab.graph import build_stages
    from comco.lab.recipe import load_recipe
    from comco.lab.run import prepare_folder

    recipe = load_recipe(tiny_recipe(tmp_path, "\n" + walkthrough("recipe")), "smoke")
    out = tmp_path / "run"
    prepare_folder(out, recipe, resume=False, overwrite=False)
    stages = {s.id: s for s in build_stages(recipe)}

    def sbatch(*args: str) -> str:
        r = subprocess.run(["sbatch", "--parsable", "-c", "1", "--mem=100M", "-t", "5", "-o", "/dev/null", *args],
                           capture_output=True, text=True, check=True)
        return r.stdout.strip()

    array = sbatch("--hold", "--array=0-9%10", "--wrap", "sleep 1")  # pending, held: 12_[0-9%10]
    started = sbatch("--wrap", "sleep 300")
    gone = sbatch("--hold", "--wrap", "sleep 1")
    try:
        subprocess.run(["scancel", gone], check=True)
        until(lambda: (squeue(started) or {}).get("state") == "RUNNING", "a job to start")
        until(lambda: sacct_state(gone) == "CANCELLED", "sacct to have the cancelled job")
        raw = subprocess.run(["squeue", "-h", "-o", "%i", "-j", array], capture_output=True, text=True).stdout
        assert raw.strip() == f"{array}_[0-9%10]"  # the form an unexpanded pending array takes
        mapping = {"render-train-simco": f"{array}_0", "render-test-simco": f"{array}_3",
                   "captions-simco-p0": started, "captions-simco-p1": gone}
        write_json(out / "jobs.json", {sid: {"hash": stages[sid].hash, "kind": stages[sid].kind, "jobs": [job],
                                             "cluster": "slurm", "collected": False} for sid, job in mapping.items()})
        shown = comco("lab", "status", str(out)).stdout.splitlines()
        row = {line.split()[0]: line for line in shown if line.split() and line.split()[0] in stages}
        assert row["render-train-simco"].split()[1:] == ["queued", "job", f"{array}_0"]
        assert row["render-test-simco"].split()[1:] == ["queued", "job", f"{array}_3"]
        # running from the moment SLURM starts it, though no process of the stage wrote running.json
        assert not (out / "stages" / "captions-simco-p0" / "logs" / "running.json").exists()
        assert row["captions-simco-p0"].split()[1:6] == ["running", "job", f"{started},", "node", f"{HOST},"]
        assert row["captions-simco-p1"].split()[1:5] == ["left", "job", gone, "CANCELLED;"]
        assert shown[-1] == "4 stages: 0 done, 1 running, 2 queued, 0 failed, 1 left"
        # the pending array cancelled: sacct's one row, 12_[0-9%10] CANCELLED, speaks for every task
        subprocess.run(["scancel", array, started], check=True)
        until(lambda: sacct_state(f"{array}_[0-9%10]") == "CANCELLED", "sacct to have the cancelled array")
        until(lambda: squeue(started) is None, "the started job to end")
        shown = comco("lab", "status", str(out)).stdout.splitlines()
        assert shown[-1] == "4 stages: 0 done, 0 running, 0 queued, 0 failed, 4 left"
        assert all("CANCELLED" in line for line in shown[:-1] if line.split()[1] == "left")
    finally:
        cancel(array, started, gone)
    shutil.rmtree(out)
