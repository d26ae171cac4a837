"""One owner at a time: a stage runs only under the lock on its logs/owner.lock, and an owner
that finds the stage finished by an earlier one (logs/finished.json at the same hash) takes
that result instead of running it again. What a cancelled or requeued SLURM job's process,
running on for KillWait, needs (tests/cluster/test_real_slurm.py shows it on a real SLURM)."""

from __future__ import annotations

import fcntl
import json
import threading
import time

import pytest

import comco.lab.stages
from comco.io import write_json
from comco.lab.executors.base import FINISHED, LOGS, OWNER, OWNERS, RUNNING, StageCall, run_call


@pytest.fixture
def calls(monkeypatch):
    """The stage work replaced by a recorder: each call to execute is listed."""
    made = []

    def execute(kind, config, deps, out, threads):
        made.append(out)
        return {"images": len(made)}

    monkeypatch.setattr(comco.lab.stages, "execute", execute)
    return made


def call(tmp_path, digest="h1") -> StageCall:
    return StageCall("render-x", "render", {}, {}, str(tmp_path / "stage"), 1, digest)


def owners(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "stage" / LOGS / OWNERS).read_text().splitlines()]


def test_an_owner_runs_the_stage_and_records_its_end(tmp_path, calls):
    summary, _ = run_call(call(tmp_path))
    assert summary == {"images": 1} and len(calls) == 1
    finished = json.loads((tmp_path / "stage" / LOGS / FINISHED).read_text())
    assert finished["hash"] == "h1" and finished["summary"] == {"images": 1}
    assert [o["did"] for o in owners(tmp_path)] == ["started", "finished"]
    assert not (tmp_path / "stage" / LOGS / RUNNING).exists()
    # a second owner at the same hash takes that end; at another hash it runs the stage
    assert run_call(call(tmp_path))[0] == {"images": 1} and len(calls) == 1
    assert owners(tmp_path)[-1]["did"] == "found it finished"
    assert run_call(call(tmp_path, "h2"))[0] == {"images": 2} and len(calls) == 2


def test_a_second_owner_waits_for_the_first_and_takes_its_result(tmp_path, calls, capfd):
    logs = tmp_path / "stage" / LOGS
    logs.mkdir(parents=True)
    got = {}
    with open(logs / OWNER, "a") as first:  # an old job's process holds the stage
        fcntl.flock(first, fcntl.LOCK_EX)
        write_json(logs / RUNNING, {"pid": 4242, "node": "n7", "job_id": "77_1"})
        worker = threading.Thread(target=lambda: got.update(result=run_call(call(tmp_path))))
        worker.start()
        time.sleep(1.0)
        assert worker.is_alive() and calls == []  # it waits, and does not run the stage beside the owner
        write_json(logs / FINISHED, {"hash": "h1", "summary": {"images": 9}, "seconds": 3.0, "job_id": "77_1"})
        (logs / RUNNING).unlink()
    worker.join(timeout=30)
    assert got["result"] == ({"images": 9}, 3.0) and calls == []
    assert "stage render-x is held by job_id 77_1, node n7, pid 4242; waiting for it to end" in capfd.readouterr().err
    [entry] = owners(tmp_path)
    assert entry["did"] == "found it finished" and entry["by"] == "77_1" and entry["waited_s"] >= 0.9


def test_an_owner_that_failed_leaves_the_stage_to_the_next(tmp_path, monkeypatch):
    def broken(*_):
        raise ValueError("no captions")

    monkeypatch.setattr(comco.lab.stages, "execute", broken)
    with pytest.raises(ValueError):
        run_call(call(tmp_path))
    assert not (tmp_path / "stage" / LOGS / FINISHED).exists()
    assert [o["did"] for o in owners(tmp_path)] == ["started"]


def test_the_driver_starting_a_stage_again_forgets_an_earlier_end(tmp_path, calls):
    """A stage the driver starts anew (its stage.json removed, a failed attempt) is run, not taken
    from an earlier owner's finished.json."""
    from comco.lab.run import _start

    class Stage:
        id, hash = "render-x", "h1"

        def folder(self, out):
            return out / "stage"

    run_call(call(tmp_path))
    _start(tmp_path, Stage())
    assert not (tmp_path / "stage" / LOGS / FINISHED).exists()
    run_call(call(tmp_path))
    assert len(calls) == 2
