"""The real one-node SLURM of tests/cluster/start-slurm.sh as the slurm_real tests see it: whether
it is up (and why not), the walk-through blocks of docs/guide/cluster.md, and squeue / sacct
looked up one job at a time."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "guide" / "cluster.md"
START = "bash tests/cluster/start-slurm.sh, as .ci/run does"


def _run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)


@functools.lru_cache(maxsize=1)
def cluster_down() -> str | None:
    """None when the test cluster is up, else why it is not."""
    missing = [c for c in ("sbatch", "srun", "squeue", "sacct", "scancel", "scontrol", "sinfo") if not shutil.which(c)]
    if missing:
        return f"no SLURM here ({', '.join(missing)} not on PATH); start one with {START}"
    try:
        config = _run("scontrol", "show", "config")
        if config.returncode != 0:
            return f"slurmctld does not answer ({config.stderr.strip()[:200]}); start it with {START}"
        name = re.search(r"^ClusterName\s*=\s*(\S+)", config.stdout, flags=re.M)
        if name is None or name.group(1) != "comco":
            return (f"the SLURM here is cluster {name.group(1) if name else '?'!r}, not the test cluster 'comco' of "
                    "tests/cluster/start-slurm.sh; these tests submit jobs, so they leave other clusters alone")
        for _ in range(20):  # a node just started takes a few seconds to report
            states = _run("sinfo", "-h", "-N", "-o", "%t").stdout.split()
            if any(s.rstrip("*~#") in ("idle", "mix", "alloc") for s in states):
                break
            time.sleep(0.5)
        else:
            shown = " ".join(states) or "nothing"
            return f"the test cluster's node takes no jobs (sinfo: {shown}); restart it with {START}"
        acct = _run("sacct", "-n", "-X", "-j", "1")
        if acct.returncode != 0:
            return f"the test cluster has no accounting (sacct: {acct.stderr.strip()[:200]}); restart it with {START}"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"SLURM does not answer ({exc}); start it with {START}"
    return None


def walkthrough(name: str) -> str:
    """The block of docs/guide/cluster.md marked `<!-- cluster-walkthrough: NAME -->`."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"<!-- cluster-walkthrough: {re.escape(name)} -->\s*```\w*\n(.*?)```", text, flags=re.S)
    assert found, f"docs/guide/cluster.md has no block '{name}'"
    return found.group(1)


def commands(name: str) -> list[list[str]]:
    """The walk-through block's commands, split as the shell splits them; `comco` is this Python's."""
    import shlex

    out = []
    for line in walkthrough(name).replace("\\\n", " ").splitlines():
        if line.strip():
            words = shlex.split(line)
            out.append([sys.executable, "-m", "comco.cli", *words[1:]] if words[0] == "comco" else words)
    return out


def squeue(job: str) -> dict | None:
    """squeue's state and reason of one job (an array task as N_i); None once SLURM no longer holds it."""
    r = _run("squeue", "-h", "-r", "-o", "%i|%T|%r", "-j", job.split("_")[0])
    for line in r.stdout.splitlines():
        jid, state, reason = line.strip().split("|")
        if jid == job:
            return {"state": state, "reason": reason}
    return None


def sacct_state(job: str) -> str:
    r = _run("sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", job.split("_")[0])
    for line in r.stdout.splitlines():
        jid, state = line.split("|")
        if jid == job:
            return state.split()[0]
    return ""


def until(condition, what: str, timeout: float = 600, step: float = 0.5):
    end = time.time() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.time() < end, f"waited {timeout:.0f} s for {what}"
        time.sleep(step)


def cancel(*jobs: str) -> None:
    """A test's clean-up: its jobs leave the queue."""
    if jobs:
        _run("scancel", *{j.split("_")[0] for j in jobs if j})
