"""`--executor slurm`: each ready stage a SLURM job through submitit; `slurm-local` the same
through submitit's LocalExecutor (jobs as processes here: a rehearsal of a cluster run).

    OUT/jobs.json                    stage id -> its hash and the job ids it was given
    OUT/slurm/<job id>/              submitit's files: the pickled call, its result, the logs
    OUT/stages/<id>/logs/<job>.out   (and .err) links to the job's logs

A batch of ready stages of one kind goes out as one job array. Resources come from the
recipe's [run.slurm] table, replaced per kind by [run.slurm.KIND]. A job that is preempted
or reaches its time limit is checkpointed and requeued by submitit (StageJob is
Checkpointable), and the stage resumes from its own journal or checkpoint. A driver that
starts on a folder with live jobs re-attaches to them (under slurm-local: the local jobs a
killed driver left running): a stage with a running or finished job is never submitted
again; one whose job vanished (killed, node lost) is submitted again up to `retries` times.
"""

from __future__ import annotations

import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path

import submitit
from submitit.core.utils import FailedJobError, UncompletedJobError

from comco.errors import UserError
from comco.io import write_json
from comco.lab.executors.base import LOGS, Executor, Outcome, StageCall, StageFailed, log_tail, run_call
from comco.lab.executors.slurm_request import DEFAULTS, describe, request

JOBS = "jobs.json"
JOB_FOLDER = "slurm"
# seconds between looks at the queue (one sacct call for all jobs each time); the tests set it lower
POLL_S = float(os.environ.get("COMCO_SLURM_POLL_S", "10"))


class StageJob(submitit.helpers.Checkpointable):
    """One stage as a job. Checkpointable: on preemption or time-out submitit pickles it again
    and requeues it; the stage's own journal or checkpoint in its folder is its state."""

    def __init__(self, call: StageCall):
        self.call = call

    def __call__(self) -> tuple[dict, float]:
        env = submitit.JobEnvironment()
        logs = Path(self.call.out) / LOGS
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / "attempts.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"job_id": env.job_id, "node": socket.gethostname(), "time": time.time(),
                                "restart": int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)}) + "\n")
        return run_call(self.call)


class LocalController:
    """The controller of a submitit local job that an earlier driver started (not a child of
    this one: watched through /proc), with what LocalJob asks of a Popen (poll, send_signal)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    @classmethod
    def find(cls, job_id: str, folder: Path) -> "LocalController | None":
        """The live controller of this job: pid `job_id`, running submitit.local._local on this
        run's job folder (a pid reused by another process is not it)."""
        if not job_id.isdigit():
            return None
        try:
            args = Path(f"/proc/{job_id}/cmdline").read_bytes().decode(errors="replace").split("\0")
            cwd = os.readlink(f"/proc/{job_id}/cwd")
        except OSError:
            return None
        if "submitit.local._local" not in args or len(args) < 2:
            return None
        given = [a for a in args if a][-1]
        if os.path.realpath(os.path.join(cwd, given)) != os.path.realpath(folder):
            return None
        controller = cls(int(job_id))
        return controller if controller.poll() is None else None

    def poll(self) -> int | None:
        if self.returncode is None and not _alive(self.pid):
            self.returncode = 0  # not ours to reap: how it ended is in its result pickle
        return self.returncode

    def send_signal(self, sig: int) -> None:
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    """A process that runs (a zombie, its parent gone, has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def sbatch_parameters(req: dict, name: str) -> dict:
    """The request as submitit's AutoExecutor parameters (generic names, slurm_ for the rest)."""
    params = {"name": name, "timeout_min": req["time"], "mem_gb": req["memory"], "cpus_per_task": req["cpus"],
              "gpus_per_node": req["gpus"], "slurm_signal_delay_s": 120}
    for key in ("partition", "account", "qos", "constraint"):
        if key in req:
            params[f"slurm_{key}"] = req[key]
    return params


