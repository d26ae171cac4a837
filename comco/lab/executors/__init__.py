"""Where the lab's stages run: `local` (a process pool here), `node` (the GPUs of one
machine), `slurm` (SLURM jobs through submitit) and `slurm-local` (submitit's local
executor: the slurm path with jobs as processes here). One interface (base.Executor);
submitit loads only for the slurm executors."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from comco.errors import UserError

EXECUTORS = ("local", "node", "slurm", "slurm-local")


def make_executor(name: str, *, out: Path, settings: dict, jobs: int, gpus: int | None = None,
                  kinds: tuple[str, ...] = ()):
    """The executor `name`, checked before anything is written: a missing submitit or sbatch,
    GPUs this machine does not have, or (slurm) a request for `kinds`' jobs that no node of the
    cluster can satisfy, or a cluster without job accounting, is a UserError."""
    if name not in EXECUTORS:
        raise UserError(f"--executor {name}: use one of {', '.join(EXECUTORS)}")
    if gpus is not None and gpus < 1:
        raise UserError(f"--gpus {gpus}: give at least 1 (or leave it out)")
    if name == "local":
        if gpus is not None:
            raise UserError("--gpus applies to --executor node (and to --dry-run); the local pool uses "
                            "what the recipe's device says")
        from comco.lab.executors.local import LocalExecutor

        return LocalExecutor(jobs)
    if name == "node":
        from comco.lab.executors.node import NodeExecutor, node_devices

        return NodeExecutor(out, node_devices(gpus, settings), os.cpu_count() or 1, jobs,
                            settings["run"]["node"].get("train_gpus", 1))
    require_submitit(cluster=name == "slurm")
    if name == "slurm":
        check_partitions(settings)
        check_lab_requests(settings, kinds)
        check_accounting()
    if gpus is not None:
        raise UserError("--gpus applies to --executor node (and to --dry-run); SLURM jobs ask for the GPUs "
                        "of [run.slurm] gpus")
    from comco.lab.executors.slurm import SlurmExecutor

    return SlurmExecutor(out, settings, cluster="slurm" if name == "slurm" else "local")


def require_submitit(cluster: bool) -> None:
    """submitit importable, and for a cluster the SLURM commands on PATH."""
    try:
        import submitit  # noqa: F401
    except ImportError:
        raise UserError("the slurm executors need submitit: pip install submitit (or, in the comco checkout, "
                        "pip install -e '.[cluster]')") from None
    if cluster:
        missing = [c for c in ("sbatch", "srun", "sacct", "scancel") if shutil.which(c) is None]
        if missing:
            raise UserError(f"--executor slurm: {', '.join(missing)} not on PATH (run the driver on a SLURM "
                            "login node, or use --executor slurm-local to rehearse here)")


def check_partitions(settings: dict) -> None:
    """Every partition [run.slurm] (or a [run.slurm.KIND]) names is one `sinfo` lists: sbatch
    would refuse the first job of a kind only when that kind is ready, hours into a run.
    Skipped where sinfo is missing or fails (sbatch still has the last word)."""
    table = settings["run"]["slurm"]
    wanted = {"run.slurm.partition": table.get("partition")}
    wanted.update({f"run.slurm.{k}.partition": v.get("partition") for k, v in table.items() if isinstance(v, dict)})
    wanted = {key: value for key, value in wanted.items() if value}
    if not wanted or shutil.which("sinfo") is None:
        return
    try:
        text = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=60,
                              check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return
    have = {p.strip().rstrip("*") for p in text.split()}  # the default partition ends in "*"
    for key, value in wanted.items():
        unknown = [p for p in value.split(",") if p.strip() not in have]  # sbatch takes a list
        if unknown:
            raise UserError(f"recipe key '{key}' = {value!r}: no partition {unknown[0]!r} on this cluster (sinfo "
                            f"lists {', '.join(sorted(have)) or 'none'}); use one of those")


# ---------------------------------------------------------------- the cluster against the request
# sbatch refuses a request no node can satisfy ("Requested node configuration is not available")
# only when that kind of stage is ready, hours into a run; `sinfo` says it before anything is
# submitted. Each check is skipped where sinfo is missing or fails: sbatch has the last word.

def cluster_nodes() -> list[dict] | None:
    """Each node of each partition, as sinfo lists it: {"partition", "default", "cpus",
    "memory_mb", "gpus", "minutes" (None: no limit)}; None without a working sinfo."""
    if shutil.which("sinfo") is None:
        return None
    try:
        text = subprocess.run(["sinfo", "-h", "-N", "-o", "%P|%c|%m|%G|%l"], capture_output=True, text=True,
                              timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    nodes = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 5:
            continue
        partition, cpus, memory, gres, limit = parts
        try:
            nodes.append({"partition": partition.rstrip("*"), "default": partition.endswith("*"),
                          "cpus": int(cpus.rstrip("+")), "memory_mb": int(memory.rstrip("+")),
                          "gpus": _gres_gpus(gres), "minutes": _limit_minutes(limit)})
        except ValueError:
            continue  # a line sinfo wrote in a shape this does not know: sbatch has the last word
    return nodes or None


def _gres_gpus(gres: str) -> int:
    """GPUs in a node's GRES: gpu:4, gpu:a100:4(S:0-1), gpu:a100:2,gpu:v100:2; (null) is none."""
    import re

    total = 0
    for item in re.sub(r"\([^)]*\)", "", gres).split(","):
        fields = item.strip().split(":")
        if fields[0] == "gpu" and len(fields) > 1 and fields[-1].isdigit():
            total += int(fields[-1])
    return total


