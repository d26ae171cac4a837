"""`comco lab status OUT`: where every stage of a run stands.

done (its stage.json holds the hash it has now), running (a process holds it: job id,
node, minutes), queued (a job was submitted and has not started), failed (the last
attempt's message and the end of its log) or left (nothing has started it, or its job ended
without it: cancelled, lost). For a run's SLURM jobs the states come from `squeue` (the jobs
SLURM holds: a job that started is running at once) and `sacct` (the ones that ended).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from comco.errors import UserError
from comco.io import MAX_SMALL_BYTES, parse_json, read_bounded
from comco.lab.executors.base import FAILED, LOGS, RUNNING
from comco.lab.graph import build_stages
from comco.lab.recipe import load_recipe
from comco.lab.run import LAB_INFO, STAGE_INFO, is_done, stage_dir

JOBS = "jobs.json"  # comco.lab.executors.slurm.JOBS (that module needs submitit)
LIVE = ("PENDING", "RUNNING", "REQUEUED", "COMPLETING", "CONFIGURING", "RESIZING", "SUSPENDED")


def _read(path: Path, strict: bool = False) -> dict | None:
    """A bookkeeping file of the run as a dict (None when absent); a damaged one (cut, not a JSON
    object, nested past Python's stack) is None, or with `strict` a UserError naming it."""
    if not path.is_file():
        return None
    try:
        data = parse_json(read_bounded(path, "lab file", MAX_SMALL_BYTES), str(path))
    except UserError:
        data = None
    if isinstance(data, dict):
        return data
    if strict:
        raise UserError(f"{path} is damaged (not the JSON object comco writes); delete it, then `comco lab run "
                        f"RECIPE --out {path.parent if path.name != STAGE_INFO else path.parents[2]} --resume` "
                        f"writes it again")
    return None


def _registry(out: Path) -> dict:
    """jobs.json: stage id -> {"hash", "cluster", "jobs": [job ids]}; a damaged one is a UserError."""
    registry = _read(out / JOBS, strict=True) or {}
    for entry in registry.values():
        if not isinstance(entry, dict) or not isinstance(entry.get("jobs", []), list) or not all(
                isinstance(j, str) for j in entry.get("jobs", [])):
            raise UserError(f"{out / JOBS} is damaged (an entry is not a stage's job list); delete it, then "
                            f"`comco lab run RECIPE --out {out} --resume` writes it again")
    return registry


def sacct_states(job_ids: list[str]) -> dict[str, dict]:
    """{job id: {"State", "NodeList"}} from one sacct call ({} without sacct or accounting). A
    pending array's row, 12_[0-9%10], stands for each of its tasks (12_0 ... 12_9)."""
    if not job_ids or shutil.which("sacct") is None:
        return {}
    cmd = ["sacct", "-o", "JobID,State,NodeList", "--parsable2"]
    for jid in sorted({j.split("_")[0] for j in job_ids}):
        cmd += ["-j", jid]
    try:
        text = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    rows = [line.split("|") for line in text.splitlines() if line.strip()]
    if not rows:
        return {}
    names = rows[0]
    found = {}
    for row in rows[1:]:
        rec = dict(zip(names, row))
        if "." not in rec.get("JobID", "."):
            found[rec["JobID"]] = {"State": rec.get("State", "").split()[0] if rec.get("State") else "",
                                   "NodeList": rec.get("NodeList", "")}
    return {job: found[name] for job in job_ids if (name := _row_of(job, found)) is not None}


def _row_of(job: str, rows: dict) -> str | None:
    """The row that speaks for `job`: its own, its array's pending range (12_[0-9%10], 12_[1,3-5]),
    or a whole job's (a job id without a task)."""
    if job in rows:
        return job
    base, _, task = job.partition("_")
    for name in rows:
        head, _, tail = name.partition("_[")
        if head != base or not tail.endswith("]") or not task.isdigit():
            continue
        for part in tail[:-1].split("%")[0].split(","):
            lo, _, hi = part.partition("-")
            if lo.isdigit() and int(lo) <= int(task) <= int(hi if hi.isdigit() else lo):
                return name
    return None


def squeue_states(job_ids: list[str]) -> dict[str, dict] | None:
    """{job id: {"State", "NodeList", "Elapsed"}} of the jobs SLURM still holds, from one squeue call
    (array tasks one by one); None without squeue. sacct lags squeue by seconds, and a job that
    has started shows as RUNNING here first."""
    if not job_ids or shutil.which("squeue") is None:
        return {} if job_ids == [] else None
    arrays = sorted({j.split("_")[0] for j in job_ids})
    try:
        r = subprocess.run(["squeue", "-h", "-r", "-o", "%i|%T|%N|%M", "-j", ",".join(arrays)], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return {} if "Invalid job id" in r.stderr else None  # none of them is queued or running any more
    out = {}
    for line in r.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4:
            out[parts[0]] = {"State": parts[1], "NodeList": parts[2], "Elapsed": parts[3]}
    return out


def job_states(job_ids: list[str]) -> dict[str, dict]:
    """What SLURM says of each job: squeue for the jobs it holds, sacct for the rest; a job neither
    lists while squeue answers has ended ({"State": "ENDED"}: purged, or no accounting)."""
    states = sacct_states(job_ids)
    live = squeue_states(job_ids)
    if live is None:
        return states
    for job in job_ids:
        if job in live:
            states[job] = live[job]
        elif states.get(job, {}).get("State") in LIVE or job not in states:
            states[job] = {"State": "ENDED", "NodeList": ""}
    return states


def _elapsed_minutes(text: str) -> float | None:
    """squeue's %M (M:SS, H:MM:SS or D-HH:MM:SS) in minutes."""
    days, _, clock = text.rpartition("-")
    try:
        parts = [int(p) for p in clock.split(":")]
        seconds = sum(p * 60 ** i for i, p in enumerate(reversed(parts))) + 86400 * int(days or 0)
    except ValueError:
        return None
    return seconds / 60


def _alive(running: dict, states: dict) -> bool:
    job = running.get("job_id")
    if job and job in states:
        return states[job]["State"] in LIVE
    if running.get("node") == socket.gethostname():
        try:
            os.kill(int(running["pid"]), 0)
        except (OSError, ValueError, KeyError):
            return False
    return True  # another machine's process, no scheduler to ask: believe the file


def stage_states(out: Path) -> list[dict]:
    """Per stage: {"id", "kind", "state", and what the state has: job, node, minutes, message, log}."""
    out = Path(out)
    info = _read(out / LAB_INFO, strict=True)
    if info is None or not (out / "recipe.toml").is_file():
        raise UserError(f"{out} holds no lab run (no {LAB_INFO}); give the --out of `comco lab run`")
    if not isinstance(info.get("scale"), str):
        raise UserError(f"{out / LAB_INFO} is damaged (no scale); run `comco lab run RECIPE --out {out} --resume` "
                        f"to write it again")
    stages = build_stages(load_recipe(out / "recipe.toml", info["scale"]))
    registry = _registry(out)
    states = job_states([e["jobs"][-1] for e in registry.values() if e.get("jobs") and e.get("cluster") == "slurm"])
    rows = []
    for s in stages:
        d = stage_dir(out, s)
        row = {"id": s.id, "kind": s.kind}
        entry = registry.get(s.id) if (registry.get(s.id) or {}).get("hash") == s.hash else None
        job = entry["jobs"][-1] if entry and entry.get("jobs") else None
        running = _read(d / LOGS / RUNNING)
        failed = _read(d / LOGS / FAILED)
        _read(d / STAGE_INFO, strict=True)
        if is_done(out, s):
            row.update(state="done", seconds=(_read(d / STAGE_INFO) or {}).get("seconds"))
        elif running is not None and _alive(running, states):
            jid = running.get("job_id") or job
            node = states.get(jid, {}).get("NodeList") or running.get("node")  # the scheduler's name for it
            row.update(state="running", job=jid, node=node,
                       minutes=(time.time() - running.get("started", time.time())) / 60,
                       devices=running.get("devices"))
        elif failed is not None:
            row.update(state="failed", job=job, message=failed.get("message"), log=failed.get("log_tail", []))
        elif job is not None and states.get(job, {}).get("State") == "RUNNING":
            # started, its process not yet in the stage (python and the stage's imports take seconds)
            minutes = _elapsed_minutes(states[job].get("Elapsed", ""))
            row.update(state="running", job=job, node=states[job].get("NodeList") or "?",
                       minutes=0.0 if minutes is None else minutes, devices=None)
        elif job is not None and states.get(job, {}).get("State", "PENDING") in LIVE:
            row.update(state="queued", job=job)
        else:
            ended = states.get(job, {}).get("State") if job is not None else None
            row.update(state="left", stale=(d / STAGE_INFO).is_file(), job=job,
                       ended=ended if ended and ended not in ("COMPLETED", "ENDED") else None)
        rows.append(row)
    return rows


def status_lines(out: Path, log_lines: int = 5) -> list[str]:
    rows = stage_states(out)
    width = max(len(r["id"]) for r in rows)
    lines = []
    for r in rows:
        line = f"{r['id']:<{width}}  {r['state']:<8}"
        if r["state"] == "done" and r.get("seconds") is not None:
            line += f"  {r['seconds']:.1f} s"
        elif r["state"] == "running":
            where = ", ".join(x for x in (f"job {r['job']}" if r.get("job") else "", f"node {r['node']}",
                                          f"GPU {r['devices']}" if r.get("devices") else "") if x)
            line += f"  {where}, {r['minutes']:.1f} min"
        elif r["state"] == "queued":
            line += f"  job {r['job']}"
        elif r["state"] == "failed":
            line += f"  {r['message']}" + (f" (job {r['job']})" if r.get("job") else "")
        elif r.get("ended"):
            line += f"  job {r['job']} {r['ended']}; the next comco lab run starts it again"
        elif r.get("stale"):
            line += "  (finished at another hash: its settings, inputs or code changed since)"
        lines.append(line.rstrip())
        if r["state"] == "failed":
            lines.extend(f"    | {text}" for text in r["log"][-log_lines:])
    counts = {k: sum(r["state"] == k for r in rows) for k in ("done", "running", "queued", "failed", "left")}
    lines.append(f"{len(rows)} stages: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return lines
