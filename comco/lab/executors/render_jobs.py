"""`comco render ... --executor slurm --shards K`: one render as a SLURM job array of K shards
(`--shard i/K` each) and a merge job that waits for the array (`--dependency=afterok`), through
submitit; `slurm-local` runs the shards as local jobs and merges when they are done.

    OUT.shards/shard-<i>/    the shard datasets (kept: `comco dataset merge` can be run again)
    OUT.shards/slurm/<job>/  submitit's files and logs
    OUT/                     the merged dataset
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import submitit

from comco.errors import UserError
from comco.lab.executors.slurm import sbatch_parameters
from comco.lab.executors.slurm_request import DEFAULTS


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


def submit_render(cfg, opts, out: Path, shards: int, cluster: str, say=lambda _: None) -> dict:
    """Submit (slurm: returns the job ids at once) or run (slurm-local: returns when merged)."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise UserError(f"--out {out} is not empty; the merged dataset needs a new folder")
    if tuple(opts.shard) != (0, 1):
        raise UserError("--shards K makes the shards itself; leave --shard out")
    work = out.parent / f"{out.name}.shards"
    folders = [work / f"shard-{i}" for i in range(shards)]
    req = {k: DEFAULTS[k] for k in ("cpus", "memory", "time")}
    req["gpus"] = 1 if opts.device in ("cuda", "optix") else 0
    ex = submitit.AutoExecutor(folder=work / "slurm" / "%j", cluster=cluster)
    params = sbatch_parameters(req, f"render-{out.name}")
    if cluster != "slurm":
        params = {k: v for k, v in params.items() if not k.startswith("slurm_")}
    ex.update_parameters(**params)
    with ex.batch():
        jobs = [ex.submit(RenderShardJob(cfg, dataclasses.replace(opts, shard=(i, shards)), f))
                for i, f in enumerate(folders)]
    array = jobs[0].job_id.split("_")[0]
    say(f"submitted {shards} shard jobs ({array}) -> {work}")
    paths = [str(f) for f in folders]
    if cluster == "slurm":
        ex.update_parameters(name=f"merge-{out.name}", gpus_per_node=0, cpus_per_task=1,
                             slurm_additional_parameters={"dependency": f"afterok:{array}"})
        merge = ex.submit(merge_job, paths, str(out))
        return {"shard_jobs": [j.job_id for j in jobs], "merge_job": merge.job_id, "shards": paths}
    for job in jobs:  # local jobs: wait for every shard, then merge here
        job.result()
    merged = merge_job(paths, str(out))
    return {"shard_jobs": [j.job_id for j in jobs], "merge_job": None, "shards": paths, **merged}
