"""`comco render`: plan, then render every record in bpy worker processes.

This module never imports bpy: workers are separate processes that import
`comco.scenes.worker` (comco/render/pool.py). Finished records go to an append-only journal as they
arrive, images are written atomically by the workers, so an interrupted run
resumes (`--resume`) where it stopped; at the end the journal becomes the
dataset's `scenes.jsonl` in index order. One run holds a folder at a time
(OUT/.lock); a worker that crashes or goes silent past `--image-timeout` is
replaced and its image retried. The loop's unit is the render group (comco/render/groups.py):
it sends a group's images, hands each answer to the group, and journals a group whole once it
is settled; it ends only when no group is owed.
"""

from __future__ import annotations

import errno
import shutil
import time
from pathlib import Path

from comco.data.folder import (
    FAILURES,
    INFO,
    METADATA,
    SCENES,
    SINGLES,
    check_writable,
    failure_counts,
    metadata_rows,
    prepare_out,
    read_info,
)
from comco.data.writer import dataset_info, make_planner
from comco.errors import UserError
from comco.io import write_json, write_jsonl
from comco.plan import PlanConfig, Planner
from comco.plan.floors import PATTERNS
from comco.plan.lights import OPTIONS as LIGHT_OPTIONS
from comco.plan.lights import LightDrawer
from comco.plan.options import by_name
from comco.plan.worlds import PLAIN
from comco.progress import progress
from comco.record import DEPTH_FOLDER, NORMALS_FOLDER, PASSES, pair_rank
from comco.render.groups import Group, Schedule, job, owed_scenes, whole_groups
from comco.render.journal import JOURNAL, append, end_journal, read_journal, settled
from comco.render.options import RenderOptions, check_environment, image_timeout
from comco.render.pool import DiskFull, WorkerPool, sweep_scratch

COCO = "annotations.json"
LOCK = ".lock"


def _lock(out: Path):
    """One render per folder at a time (an advisory lock on OUT/.lock, held for the run): a
    second run would sweep the first one's in-flight images and interleave the journal."""
    import fcntl

    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        handle = open(out / LOCK, "a")
    except OSError as exc:
        raise UserError(f"--out {out} is not writable ({exc.strerror}); choose another folder") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise UserError(f"--out {out} is in use by another `comco render`; wait for it to finish "
                        f"or choose another --out") from None
    return handle


def check_draft(cfg: PlanConfig) -> None:
    """Refuse the realism factors that Workbench (the draft preset) cannot show."""
    if cfg.world != (PLAIN,):
        raise UserError("--world: the draft preset (Workbench) shows no HDRI world; use --preset cycles")
    if set(cfg.floor) & set(PATTERNS):
        raise UserError("--floor: the draft preset (Workbench) shows no procedural floor; use --preset cycles "
                        "(or --floor plain / none)")
    if cfg.texture != ("none",):
        raise UserError("--texture: the draft preset (Workbench) shows no procedural texture; use --preset cycles")
    lit = LightDrawer(cfg).set
    if lit:
        flag = by_name()[sorted(lit, key=LIGHT_OPTIONS.index)[0]].flag
        raise UserError(f"{flag}: the draft preset (Workbench) lights every scene with its own studio light; "
                        f"use --preset cycles")


def run_render(cfg: PlanConfig, opts: RenderOptions, out: Path, *, overwrite: bool = False, resume: bool = False,
               quiet: bool = False) -> dict:
    """`comco render`: plan, render in Blender worker processes, measure, check and write a dataset.

    Args:
        cfg: the plan configuration.
        opts: the render options (preset, device, workers, singles, masks, checks, shard...).
        out: the dataset folder.
        overwrite: render the folder again from scratch; resume: continue an interrupted render.
        quiet: no progress display.
    Returns a summary (images, singles, failures, seconds)."""
    check_passes(cfg, opts.preset)
    check_environment(opts)
    if opts.preset == "draft":
        check_draft(cfg)
    planner = make_planner(cfg)
    info = dataset_info(planner)
    info["config"]["render"] = opts.image_config()
    info = {**info, **_rehash(info)}
    lock = _lock(out)
    try:
        return _render_locked(cfg, opts, out, planner, info, overwrite=overwrite, resume=resume, quiet=quiet)
    finally:
        lock.close()


