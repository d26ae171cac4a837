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


def make_executor(name: str, *, out: Path, settings: dict, jobs: int, gpus: int | None = None):
    """The executor `name`, checked before anything is written: a missing submitit or sbatch,
    or GPUs this machine does not have, is a UserError."""
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
