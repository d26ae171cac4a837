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
    """Run one stage's work here; (its summary, its seconds). Every executor ends up here."""
    import os
    import socket
    import time

    from comco.io import write_json
    from comco.lab.stages import execute

    logs = Path(call.out) / LOGS
    logs.mkdir(parents=True, exist_ok=True)
    (logs / FAILED).unlink(missing_ok=True)
    write_json(logs / RUNNING, {"pid": os.getpid(), "node": socket.gethostname(), "started": time.time(),
                                "job_id": slurm_job_id(), "devices": os.environ.get("CUDA_VISIBLE_DEVICES")})
    t0 = time.perf_counter()
    try:
        summary = execute(call.kind, call.config, call.deps, call.out, call.threads)
    finally:
        (logs / RUNNING).unlink(missing_ok=True)
    return summary, time.perf_counter() - t0


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
