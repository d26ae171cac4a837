"""`comco lab run`: run a recipe's stages into one folder, each at most once per input hash.

    OUT/lab.json                 which recipe and scale this folder holds
    OUT/recipe.toml              the recipe file as run
    OUT/stages/<id>/             one folder per stage; stage.json appears when it finished
    OUT/runs.jsonl               one line per `lab run`: which stages ran and how long
    OUT/report.md, report.html, results.json, figures/   (the report stage)

A stage is skipped when its stage.json holds the hash it would have now (its settings,
the hashes of its inputs, the code version). A crash leaves the unfinished stages
without stage.json, so the next run redoes only those (renders and trainings resume
from their journals and checkpoints). Independent stages run side by side in worker
processes, each with `threads` torch threads; renders run one at a time in this
process with their own bpy workers.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from comco.errors import UserError
from comco.io import write_json, write_text
from comco.lab.executors.base import FINISHED, LOGS, StageCall, record_failure, run_call
from comco.lab.graph import Stage, build_stages
from comco.lab.recipe import Recipe, check_machine

LAB_INFO = "lab.json"
STAGE_INFO = "stage.json"
STARTED = "started.json"
RUNS = "runs.jsonl"


def stage_dir(out: Path, stage: Stage) -> Path:
    """OUT/stages/<id>, refused unless it lies directly inside OUT/stages (comco.lab.keys)."""
    return stage.folder(out)


def is_done(out: Path, stage: Stage) -> bool:
    path = stage_dir(out, stage) / STAGE_INFO
    if not path.is_file():
        return False
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError):  # cut, not UTF-8, nested past the stack: not done, run it again
        return False
    return isinstance(info, dict) and info.get("hash") == stage.hash


def prepare_folder(out: Path, recipe: Recipe, *, resume: bool, overwrite: bool) -> str:
    """Claim OUT for this recipe and scale; refuse a folder that holds something else."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder")
    info_path = out / LAB_INFO
    identity = {"recipe": recipe.name, "scale": recipe.scale}
    state = "new"
    if info_path.is_file():
        try:
            old = json.loads(info_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            old = {}
        if {k: old.get(k) for k in identity} == identity:
            state = "same"
        elif overwrite:
            state = "overwrite"
        elif resume:
            state = "resume"
        else:
            raise UserError(f"--out {out} holds the lab run of recipe '{old.get('recipe')}' at scale "
                            f"'{old.get('scale')}', not '{recipe.name}' at '{recipe.scale}'; pass --resume to "
                            "reuse its finished stages, --overwrite to replace it, or choose another --out")
    elif out.is_dir() and any(c.name != ".lock" for c in out.iterdir()):
        if not overwrite:
            raise UserError(f"--out {out} is not empty and holds no lab run; pass --overwrite to replace "
                            "its contents or choose another --out")
        state = "overwrite"
    if state == "overwrite":
        for child in [c for c in out.iterdir() if c.name != ".lock"]:
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    out.mkdir(parents=True, exist_ok=True)
    write_json(info_path, {**identity, "recipe_path": recipe.path, "recipe_digest": recipe.digest(),
                           "description": recipe.description})
    write_text(out / "recipe.toml", recipe.source)
    return state


def _start(out: Path, stage: Stage) -> Path:
    """The stage's folder: kept when it holds an unfinished attempt at the same hash (resumable)."""
    d = stage_dir(out, stage)
    started = d / STARTED
    same = started.is_file() and json.loads(started.read_text(encoding="utf-8")).get("hash") == stage.hash
    if d.exists() and not same:
        shutil.rmtree(d)
    d.mkdir(parents=True, exist_ok=True)
    (d / STAGE_INFO).unlink(missing_ok=True)
    (d / LOGS / FINISHED).unlink(missing_ok=True)  # an owner's end of an earlier start: this start runs it anew
    write_json(started, {"hash": stage.hash})
    return d


def _finish(out: Path, stage: Stage, summary: dict, seconds: float, threads: int) -> None:
    write_json(stage_dir(out, stage) / STAGE_INFO, {
        "id": stage.id, "kind": stage.kind, "hash": stage.hash, "config": stage.config, "deps": stage.deps,
        "seconds": round(seconds, 3), "threads": threads, "finished": time.time(), "summary": summary})


def _run_report(out: Path, stage: Stage, stages: list[Stage]) -> dict:
    from comco.lab.report import write_report

    return write_report(out, stage, stages)


def run_lab(recipe: Recipe, out: Path, *, resume: bool = False, overwrite: bool = False, jobs: int | None = None,
            threads: int | None = None, quiet: bool = False, say=None, executor: str | None = None,
            gpus: int | None = None) -> dict:
    """Run what is not done yet; returns {"ran": [ids], "skipped": [ids], "seconds": {...}}."""
    from comco.lab.executors import make_executor

    out = Path(out)
    say = say or (lambda _: None)
    stages = build_stages(recipe)
    check_machine(recipe)
    for st in stages:  # every folder inside OUT/stages before anything is written
        stage_dir(out, st)
    cores = os.cpu_count() or 1
    run = recipe.settings["run"]
    jobs = jobs or run["jobs"] or cores
    threads = threads or run["threads"] or max(1, cores // jobs)
    # every check of the executor (submitit, sbatch, GPUs) before anything is written
    name = executor or run["executor"]
    pool = make_executor(name, out=out, settings=recipe.settings, jobs=jobs, gpus=gpus,
                         kinds=tuple(dict.fromkeys(s.kind for s in stages)))
    lock = _lock(out)
    try:
        return _run_locked(recipe, out, stages, pool, resume=resume, overwrite=overwrite, jobs=jobs, threads=threads,
                           quiet=quiet, say=say)
    finally:
        lock.close()


def _lock(out: Path):
    """One lab run per folder at a time (an advisory lock on OUT/.lock)."""
    import fcntl

    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder")
    out.mkdir(parents=True, exist_ok=True)
    handle = open(out / ".lock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise UserError(f"--out {out} is in use by another `comco lab run`; "
                        "wait for it or choose another --out") from None
    return handle


def _run_locked(recipe: Recipe, out: Path, stages: list[Stage], pool, *, resume: bool, overwrite: bool, jobs: int,
                threads: int, quiet: bool, say) -> dict:
    state = prepare_folder(out, recipe, resume=resume, overwrite=overwrite)
    by_id = {s.id: s for s in stages}
    depth = chain_depths(stages)
    done = {s.id for s in stages if is_done(out, s)}
    todo = [s for s in stages if s.id not in done]
    skipped = [s.id for s in stages if s.id in done]
    say(f"lab {recipe.name} ({recipe.scale}) -> {out}: {len(stages)} stages, {len(skipped)} already done, "
        f"{len(todo)} to run ({pool.describe(jobs, threads)})")
    ran: list[str] = []
    seconds: dict[str, float] = {}
    t_run = time.perf_counter()
    pending = list(todo)
    failure: BaseException | None = None
    from comco.progress import progress

    def finished(s: Stage, summary: dict, secs: float) -> None:
        seconds[s.id] = secs
        _finish(out, s, summary, secs, threads)
        done.add(s.id)
        ran.append(s.id)
        bar.advance()
        say(f"  {s.id}: {secs:.1f} s")

    try:
        with progress(len(todo), "lab", "stages", quiet) as bar:
            while pending or pool.busy():
                ready = [s for s in pending if all(d in done for d in s.deps.values())]
                inline = [s for s in ready if pool.runs_inline(s.kind, s.config)]
                if inline and failure is None and not (pool.inline_waits_for_idle and pool.busy()):
                    # in-process stages: the report, and for the local pool renders and captions
                    s = inline[0]
                    pending.remove(s)
                    _start(out, s)
                    t0 = time.perf_counter()
                    if s.kind == "report":
                        summary = _run_report(out, s, stages)
                    else:
                        summary, _ = run_call(_stage_call(out, s, by_id, threads))
                    finished(s, summary, time.perf_counter() - t0)
                    continue
                if failure is None:
                    batch = []
                    later = (s for s in ready if not pool.runs_inline(s.kind, s.config))
                    for s in sorted(later, key=lambda s: -depth[s.id]):
                        if len(batch) >= pool.free():
                            break
                        pending.remove(s)
                        _start(out, s)
                        batch.append(_stage_call(out, s, by_id, threads))
                    if batch:
                        pool.start(batch)
                if not pool.busy():
                    if failure is not None or not pending:
                        break
                    if not inline:
                        blocked = ", ".join(s.id for s in pending[:3])
                        raise RuntimeError(f"lab stages cannot start (missing inputs): {blocked}")
                    continue
                for outcome in pool.wait():
                    s = by_id[outcome.id]
                    if outcome.failed:
                        record_failure(stage_dir(out, s), outcome)
                        failure = failure or outcome.error
                        say(f"  {s.id}: failed ({outcome.error.__class__.__name__})")
                        continue
                    finished(s, outcome.summary, outcome.seconds)
                if failure is not None:
                    pending.clear()
    except BaseException:
        pool.abort()
        raise
    finally:
        pool.close()
        _log_run(out, recipe, state, ran, skipped, seconds, time.perf_counter() - t_run, failure)
    if failure is not None:
        raise failure
    return {"state": state, "ran": ran, "skipped": skipped, "seconds": seconds,
            "wall_seconds": time.perf_counter() - t_run, "stages": [s.id for s in stages]}


def _stage_call(out: Path, stage: Stage, by_id: dict, threads: int) -> StageCall:
    return StageCall(stage.id, stage.kind, stage.config, _dep_dirs(out, stage, by_id), str(stage_dir(out, stage)),
                     threads, stage.hash)


def chain_depths(stages: list[Stage]) -> dict[str, int]:
    """Per stage, the number of stages on its longest chain of dependants, itself included.
    Ready stages start deepest first (ties in recipe order): the p = 1 trainings, which
    fine-tunes and their probes wait on, go before the p = 0 ones that only a probe waits
    on, so the run does not end with the fine-tunes queued behind one another."""
    children: dict[str, list[str]] = {s.id: [] for s in stages}
    for s in stages:
        for dep in s.deps.values():
            if dep in children:
                children[dep].append(s.id)
    depth: dict[str, int] = {}
    for s in reversed(stages):  # stages come in dependency order, dependants after their inputs
        depth[s.id] = 1 + max((depth[c] for c in children[s.id]), default=0)
    return depth


def _dep_dirs(out: Path, stage: Stage, by_id: dict) -> dict[str, str]:
    return {role: str(stage_dir(out, by_id[d])) for role, d in stage.deps.items()}


def _log_run(out: Path, recipe: Recipe, state: str, ran: list, skipped: list, seconds: dict, wall: float,
             failure) -> None:
    entry = {"time": time.time(), "recipe": recipe.name, "scale": recipe.scale, "state": state,
             "ran": ran, "skipped": len(skipped), "seconds": {k: round(v, 2) for k, v in seconds.items()},
             "wall_seconds": round(wall, 2), "failed": None if failure is None else repr(failure)[:300],
             "python": sys.version.split()[0]}
    with open(out / RUNS, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
