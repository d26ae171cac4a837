"""A training stage under the stand-in SLURM (tests/support/fakeslurm.py) preempted mid-run:
submitit requeues its job, the stage resumes from its checkpoint (the steps before it are not
trained again) and ends with the weights of the same stage run without a break, bit for bit
(the training loop's promise for a resumed run on one machine: weights, optimiser, schedule,
data order and caption sampling come back; tests/test_train_loop.py). The whole path is slow
(jobs start their own Python and torch: 11 min on the loaded 2-core machine); its fast
companion stops the stage in this process as submitit's signal handler does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support import fakeslurm

pytestmark = [pytest.mark.torch]

STEPS = 60  # the stage checkpoints every STEPS // 3 steps: the test holds it at the first, mid-run


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    pytest.importorskip("submitit")
    fakeslurm.install(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_DIR", str(tmp_path / "slurm"))
    yield
    fakeslurm.stop_all()


def until(condition, what: str, timeout: float = 900) -> None:
    end = time.time() + timeout
    while not condition():
        assert time.time() < end, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.02)


def scratch_stage(tmp_path: Path, steps: int) -> dict:
    from support.train import make_dataset

    make_dataset(tmp_path / "render" / "data", n=24)
    return {"captions": ["and"], "resolution": 32, "patch_size": 8, "context_length": 16, "width": 64, "layers": 1,
            "tower": "vit", "seed": 0, "steps": steps, "batch_size": 12, "lr": 1e-3, "device": "cpu", "warmup": 5,
            "weight_decay": 0.1}


def metrics(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]


def test_a_stage_stopped_after_a_checkpoint_resumes_from_it_with_the_unbroken_weights(
        tmp_path, monkeypatch, single_thread):
    """What a requeued job runs: the same StageJob (submitit's Checkpointable.checkpoint), whose
    stage finds its checkpoint in its folder. The stop is submitit's: SystemExit out of the
    training loop, raised here right after the step-4 checkpoint."""
    torch = pytest.importorskip("torch")
    from comco.lab.executors.base import StageCall
    from comco.lab.stages import execute
    from comco.models import load_checkpoint
    from comco.train import loop

    pytest.importorskip("submitit")
    from comco.lab.executors.slurm import StageJob

    config = scratch_stage(tmp_path, 12)  # a checkpoint every 4 steps
    deps = {"data": str(tmp_path / "render")}
    broken, unbroken = tmp_path / "broken", tmp_path / "unbroken"
    job = StageJob(StageCall("scratch-broken", "scratch", config, deps, str(broken), 1, "h"))
    again = job.checkpoint()
    assert again.function is job and again.args == ()  # the requeued job runs the same call
    save = loop.Trainer.save

    def preempted_after_the_first_checkpoint(self, name):
        path = save(self, name)
        if name == loop.CHECKPOINT_NAME and self.step == 4:
            raise SystemExit(-1)
        return path

    monkeypatch.setattr(loop.Trainer, "save", preempted_after_the_first_checkpoint)
    with pytest.raises(SystemExit):
        execute("scratch", config, deps, str(broken), 1)
    monkeypatch.setattr(loop.Trainer, "save", save)
    assert load_checkpoint(broken / "checkpoint.pt")["step"] == 4 and not (broken / "model.pt").exists()
    first = {m["step"]: m["time"] for m in metrics(broken)}
    assert sorted(first) == [1, 2, 3, 4]
    summary = execute("scratch", config, deps, str(broken), 1)
    assert summary["steps"] == 12 and not (broken / "checkpoint.pt").exists()
    logged = metrics(broken)
    assert [m["step"] for m in logged] == list(range(1, 13))
    assert all(m["time"] == first[m["step"]] for m in logged if m["step"] <= 4)  # not trained again
    execute("scratch", config, deps, str(unbroken), 1)
    a, b = load_checkpoint(broken / "model.pt"), load_checkpoint(unbroken / "model.pt")
    for key, value in b["state_dict"].items():
        assert torch.equal(value, a["state_dict"][key]), key
    assert [m["loss"] for m in logged] == [m["loss"] for m in metrics(unbroken)]


@pytest.mark.slow
def test_a_preempted_training_resumes_from_its_checkpoint_and_ends_with_the_unbroken_weights(
        fake_slurm, tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from comco.lab.executors import slurm
    from comco.lab.executors.base import StageCall
    from comco.models import load_checkpoint

    monkeypatch.setattr(slurm, "POLL_S", 0.5)
    config = scratch_stage(tmp_path, STEPS)
    calls = {name: StageCall(f"scratch-{name}", "scratch", config, {"data": str(tmp_path / "render")},
                             str(tmp_path / name), 1, "h") for name in ("broken", "unbroken")}
    ex = slurm.SlurmExecutor(tmp_path / "out", {"run": {"slurm": {"time": 60}}}, cluster="slurm")
    ex.start(list(calls.values()))  # one job array: the same machine, the same thread count
    broken = Path(calls["broken"].out)
    job = ex.registry()["scratch-broken"]["jobs"][0]
    until(lambda: (broken / "checkpoint.pt").is_file(), "the first checkpoint")
    task = fakeslurm.load(job)["step_pid"]
    os.kill(task, signal.SIGSTOP)  # hold it mid-run while the test looks
    try:
        reached = load_checkpoint(broken / "checkpoint.pt")["step"]
        assert 0 < reached < STEPS and not (broken / "model.pt").exists()
        preempted = time.time()
        # preemption as SLURM does it: USR2 to the task; submitit requeues the Checkpointable job
        subprocess.run(["scancel", job, "--signal", "USR2"], check=True)
    finally:
        os.kill(task, signal.SIGCONT)
    outcomes = []
    while ex.busy():
        outcomes += ex.wait()
    assert sorted((o.id, o.failed) for o in outcomes) == [("scratch-broken", False), ("scratch-unbroken", False)]
    # the result is in before the stand-in records the job's end
    until(lambda: fakeslurm.load(job)["state"] not in fakeslurm.LIVE, "the job's end")
    rec = fakeslurm.load(job)
    assert rec["restarts"] == 1 and rec["state"] == "COMPLETED"
    starts = [json.loads(line) for line in (broken / "logs" / "attempts.jsonl").read_text().splitlines()]
    assert [a["restart"] for a in starts] == [0, 1] and starts[1]["time"] > preempted
    # resumed from the checkpoint: the steps up to it were logged by the first attempt, the rest after the requeue
    logged = metrics(broken)
    assert [m["step"] for m in logged] == list(range(1, STEPS + 1))
    assert all(m["time"] < preempted for m in logged if m["step"] <= reached)
    assert all(m["time"] > starts[1]["time"] for m in logged if m["step"] > reached)
    # and the end is the unbroken run's, bit for bit
    a = load_checkpoint(broken / "model.pt")
    b = load_checkpoint(Path(calls["unbroken"].out) / "model.pt")
    assert a["step"] == b["step"] == STEPS
    for key, value in b["state_dict"].items():
        assert torch.equal(value, a["state_dict"][key]), key
    assert [m["loss"] for m in logged] == [m["loss"] for m in metrics(Path(calls["unbroken"].out))]
