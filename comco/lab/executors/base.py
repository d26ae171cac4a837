"""The one interface the lab's run loop drives: start ready stages, wait for some to end.

The loop (comco/lab/run.py) decides what is ready and writes each stage's stage.json;
an executor only decides where a stage's work runs. A stage's work is one call,
`comco.lab.stages.execute(kind, config, deps, out, threads)`, the same wherever it runs,
so every executor gives the same files and numbers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

LOGS = "logs"  # OUT/stages/<id>/logs/: what a stage printed, per attempt
RUNNING = "running.json"  # in logs/ while a process runs the stage: pid, node, job, start
FAILED = "failed.json"  # in logs/ after a failed attempt: the message and the end of the log
# One owner at a time: a process runs a stage only while it holds the lock on logs/owner.lock.
# A SLURM job that is requeued or cancelled runs on for up to KillWait (30 s; submitit ignores
# SIGTERM), so its stage may be finished by it while the next attempt of the job starts or waits:
# the owner that finishes writes logs/finished.json, and a later owner at the same hash returns
# that instead of running the stage again. The driver removes finished.json when it (re)starts
# the stage (comco.lab.run._start). logs/owners.jsonl has one line per owner: what it did.
OWNER = "owner.lock"
FINISHED = "finished.json"
OWNERS = "owners.jsonl"


@dataclass(frozen=True)
class StageCall:
    """Everything a worker needs to run one stage (plain data: it is pickled or written as JSON)."""

    id: str
    kind: str
    config: dict
    deps: dict[str, str]  # role -> the input stage's folder
    out: str  # the stage's folder
    threads: int
    hash: str


@dataclass
class Outcome:
    """A stage that ended: its summary and seconds, or why it failed and the last lines it printed."""

    id: str
    summary: dict | None = None
    seconds: float = 0.0
    error: BaseException | None = None
    log_tail: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.error is not None


class StageFailed(RuntimeError):
    """A stage's job failed: the message names it and quotes the end of its log."""


class Executor(ABC):
    """Where stages run. Subclasses: local (a process pool), node (GPUs of one machine),
    slurm (jobs through submitit)."""

    name = "base"
    # kinds the driver runs in its own process, and whether those wait until nothing else
    # runs (the local pool: a render uses every core)
    inline_kinds: frozenset[str] = frozenset({"report"})
    inline_waits_for_idle = False

    def runs_inline(self, kind: str, config: dict) -> bool:
        """Whether the driver runs this stage itself (a sharded render's merge: seconds of links)."""
        return kind in self.inline_kinds or bool(config.get("shards"))

    def describe(self, jobs: int, threads: int) -> str:
        """How stages run, for the run's first line."""
        return f"{jobs} at a time, {threads} thread(s) each"

    @abstractmethod
    def free(self) -> int:
        """How many more stages may start now."""

    @abstractmethod
    def busy(self) -> int:
        """How many stages are in flight."""

    @abstractmethod
    def start(self, calls: list[StageCall]) -> None:
        """Start these stages (all ready, at most free() of them)."""

    @abstractmethod
    def wait(self) -> list[Outcome]:
        """Block until at least one stage in flight has ended; those that did."""

    def abort(self) -> None:
        """The driver is stopping on an error or an interrupt: stop what this executor owns."""
        return None  # a hook: an executor that owns nothing has nothing to stop

    def close(self) -> None:
        """The run is over (normally or not): release pools and files."""
        return None  # a hook: nothing held by default


def log_tail(path: Path, lines: int = 12) -> list[str]:
    """The last lines of a log file (none when it is missing)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


def run_call(call: StageCall) -> tuple[dict, float]:
    """Run one stage's work here; (its summary, its seconds). Every executor ends up here.
    The stage runs only under its owner lock, and not again once an owner finished it."""
    import os
    import socket
    import time

    from comco.io import write_json
    from comco.lab.stages import execute

    logs = Path(call.out) / LOGS
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / OWNER, "a") as lock:
        waited = _take(lock, logs, call.id)
        me = {"pid": os.getpid(), "node": socket.gethostname(), "job_id": slurm_job_id(), "waited_s": round(waited, 1)}
        done = _read_json(logs / FINISHED)
        if done is not None and done.get("hash") == call.hash:
            _note_owner(logs, {**me, "did": "found it finished", "by": done.get("job_id") or done.get("pid")})
            return done["summary"], done["seconds"]
        (logs / FAILED).unlink(missing_ok=True)
        write_json(logs / RUNNING, {"pid": me["pid"], "node": me["node"], "started": time.time(),
                                    "job_id": me["job_id"], "devices": os.environ.get("CUDA_VISIBLE_DEVICES")})
        _note_owner(logs, {**me, "did": "started"})
        t0 = time.perf_counter()
        try:
            summary = execute(call.kind, call.config, call.deps, call.out, call.threads)
            seconds = time.perf_counter() - t0
            write_json(logs / FINISHED, {"hash": call.hash, "summary": summary, "seconds": seconds,
                                         "job_id": me["job_id"], "pid": me["pid"], "time": time.time()})
            _note_owner(logs, {**me, "did": "finished"})
        finally:
            (logs / RUNNING).unlink(missing_ok=True)
    return summary, seconds


def _take(lock, logs: Path, stage: str) -> float:
    """Hold the stage's owner lock (waiting for an owner that still runs it); the seconds waited."""
    import fcntl
    import sys
    import time

    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return 0.0
    except BlockingIOError:
        pass
    owner = _read_json(logs / RUNNING) or {}
    who = ", ".join(f"{k} {owner[k]}" for k in ("job_id", "node", "pid") if owner.get(k)) or "another process"
    print(f"comco: stage {stage} is held by {who}; waiting for it to end", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    fcntl.flock(lock, fcntl.LOCK_EX)
    return time.perf_counter() - t0


def _read_json(path: Path) -> dict | None:
    import json

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _note_owner(logs: Path, entry: dict) -> None:
    import json
    import time

    with open(logs / OWNERS, "a", encoding="utf-8") as f:
        f.write(json.dumps({**entry, "time": time.time()}) + "\n")


def slurm_job_id() -> str | None:
    """This process's SLURM job id as sacct and submitit write it (ARRAY_TASK for an array task)."""
    import os

    if os.environ.get("SLURM_ARRAY_JOB_ID"):
        return f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ.get('SLURM_ARRAY_TASK_ID', '0')}"
    return os.environ.get("SLURM_JOB_ID")


def record_failure(stage_folder: Path, outcome: Outcome) -> None:
    """logs/failed.json: what `comco lab status` shows of a failed stage."""
    import time
    import traceback

    from comco.io import write_json

    error = outcome.error
    tail = outcome.log_tail
    if not tail and error is not None:  # a local worker's exception: its traceback is its log
        tail = "".join(traceback.format_exception(error)).splitlines()[-12:]
    message = str(error).splitlines()[0] if error is not None and str(error) else repr(error)
    write_json(Path(stage_folder) / LOGS / FAILED, {"message": message, "log_tail": tail, "time": time.time()})
