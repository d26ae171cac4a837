"""Stand-ins for SLURM's sbatch, srun, squeue, sacct, scancel and scontrol that run jobs as
local processes (tests/test_lab_slurm.py puts them on PATH).

They speak the formats submitit's SlurmExecutor reads: `sbatch FILE` answers "Submitted
batch job N" and honours the file's #SBATCH --array/--output/--error/--job-name; `sacct -o
JobID,State,NodeList --parsable2 -j N` prints a header and one `|`-separated row per job
(array tasks as N_i, with a N_i.batch step row as SLURM prints it); `scancel N --signal S`
signals the job step's task (the process srun started), plain `scancel N` ends the job;
`scontrol requeue N` runs it again when it exits (SLURM_RESTART_COUNT counts the restarts);
`--dependency=afterok:N` holds a job until N completed; `sinfo -h -o %P` lists
$FAKE_SLURM_PARTITIONS (default gpu*,cpu) and `sinfo -N` a node of $FAKE_SLURM_NODE in each;
`kill N` (no SLURM command: the tests' lost node) SIGKILLs a job. State lives in
$FAKE_SLURM_DIR. The faults a real SLURM gives only when it is so configured:
$FAKE_SLURM_REFUSE (sbatch refuses jobs whose name matches), $FAKE_SLURM_NO_ACCOUNTING (sacct
fails), $FAKE_SLURM_MAX_ARRAY (scontrol show config's MaxArraySize).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

NODE = "fakenode1"
LIVE = ("PENDING", "RUNNING", "REQUEUED")


def state_dir() -> Path:
    d = Path(os.environ["FAKE_SLURM_DIR"])
    (d / "jobs").mkdir(parents=True, exist_ok=True)
    return d


@contextmanager
def locked():
    with open(state_dir() / "lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def load(job: str) -> dict:
    return json.loads((state_dir() / "jobs" / f"{job}.json").read_text())


def save(rec: dict) -> None:
    path = state_dir() / "jobs" / f"{rec['id']}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec))
    tmp.replace(path)


def update(job: str, **changes) -> dict:
    with locked():
        rec = load(job)
        rec.update(changes)
        save(rec)
    return rec


def matching(spec: str) -> list[dict]:
    """The jobs a user's id names: N_i one array task, N a job or every task of array N."""
    out = []
    for path in sorted((state_dir() / "jobs").glob("*.json")):
        rec = json.loads(path.read_text())
        if rec["id"] == spec or rec["array_id"] == spec:
            out.append(rec)
    return out


