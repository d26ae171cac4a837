"""The sbatch request of a stage kind's jobs, from the recipe's [run.slurm] table (no
submitit needed: `--dry-run` plans a cluster run from any machine)."""

from __future__ import annotations

DEFAULTS = {"cpus": 4, "memory": 32, "time": 240, "gpus": 1, "max_queued": 64, "retries": 1}
CPU_KINDS = ("captions", "report")  # pure Python: no GPU asked for them
REQUEST_KEYS = ("partition", "account", "qos", "gpus", "cpus", "memory", "time", "constraint")


def request(settings: dict, kind: str) -> dict:
    """[run.slurm], then [run.slurm.KIND], then the defaults (memory in GB, time in minutes)."""
    table = settings["run"]["slurm"]
    req = {k: table[k] for k in REQUEST_KEYS if k in table}
    req.update(table.get(kind, {}))
    for k in ("cpus", "memory", "time", "gpus"):
        req.setdefault(k, 0 if (k == "gpus" and kind in CPU_KINDS) else DEFAULTS[k])
    return req


def describe(req: dict) -> str:
    """One request as sbatch would read it, shortly."""
    words = [f"gpus={req['gpus']}", f"cpus={req['cpus']}", f"mem={req['memory']}G", f"time={req['time']}min"]
    words += [f"{k}={req[k]}" for k in ("partition", "account", "qos", "constraint") if k in req]
    return " ".join(words)