def _render_locked(cfg: PlanConfig, opts: RenderOptions, out: Path, planner: Planner, info: dict, *,
                   overwrite: bool, resume: bool, quiet: bool) -> dict:
    state = prepare_out(out, info, overwrite=overwrite, resume=resume)
    if state == "same" and not resume and not overwrite:
        _refuse_rendered(out)
    if state == "overwrite" or (overwrite and state == "same"):
        for name in (JOURNAL, SCENES, FAILURES, METADATA, INFO):
            (out / name).unlink(missing_ok=True)
        for d in ("images", "singles", "masks", DEPTH_FOLDER, NORMALS_FOLDER):
            shutil.rmtree(out / d, ignore_errors=True)
    check_writable(out)
    for leftover in [*out.glob("*/.*.tmp.png"), *out.glob("masks/*.tmp.png")]:  # cut by a kill: never part
        leftover.unlink()                                                        # of the dataset
    sweep_scratch()
    write_json(out / INFO, {**info, "rendered": False})
    if resume:
        end_journal(out / JOURNAL)
        done = {k: e for k, e in read_journal(out).items() if settled(out, e, opts.masks)}
    else:
        done = {}
        (out / JOURNAL).unlink(missing_ok=True)

    groups = _owed_groups(cfg, opts, planner, done)
    images = sum(len(g.jobs) for g in groups)
    stats = {"rendered": 0, "failed": 0, "retries": 0, "crashes": 0, "hung": 0, "rss_mb": {}}
    schedule = Schedule(groups, planner, opts, stats)
    t0 = time.perf_counter()
    worker_cfg = {"object_set": cfg.object_set, "preset": opts.preset, "resolution": list(cfg.resolution),
                  "device": opts.device, "samples": opts.samples, "threads": opts.threads, "out": str(out),
                  "max_per_worker": opts.max_per_worker, **_passes(cfg)}
    timeout = image_timeout(opts, cfg.resolution)
    pool = WorkerPool(min(opts.workers, max(1, images)), worker_cfg, timeout) if groups else None
    try:
        with progress(images + len(done), "render", "images", quiet) as bar, \
                open(out / JOURNAL, "a", encoding="utf-8") as journal:
            bar.advance(len(done))
            while schedule.owes():  # a group leaves the schedule only once it is journaled
                for w in pool.idle():
                    image = schedule.next_job()
                    if image is None:
                        break
                    pool.send(w, image)
                for sent, msg in pool.events():
                    if msg["kind"] == "disk_full":
                        raise DiskFull(msg["reason"])
                    if msg["kind"] == "done" and msg.get("served") in (1, 100, 1000, 10000):
                        stats["rss_mb"][msg["served"]] = round(msg["rss_mb"], 1)
                    entries = schedule.answer(sent, msg)
                    if entries:
                        append(journal, entries)
                        bar.advance(len(entries))
    except KeyboardInterrupt:  # Ctrl-C: stop now; images in flight are swept at the next start
        if pool:
            pool.close(kill=True)
            pool = None
        raise
    except (DiskFull, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno != errno.ENOSPC:
            raise
        if pool:
            pool.close()
            pool = None
        done_now = len(read_journal(out))
        raise UserError(f"disk full after {done_now} complete images (all kept); free space under {out} "
                        f"and rerun with --resume") from None
    finally:
        if pool:
            pool.close()
    summary = finalize(out, info, planner, coco=opts.coco)
    summary.update(stats, seconds=time.perf_counter() - t0, images=summary["rendered_total"])
    return summary


def check_passes(cfg: PlanConfig, preset: str) -> None:
    """Refuse --depth / --normals with a preset whose engine does not write that pass (one line,
    before anything is written)."""
    for name in ("depth", "normals"):
        if getattr(cfg, name) and name not in PASSES.get(preset, PASSES["cycles"]):  # an unknown preset: its own error
            able = [p for p, have in PASSES.items() if name in have]
            raise UserError(f"--{name}: the {preset} preset cannot write {name} maps; use --preset "
                            f"{' or '.join(able)}")


def _passes(cfg: PlanConfig) -> dict:
    """The worker's passes to switch on (none: today's worker, untouched)."""
    passes = [name for name in ("depth", "normals") if getattr(cfg, name)]
    return {"passes": passes} if passes else {}


def _refuse_rendered(out: Path) -> None:
    """The same configuration already in --out: say whether it is finished or part-way."""
    old = read_info(out)
    if old.get("rendered") is True:
        counts = old.get("counts") if isinstance(old.get("counts"), dict) else {}
        failed = f", {counts['failed']} failed" if counts.get("failed") else ""
        raise UserError(f"--out {out} already holds this dataset, finished ({counts.get('rendered', 0)} images "
                        f"rendered{failed}); to render it again, run the same command with --overwrite, "
                        f"or choose another --out")
    if (out / JOURNAL).exists():
        raise UserError(f"--out {out} already holds this dataset, partly rendered; pass --resume to continue "
                        f"or --overwrite to start again")


def _rehash(info: dict) -> dict:
    from comco.data.folder import config_hash

    return {"config_hash": config_hash(info["config"], info["object_set_hash"])}


def _owed_groups(cfg: PlanConfig, opts: RenderOptions, planner: Planner, done: dict) -> list[Group]:
    """The groups this run renders, in order: this shard's scenes whose group is not whole in
    `done` (a pair group from the attempt it had reached), then the singles not done."""
    shard_i, shard_n = opts.shard
    mask = opts.masks or opts.coco
    attempts = owed_scenes(range(shard_i, cfg.n, shard_n), done, tuple(cfg.pairs))
    groups = [Group([job("scene", rec, mask) for rec in recs]) for recs in planner.groups_from(attempts)]
    singles = planner.singles() if opts.singles and shard_i == 0 else []
    return groups + [Group([job("single", s, mask)]) for s in singles if f"single:{s['id']}" not in done]


def finalize(out: Path, info: dict, planner: Planner, coco: bool = False) -> dict:
    """Journal -> scenes.jsonl (index order), singles, failures, metadata, dataset.json."""
    entries = read_journal(out)
    factors = tuple(info["config"].get("pairs") or ())
    if factors:
        entries = whole_groups(entries, factors)
    scenes = sorted((e["record"] for e in entries.values() if e["status"] == "ok" and e["key"].startswith("scene:")),
                    key=lambda r: (r["index"], pair_rank(r)))
    singles = sorted((e["record"] for e in entries.values() if e["status"] == "ok" and e["key"].startswith("single:")),
                     key=lambda r: r["id"])
    failures = [{"key": e["key"], "id": e["record"]["id"], "reason": e["reason"], "retry": e["record"].get("retry")}
                for e in entries.values() if e["status"] == "failed"]
    transient = sum(1 for e in entries.values() if e["status"] == "failed" and not settled(out, e, False))
    write_jsonl(out / SCENES, scenes)
    if singles:
        write_jsonl(out / SINGLES, singles)
    if failures:
        write_jsonl(out / FAILURES, failures)
    else:
        (out / FAILURES).unlink(missing_ok=True)
    write_jsonl(out / METADATA, metadata_rows(scenes))
    if coco:
        from comco.render.coco import coco_annotations

        write_json(out / COCO, coco_annotations(out, scenes, planner.set.names))
    info = dict(info)
    info["rendered"] = True
    info["counts"] = {**info["counts"], "rendered": len(scenes), "singles": len(singles),
                      **failure_counts(failures), "retried": sum(1 for r in scenes if r.get("retry"))}
    write_json(out / INFO, info)
    return {"rendered_total": len(scenes), "singles": len(singles), "failures": failures, "transient": transient,
            "retried": info["counts"]["retried"],  # what the CLI reports: dataset.json's count
            "retried_after_checks": sum(1 for r in scenes if r.get("render_retries"))}