def sbatch(args: list[str]) -> None:
    script = Path(args[-1]).read_text()
    opts = dict(re.findall(r"^#SBATCH --([\w-]+)(?:=(.*))?$", script, flags=re.M))
    refuse = os.environ.get("FAKE_SLURM_REFUSE")  # a regex: jobs whose name matches are refused, as sbatch does
    if refuse and re.search(refuse, opts.get("job-name", "sbatch")):
        print("sbatch: error: Batch job submission failed: Requested node configuration is not available",
              file=sys.stderr)
        raise SystemExit(1)
    with locked():
        counter = state_dir() / "next_id"
        jid = int(counter.read_text()) if counter.exists() else 1000
        counter.write_text(str(jid + 1))
        tasks = [None]
        if opts.get("array"):
            lo, hi = re.match(r"(\d+)-(\d+)", opts["array"]).groups()
            tasks = list(range(int(lo), int(hi) + 1))
        records = []
        for t in tasks:
            rec = {"id": str(jid) if t is None else f"{jid}_{t}", "array_id": str(jid), "task": t,
                   "script": args[-1], "name": opts.get("job-name", "sbatch"), "options": opts,
                   "state": "PENDING", "node": "", "pid": None, "runner": None, "restarts": 0,
                   "requeue": False, "cancel": False, "submitted": time.time(), "start": None, "end": None}
            save(rec)
            records.append(rec)
        with open(state_dir() / "submissions.jsonl", "a") as f:
            f.write(json.dumps({"job": str(jid), "name": rec["name"], "tasks": len(tasks)}) + "\n")
    for rec in records:
        runner = subprocess.Popen([sys.executable, __file__, "_run", rec["id"]], start_new_session=True,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        update(rec["id"], runner=runner.pid)
    print(f"Submitted batch job {jid}")


def _fill(pattern: str, rec: dict) -> str:
    task = "" if rec["task"] is None else str(rec["task"])
    return (pattern.replace("%A", rec["array_id"]).replace("%a", task).replace("%j", rec["id"].split("_")[0])
            .replace("%t", "0"))


def _run(job: str) -> None:
    """One job's life: wait for its --dependency=afterok:N, run its script (again after each
    requeue), and record how it ended."""
    dep = load(job)["options"].get("dependency") or ""
    if dep.startswith("afterok:"):
        while True:
            states = [r["state"] for spec in dep.split(":", 1)[1].split(":") for r in matching(spec)]
            if states and all(s == "COMPLETED" for s in states):
                break
            if any(s not in LIVE for s in states if s != "COMPLETED"):
                update(job, state="CANCELLED", reason="DependencyNeverSatisfied", end=time.time())
                return
            time.sleep(0.5)
    while True:
        rec = update(job, state="RUNNING", node=NODE, start=time.time())
        env = {**os.environ, "SLURM_JOB_ID": rec["array_id"] if rec["task"] is None else str(
            100000 + int(rec["array_id"]) * 100 + rec["task"]), "SLURM_NTASKS": "1", "SLURM_JOB_NUM_NODES": "1",
            "SLURM_NODEID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_JOB_NODELIST": NODE,
            "SLURM_RESTART_COUNT": str(rec["restarts"]), "FAKE_SLURM_JOB": job}
        if rec["task"] is not None:
            env.update(SLURM_ARRAY_JOB_ID=rec["array_id"], SLURM_ARRAY_TASK_ID=str(rec["task"]))
        opts = rec["options"]
        out_path = Path(_fill(opts.get("output", f"slurm-{job}.out"), rec))
        err_path = Path(_fill(opts["error"], rec)) if opts.get("error") else out_path
        out_path.parent.mkdir(parents=True, exist_ok=True)
        err_path.parent.mkdir(parents=True, exist_ok=True)
        with open(out_path, "a") as out, open(err_path, "a") as err:
            proc = subprocess.Popen(["bash", rec["script"]], env=env, stdout=out, stderr=err,
                                    start_new_session=True)
            update(job, pid=proc.pid)
            code = proc.wait()
        rec = load(job)
        if rec["requeue"] and not rec["cancel"]:
            update(job, requeue=False, restarts=rec["restarts"] + 1, state="PENDING", pid=None, step_pid=None)
            time.sleep(0.5)
            continue
        state = ("CANCELLED" if rec["cancel"] else "NODE_FAIL" if rec.get("lost") else
                 "COMPLETED" if code == 0 else "FAILED")
        update(job, state=state, end=time.time(), pid=None, step_pid=None, exit=code)
        return


def _signal(name: str) -> int:
    name = name.upper()
    return getattr(signal, name if name.startswith("SIG") else f"SIG{name}")


def scancel(args: list[str]) -> None:
    sig, ids, i = None, [], 0
    while i < len(args):
        a = args[i]
        if a.startswith("--signal="):
            sig = a.split("=", 1)[1]
        elif a in ("--signal", "-s"):
            sig, i = args[i + 1], i + 1
        else:
            ids.append(a)
        i += 1
    for spec in ids:
        for rec in matching(spec):
            try:
                if sig is None:  # the job ends: every process of it
                    update(rec["id"], cancel=True)
                    if rec.get("pid"):
                        os.killpg(rec["pid"], signal.SIGKILL)
                elif rec.get("step_pid"):  # a signal goes to the step's task (the process srun started)
                    os.kill(rec["step_pid"], _signal(sig))
            except ProcessLookupError:
                pass


def kill(job: str) -> None:
    """The node under a job is lost: its processes die with SIGKILL, and SLURM says NODE_FAIL."""
    for rec in matching(job):
        update(rec["id"], lost=True)
        if rec.get("pid"):
            try:
                os.killpg(rec["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass


def scontrol(args: list[str]) -> None:
    if args[:2] == ["show", "config"]:
        print(f"MaxArraySize            = {os.environ.get('FAKE_SLURM_MAX_ARRAY', '1001')}")
        return
    if args[:1] != ["requeue"]:
        raise SystemExit(f"fake scontrol: only 'requeue' and 'show config' ({args})")
    for spec in args[1:]:
        for rec in matching(spec):
            update(rec["id"], requeue=True)


def _elapsed(rec: dict) -> str:
    if not rec.get("start"):
        return "00:00:00"
    s = int((rec.get("end") or time.time()) - rec["start"])
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def sacct(args: list[str]) -> None:
    """$FAKE_SLURM_NO_ACCOUNTING set: sacct fails as on a cluster without slurmdbd."""
    if os.environ.get("FAKE_SLURM_NO_ACCOUNTING"):
        print("sacct: error: Slurm accounting storage is disabled", file=sys.stderr)
        raise SystemExit(1)
    fields, ids, header, i = ["JobID", "State", "NodeList"], [], True, 0
    while i < len(args):
        if args[i] in ("-o", "--format"):
            fields, i = args[i + 1].split(","), i + 1
        elif args[i] in ("-j", "--jobs"):
            ids, i = ids + args[i + 1].split(","), i + 1
        elif args[i] in ("-n", "--noheader"):
            header = False
        i += 1
    if header:
        print("|".join(fields))
    for spec in ids:
        for rec in matching(spec):
            row = {"JobID": rec["id"], "State": rec["state"], "NodeList": rec["node"] or "None assigned",
                   "Elapsed": _elapsed(rec), "JobName": rec["name"]}
            print("|".join(str(row.get(f, "")) for f in fields))
            if rec["state"] not in ("PENDING",):
                print("|".join(str({**row, "JobID": f"{rec['id']}.batch", "JobName": "batch"}.get(f, ""))
                               for f in fields))


def squeue(args: list[str]) -> None:
    fmt, ids, header, i = "%i %T %N", [], True, 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--noheader"):
            header = False
        elif a in ("-o", "--format"):
            fmt, i = args[i + 1], i + 1
        elif a in ("-j", "--jobs"):
            ids, i = args[i + 1].split(","), i + 1
        i += 1
    recs = [json.loads(p.read_text()) for p in sorted((state_dir() / "jobs").glob("*.json"))]
    recs = [r for r in recs if r["state"] in LIVE and (not ids or r["id"] in ids or r["array_id"] in ids)]
    codes = {"%i": "JOBID", "%T": "STATE", "%N": "NODELIST", "%j": "NAME"}
    if header:
        print(_format(fmt, codes))
    for r in recs:
        print(_format(fmt, {"%i": r["id"], "%T": r["state"], "%N": r["node"], "%j": r["name"]}))


def _format(fmt: str, values: dict) -> str:
    for code, value in values.items():
        fmt = fmt.replace(code, str(value))
    return fmt


def srun(args: list[str]) -> None:
    """srun inside a batch script: the --output/--error patterns, then the command in this process."""
    out = err = None
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] in ("--output", "-o"):
            out, i = args[i + 1], i + 1
        elif args[i] in ("--error", "-e"):
            err, i = args[i + 1], i + 1
        i += 1
    rec = update(os.environ["FAKE_SLURM_JOB"], step_pid=os.getpid())  # exec keeps the pid
    for pattern, fd in ((out, 1), (err, 2)):
        if pattern:
            path = Path(_fill(pattern, rec))
            path.parent.mkdir(parents=True, exist_ok=True)
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644), fd)
    os.execvp(args[i], args[i:])


