"""`comco lab status OUT` on a folder whose stages are in every state: done, running (job,
node, minutes), queued (a SLURM job that has not started), failed (its message and the end of
its log) and left, with the counts, read from the files the executors write and from sacct
(the stand-in of tests/support/fakeslurm.py). Nothing runs: the states are written here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from support import fakeslurm
from support.labrun import tiny_recipe

from comco.io import write_json
from comco.lab.graph import build_stages
from comco.lab.recipe import load_recipe
from comco.lab.run import prepare_folder


def test_status_shows_done_running_queued_failed_and_left(tmp_path, monkeypatch):
    recipe = load_recipe(tiny_recipe(tmp_path), "smoke")
    out = tmp_path / "run"
    prepare_folder(out, recipe, resume=False, overwrite=False)
    stages = {s.id: s for s in build_stages(recipe)}
    assert set(stages) == {"render-train-simco", "render-test-simco", "captions-simco-p0", "captions-simco-p1"}

    fakeslurm.install(tmp_path / "bin")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "FAKE_SLURM_DIR": str(tmp_path / "slurm")}
    monkeypatch.setenv("FAKE_SLURM_DIR", env["FAKE_SLURM_DIR"])
    now = time.time()
    for task, state, node in ((0, "PENDING", ""), (1, "RUNNING", fakeslurm.NODE)):
        fakeslurm.save({"id": f"1000_{task}", "array_id": "1000", "task": task, "name": "comco-render",
                        "state": state, "node": node, "start": None if state == "PENDING" else now - 120,
                        "end": None})
    write_json(out / "jobs.json", {sid: {"hash": stages[sid].hash, "kind": "render", "jobs": [job], "cluster": "slurm",
                                         "collected": False}
                                   for sid, job in (("render-train-simco", "1000_0"), ("render-test-simco", "1000_1"))})
    running = out / "stages" / "render-test-simco" / "logs"
    running.mkdir(parents=True)
    write_json(running / "running.json", {"pid": 1, "node": "elsewhere", "started": now - 120, "job_id": "1000_1",
                                          "devices": None})
    done = out / "stages" / "captions-simco-p0"
    done.mkdir(parents=True)
    write_json(done / "stage.json", {"hash": stages["captions-simco-p0"].hash, "seconds": 1.5})
    failed = out / "stages" / "captions-simco-p1" / "logs"
    failed.mkdir(parents=True)
    write_json(failed / "failed.json", {"message": "stage captions-simco-p1 failed (job 1002)",
                                        "log_tail": [f"line {i}" for i in range(8)] + ["ValueError: no captions"]})

    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "status", str(out)], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    row = {line.split()[0]: line for line in lines if line.split() and line.split()[0] in stages}
    assert row["render-train-simco"].split()[1:] == ["queued", "job", "1000_0"]
    running_row = row["render-test-simco"]
    assert "running" in running_row and "job 1000_1" in running_row and f"node {fakeslurm.NODE}" in running_row
    minutes = float(running_row.split(", ")[-1].split()[0])  # since the stage started (the machine may be slow)
    assert 2.0 <= minutes < 30 and running_row.endswith(" min")
    assert row["captions-simco-p0"].split()[1:] == ["done", "1.5", "s"]
    assert "failed" in row["captions-simco-p1"] and "job 1002" in row["captions-simco-p1"]
    tail = [line.strip() for line in lines if line.strip().startswith("|")]
    assert tail == [f"| line {i}" for i in (4, 5, 6, 7)] + ["| ValueError: no captions"]  # the log's last lines
    assert lines[-1] == "4 stages: 1 done, 1 running, 1 queued, 1 failed, 0 left"

    # the queued job ends without a trace of the stage: it is left to run again, and counted so
    fakeslurm.update("1000_0", state="CANCELLED", end=now)
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "status", str(out)], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.stdout.splitlines()[-1] == "4 stages: 1 done, 1 running, 0 queued, 1 failed, 1 left"
    # status writes nothing
    assert json.loads((out / "jobs.json").read_text())["render-train-simco"]["jobs"] == ["1000_0"]