@contextmanager
def sbatch_errors():
    """sbatch's refusal as SbatchRefused with sbatch's own words on one line (submitit prints
    sbatch's stderr and raises FailedJobError; the caller makes it a UserError)."""
    import contextlib
    import io

    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            yield
    except FailedJobError as exc:
        lines = [" ".join(line.split()).removeprefix("sbatch: error: ")
                 for line in (str(exc) or said.getvalue()).splitlines() if line.strip()]
        raise SbatchRefused("; ".join(lines)[:400] or "no message") from None


class SbatchRefused(Exception):
    """sbatch said no; its message."""


class SlurmExecutor(Executor):
    name = "slurm"
    inline_kinds = frozenset({"captions", "report"})  # seconds of pure Python: the driver does them

    def __init__(self, out: Path, settings: dict, cluster: str = "slurm"):
        self.out = Path(out)
        self.settings = settings
        self.cluster = cluster
        table = settings["run"]["slurm"]
        self.max_queued = table.get("max_queued", DEFAULTS["max_queued"])
        self.retries = table.get("retries", DEFAULTS["retries"])
        self._jobs: dict[str, tuple[StageCall, object]] = {}  # stage id -> (call, submitit job)
        self._registry: dict | None = None

    def describe(self, jobs: int, threads: int) -> str:
        where = "SLURM jobs" if self.cluster == "slurm" else "submitit local jobs"
        return f"{where} through submitit, at most {self.max_queued} queued, {threads} thread(s) each"

    # ------------------------------------------------------------ the registry of job ids

    def registry(self) -> dict:
        if self._registry is None:
            path = self.out / JOBS
            self._registry = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        return self._registry

    def _record(self, call: StageCall, job_id: str) -> None:
        entry = self.registry().get(call.id)
        if entry is None or entry["hash"] != call.hash:
            entry = {"hash": call.hash, "kind": call.kind, "jobs": []}
        entry["jobs"].append(job_id)
        entry["cluster"] = self.cluster
        entry["collected"] = False
        self.registry()[call.id] = entry
        write_json(self.out / JOBS, self.registry())

    def _job(self, job_id: str):
        folder = self.out / JOB_FOLDER / "%j"
        if self.cluster == "slurm":
            return submitit.SlurmJob(folder=folder, job_id=job_id)
        # a local job is a controller process (its pid the job id) that outlives a SIGKILLed
        # driver, its task still running the stage: watch it to its end rather than start the
        # stage again beside it; gone, its result pickle (or its absence) tells how it ended
        from submitit.local.local import LocalJob

        return LocalJob(folder=folder, job_id=job_id, process=LocalController.find(job_id, folder))

    # ------------------------------------------------------------ the interface

    def free(self) -> int:
        return self.max_queued - len(self._jobs)

    def busy(self) -> int:
        return len(self._jobs)

    def start(self, calls: list[StageCall]) -> None:
        fresh = []
        for call in calls:
            job = self._attach(call)
            if job is not None:
                self._jobs[call.id] = (call, job)
            else:
                fresh.append(call)
        by_kind: dict[str, list[StageCall]] = {}
        for call in fresh:
            by_kind.setdefault(call.kind, []).append(call)
        for kind, group in by_kind.items():
            self._submit(kind, group)

    def _attach(self, call: StageCall):
        """The live or finished job of this stage at this hash, if one is on record."""
        entry = self.registry().get(call.id)
        if not entry or entry["hash"] != call.hash or not entry["jobs"] or entry.get("cluster") != self.cluster:
            return None
        if entry.get("collected"):
            return None  # a driver took its end (a result, then the stage.json was removed; or a failure): redo it
        job = self._job(entry["jobs"][-1])
        if job.paths.result_pickle.exists() or not job.done(force_check=True):
            return job  # finished while no driver watched, or still queued / running: adopt it
        return None  # it ended without a result (killed, lost): submit the stage again

    def _executor(self, kind: str, name: str):
        ex = submitit.AutoExecutor(folder=self.out / JOB_FOLDER / "%j", cluster=self.cluster)
        params = sbatch_parameters(request(self.settings, kind), name)
        if self.cluster != "slurm":
            params = {k: v for k, v in params.items() if not k.startswith("slurm_")}
            params["gpus_per_node"] = 0  # submitit's local jobs: the GPUs of this machine are not asked for
        ex.update_parameters(**params)
        return ex

    def _submit(self, kind: str, group: list[StageCall]) -> None:
        ex = self._executor(kind, group[0].id if len(group) == 1 else f"comco-{kind}")
        try:
            with sbatch_errors(), ex.batch():  # one job array for the group (one job when it is alone)
                jobs = [ex.submit(StageJob(call)) for call in group]
        except SbatchRefused as exc:
            raise UserError(f"sbatch refused the {kind} job(s) of {group[0].id}{' ...' if len(group) > 1 else ''} "
                            f"({exc}); asked for {describe(request(self.settings, kind))}: change [run.slurm] or "
                            f"[run.slurm.{kind}] in the recipe and run the same command again (finished stages are "
                            "kept)") from None
        for call, job in zip(group, jobs):
            self._record(call, job.job_id)
            self._link_logs(call, job)
            self._jobs[call.id] = (call, job)

    def _link_logs(self, call: StageCall, job) -> None:
        logs = Path(call.out) / LOGS
        logs.mkdir(parents=True, exist_ok=True)
        for suffix, target in ((".out", job.paths.stdout), (".err", job.paths.stderr)):
            link = logs / f"{job.job_id}{suffix}"
            if not link.is_symlink():  # relative: the run folder may move
                link.symlink_to(os.path.relpath(target, logs))

    def wait(self) -> list[Outcome]:
        while True:
            if self.cluster == "slurm" and self._jobs:
                # one sacct call for every job each round: submitit alone backs off to one call in
                # ten minutes, and a job that died without a result would wait that long
                submitit.SlurmJob.watcher.update()
            out = []
            for sid, (call, job) in list(self._jobs.items()):
                if not job.done():
                    continue
                outcome = self._outcome(call, job)
                if outcome is None:  # resubmitted
                    continue
                del self._jobs[sid]
                out.append(outcome)
            if out:
                return out
            time.sleep(POLL_S)

    def _collected(self, call: StageCall) -> None:
        """This job's end was taken: a later driver must not adopt it again (a result is written
        into the stage's folder; a failure is the driver's to report once, then to submit again)."""
        self.registry()[call.id]["collected"] = True
        write_json(self.out / JOBS, self.registry())

    def _outcome(self, call: StageCall, job) -> Outcome | None:
        try:
            summary, seconds = job.result()
            self._collected(call)
            return Outcome(call.id, summary, seconds)
        except FailedJobError:
            reason = "failed"
        except UncompletedJobError:
            reason = f"ended without a result ({job.state})"
            tries = len(self.registry().get(call.id, {}).get("jobs", []))
            if tries <= self.retries:
                del self._jobs[call.id]
                self._submit(call.kind, [call])  # the stage resumes from what it left in its folder
                return None
        self._collected(call)
        tail = log_tail(job.paths.stderr) or log_tail(job.paths.stdout)
        message = (f"stage {call.id} {reason} (job {job.job_id}); the last lines of {job.paths.stderr}:\n"
                   + "\n".join(f"    {line}" for line in tail))
        return Outcome(call.id, error=StageFailed(message), log_tail=tail)

    def abort(self) -> None:
        # a failed or interrupted driver leaves SLURM jobs queued and running: the next
        # driver re-attaches to them; submitit's local jobs are cancelled here, on an error or
        # Ctrl-C. A SIGKILLed slurm-local driver cannot: its jobs run on, and the next driver
        # adopts them (LocalController) as it re-attaches to SLURM jobs
        if self.cluster != "slurm":
            for _, job in self._jobs.values():
                job.cancel(check=False)