def sinfo(args: list[str]) -> None:
    """`sinfo -h -o %P`: the partitions, one a line, the default marked with "*" ($FAKE_SLURM_PARTITIONS);
    `sinfo -h -N -o %P|%c|%m|%G|%l`: one node in each, $FAKE_SLURM_NODE (CPUs|memory MB|GRES|time
    limit, default 64|512000|gpu:8|infinite)."""
    partitions = os.environ.get("FAKE_SLURM_PARTITIONS", "gpu*,cpu").split(",")
    if "-N" in args and "%P|%c|%m|%G|%l" in args:
        node = os.environ.get("FAKE_SLURM_NODE", "64|512000|gpu:8|infinite")
        for name in partitions:
            print(f"{name}|{node}")
        return
    if "%P" not in args:
        raise SystemExit(f"fake sinfo: only -h -o %P and -h -N -o %P|%c|%m|%G|%l ({args})")
    for name in partitions:
        print(name)


COMMANDS = {"sbatch": sbatch, "sinfo": sinfo, "scancel": scancel, "scontrol": scontrol, "sacct": sacct,
            "squeue": squeue, "srun": srun, "_run": lambda a: _run(a[0]), "kill": lambda a: kill(a[0])}


def install(bin_dir: Path) -> None:
    """Shell wrappers named like the SLURM commands, each calling this file."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("sbatch", "scancel", "scontrol", "sacct", "squeue", "srun", "sinfo"):
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} {name} \"$@\"\n")
        path.chmod(0o755)


def live_jobs() -> list[dict]:
    return [r for r in (json.loads(p.read_text()) for p in (state_dir() / "jobs").glob("*.json"))
            if r["state"] in LIVE]


def stop_all() -> None:
    """End every job and runner (a test's clean-up)."""
    for path in (state_dir() / "jobs").glob("*.json"):
        rec = json.loads(path.read_text())
        for pid, group in ((rec.get("runner"), False), (rec.get("pid"), True)):
            if pid:
                try:
                    (os.killpg if group else os.kill)(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


if __name__ == "__main__":
    COMMANDS[sys.argv[1]](sys.argv[2:])