def _limit_minutes(limit: str) -> float | None:
    """sinfo's %l (infinite, D-HH:MM:SS, HH:MM:SS, MM:SS, MM) in minutes; None for no limit."""
    if limit.strip().lower() in ("infinite", "unlimited", "n/a", ""):
        return None
    days, _, clock = limit.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    seconds = {1: lambda p: p[0] * 60, 2: lambda p: p[0] * 60 + p[1],
               3: lambda p: p[0] * 3600 + p[1] * 60 + p[2]}[len(parts)](parts)
    return (seconds + 86400 * int(days or 0)) / 60


def check_request(req: dict, where, nodes: list[dict] | None) -> None:
    """A UserError unless some node of the request's partitions (the default one when it names
    none) has its GPUs, CPUs and memory, and the partition allows its time. `where(key)` names
    the key the value came from, for the one line."""
    if not nodes:
        return
    wanted = [p.strip() for p in str(req.get("partition", "")).split(",") if p.strip()]
    pool = [n for n in nodes if (n["partition"] in wanted if wanted else n["default"])] or \
        ([] if wanted else nodes)  # a named partition sinfo lacks is check_partitions' to say
    if not pool:
        return
    tests = {"gpus": lambda n: n["gpus"] >= req["gpus"], "cpus": lambda n: n["cpus"] >= req["cpus"],
             "memory": lambda n: n["memory_mb"] >= req["memory"] * 1024,  # --mem=NGB: SLURM's GB is 1024 MB
             "time": lambda n: n["minutes"] is None or n["minutes"] >= req["time"]}
    if any(all(test(n) for test in tests.values()) for n in pool):
        return
    names = ", ".join(sorted({n["partition"] for n in pool}))
    where_ = f"partition {names!r}" if wanted else f"the default partition {names!r}"
    most = {"gpus": max(n["gpus"] for n in pool), "cpus": max(n["cpus"] for n in pool),
            "memory": max(n["memory_mb"] for n in pool) // 1024,
            "time": max((n["minutes"] for n in pool), key=lambda m: float("inf") if m is None else m)}
    for key in ("gpus", "cpus", "memory", "time"):
        if not any(tests[key](n) for n in pool):
            if key == "gpus" and most["gpus"] == 0:
                raise UserError(f"{where('gpus')}: no node of {where_} has a GPU (sinfo); set it to 0 for "
                                "this cluster, or name a partition with GPUs")
            unit = {"gpus": " GPU(s)", "cpus": " CPUs", "memory": " GB of memory", "time": " min"}[key]
            limit = "allows at most" if key == "time" else "the largest node has"
            raise UserError(f"{where(key)}: no node of {where_} can run it ({limit} {most[key]:g}{unit}, sinfo); "
                            f"ask for at most that")
    raise UserError(f"{where('cpus')}: no one node of {where_} has gpus={req['gpus']}, cpus={req['cpus']} and "
                    f"memory={req['memory']} GB together (sinfo); ask for less")


def check_lab_requests(settings: dict, kinds) -> None:
    """check_request for the jobs of each stage kind the run has, naming the recipe key (the
    captions and the report run in the driver: no job)."""
    from comco.lab.executors.slurm_request import CPU_KINDS, request

    kinds = [k for k in kinds if k not in CPU_KINDS]
    nodes = cluster_nodes() if kinds else None
    if not nodes:
        return
    table = settings["run"]["slurm"]
    for kind in kinds:
        req = request(settings, kind)

        def where(key, kind=kind, req=req):
            if key in table.get(kind, {}):
                return f"recipe key 'run.slurm.{kind}.{key}' = {req[key]!r}"
            if key in table:
                return f"recipe key 'run.slurm.{key}' = {req[key]!r}"
            return f"recipe key 'run.slurm.{key}' = {req[key]!r} (the default, for the {kind} jobs)"

        check_request(req, where, nodes)


def check_accounting() -> None:
    """The driver follows its jobs with sacct: without SLURM's accounting a job that dies leaves it
    waiting for ever. A UserError saying what to enable, unless sacct answers."""
    try:
        r = subprocess.run(["sacct", "-n", "-X", "-o", "JobID", "-j", "1"], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        r = subprocess.CompletedProcess([], 1, "", str(exc))
    if r.returncode != 0:
        said = (r.stderr.strip().splitlines() or ["no message"])[-1].strip()
        raise UserError(f"--executor slurm follows its jobs with sacct, which fails here ({said}): enable SLURM's job "
                        "accounting (slurmdbd, AccountingStorageType=accounting_storage/slurmdbd in slurm.conf) or "
                        "ask the cluster's admins to; or use --executor node on one machine")


def max_array_size() -> int | None:
    """The cluster's MaxArraySize (`scontrol show config`): an array's tasks are 0..MaxArraySize-1."""
    if shutil.which("scontrol") is None:
        return None
    try:
        text = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=60,
                              check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "MaxArraySize" and value.strip().isdigit():
            return int(value.strip())
    return None
