"""`comco render ... --executor slurm --shards K`: one render as a SLURM job array of K shards
(`--shard i/K` each) and a merge job that waits for the array (`--dependency=afterok`), through
submitit; `slurm-local` runs the shards as local jobs and merges when they are done. The jobs
ask for what the lab's [run.slurm] keys say (`--slurm KEY=VALUE`, `--slurm-config FILE`),
checked against `sinfo` before anything is submitted.

    OUT.shards/shard-<i>/    the shard datasets (kept: `comco dataset merge` can be run again)
    OUT.shards/slurm/<job>/  submitit's files and logs
    OUT/                     the merged dataset
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import submitit

from comco.errors import UserError
from comco.lab.executors.slurm import SbatchRefused, sbatch_errors, sbatch_parameters
from comco.lab.executors.slurm_request import DEFAULTS, REQUEST_KEYS, describe

LOCAL_SHARDS = 64  # slurm-local: every shard is a process (a Blender each) at once


class RenderShardJob(submitit.helpers.Checkpointable):
    """One shard; requeued on preemption, it resumes from its own journal."""

    def __init__(self, cfg, opts, out: Path):
        self.cfg, self.opts, self.out = cfg, opts, Path(out)

    def __call__(self) -> dict:
        from comco.render import run_render

        s = run_render(self.cfg, self.opts, self.out, resume=True, quiet=True)
        return {"images": s["images"], "failures": len(s["failures"])}


def merge_job(shards: list[str], out: str) -> dict:
    from comco.data import merge_shards

    return merge_shards([Path(s) for s in shards], Path(out))


def render_request(table: dict, device: str) -> dict:
    """The sbatch request of a render's shard jobs: `table` (comco.lab.recipe.slurm_settings), then
    the lab's defaults; a GPU only for --device cuda|optix unless gpus is given."""
    req = {k: table[k] for k in REQUEST_KEYS if k in table}
    for k in ("cpus", "memory", "time"):
        req.setdefault(k, DEFAULTS[k])
    req.setdefault("gpus", 1 if device in ("cuda", "optix") else 0)
    return req


def check_render_cluster(req: dict, origin: dict, shards: int) -> None:
    """Before anything is submitted: a node that can run a shard job (sinfo), and an array of
    `shards` tasks within the cluster's MaxArraySize."""
    from comco.lab.executors import check_request, cluster_nodes, max_array_size

    def where(key):
        if key in origin:
            return origin[key]
        return f"{key} = {req[key]} (the default; set it with --slurm {key}=N)"

    check_request(req, where, cluster_nodes())
    limit = max_array_size()
    if limit is not None and shards > limit:
        raise UserError(f"--shards {shards}: this cluster's job arrays take at most {limit} tasks (MaxArraySize "
                        f"{limit}, scontrol show config); use --shards {limit} or fewer")


def submit_render(cfg, opts, out: Path, shards: int, cluster: str, say=lambda _: None,
                  table: dict | None = None, origin: dict | None = None) -> dict:
    """Submit (slurm: returns the job ids at once) or run (slurm-local: returns when merged).
    Everything is checked before anything is written; a job sbatch refuses cancels the ones
    already submitted and removes what this call created."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise UserError(f"--out {out} is not empty; the merged dataset needs a new folder")
    if tuple(opts.shard) != (0, 1):
        raise UserError("--shards K makes the shards itself; leave --shard out")
    if shards > max(1, cfg.n):
        raise UserError(f"--shards {shards}: more shards than images (--n {cfg.n}); use at most {max(1, cfg.n)}")
    req = render_request(table or {}, opts.device)
    if cluster == "slurm":
        check_render_cluster(req, origin or {}, shards)
    elif shards > LOCAL_SHARDS:
        raise UserError(f"--shards {shards} with --executor slurm-local: local jobs all run at once here; use at most "
                        f"{LOCAL_SHARDS}")
    work = out.parent / f"{out.name}.shards"
    created = not work.exists()
    folders = [work / f"shard-{i}" for i in range(shards)]
    ex = submitit.AutoExecutor(folder=work / "slurm" / "%j", cluster=cluster)
    params = sbatch_parameters(req, f"render-{out.name}")
    if cluster != "slurm":
        params = {k: v for k, v in params.items() if not k.startswith("slurm_")}
        params["gpus_per_node"] = 0  # submitit's local jobs: this machine's GPUs are not asked for
    ex.update_parameters(**params)
    jobs: list = []  # the shard jobs once sbatch took them (inside batch() they have no id yet)
    try:
        with sbatch_errors(), ex.batch():
            batch = [ex.submit(RenderShardJob(cfg, dataclasses.replace(opts, shard=(i, shards)), f))
                     for i, f in enumerate(folders)]
        jobs = batch
        array = jobs[0].job_id.split("_")[0]
        say(f"submitted {shards} shard jobs ({array}) -> {work}")
        paths = [str(f) for f in folders]
        if cluster == "slurm":
            ex.update_parameters(name=f"merge-{out.name}", gpus_per_node=0, cpus_per_task=1,
                                 slurm_additional_parameters={"dependency": f"afterok:{array}"})
            with sbatch_errors():
                merge = ex.submit(merge_job, paths, str(out))
            return {"shard_jobs": [j.job_id for j in jobs], "merge_job": merge.job_id, "shards": paths}
    except SbatchRefused as exc:
        for job in jobs:
            job.cancel(check=False)
        if created:
            shutil.rmtree(work, ignore_errors=True)
        raise UserError(f"sbatch refused the render's jobs ({exc}); asked for {describe(req)}: change the request "
                        "with --slurm KEY=VALUE or --slurm-config FILE") from None
    for job in jobs:  # local jobs: wait for every shard, then merge here
        job.result()
    merged = merge_job(paths, str(out))
    return {"shard_jobs": [j.job_id for j in jobs], "merge_job": None, "shards": paths, **merged}
