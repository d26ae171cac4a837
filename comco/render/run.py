"""`comco render`: plan, then render every record in bpy worker processes.

This module never imports bpy: workers are separate processes that import
`comco.scenes.worker` (comco/render/pool.py). Finished records go to an append-only journal as they
arrive, images are written atomically by the workers, so an interrupted run
resumes (`--resume`) where it stopped; at the end the journal becomes the
dataset's `scenes.jsonl` in index order. One run holds a folder at a time
(OUT/.lock); a worker that crashes or goes silent past `--image-timeout` is
replaced and its image retried.
"""

from __future__ import annotations

import errno
import shutil
import time
from pathlib import Path

from comco.data.folder import FAILURES, INFO, METADATA, SCENES, SINGLES, check_writable, metadata_rows, prepare_out
from comco.data.writer import dataset_info, make_planner
from comco.errors import UserError
from comco.io import dumps, write_json, write_jsonl
from comco.plan import PlanConfig, Planner
from comco.plan.worlds import PLAIN
from comco.progress import progress
from comco.record import pair_rank
from comco.render.checks import check_rendered
from comco.render.journal import CRASHED_TWICE, JOURNAL, end_journal, read_journal, settled
from comco.render.options import RenderOptions, check_environment, image_timeout
from comco.render.pairs import PairGroups, scene_key, whole_groups
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
    check_environment(opts)
    if opts.preset == "draft" and cfg.world != (PLAIN,):
        raise UserError("--world: the draft preset (Workbench) shows no HDRI world; use --preset cycles")
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
    if state == "same" and not resume and not overwrite and (out / JOURNAL).exists():
        raise UserError(f"--out {out} already holds this dataset (partly) rendered; pass --resume to continue "
                        f"or --overwrite to start again")
    if state == "overwrite" or (overwrite and state == "same"):
        for name in (JOURNAL, SCENES, FAILURES, METADATA, INFO):
            (out / name).unlink(missing_ok=True)
        for d in ("images", "singles", "masks"):
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

    shard_i, shard_n = opts.shard
    groups = PairGroups(cfg.pairs) if cfg.pairs else None
    if groups is None:
        jobs = [("scene", i) for i in range(cfg.n) if i % shard_n == shard_i and f"scene:{i}" not in done]
    else:  # a pair group is rendered whole, from one attempt
        jobs = [("scene", i) for i in groups.to_render(range(shard_i, cfg.n, shard_n), done)]
    singles = planner.singles() if opts.singles and shard_i == 0 else []
    jobs += [("single", s) for s in singles if f"single:{s['id']}" not in done]
    scene_jobs = sum(1 for kind, _ in jobs if kind == "scene")
    total = len(jobs) + scene_jobs * len(cfg.pairs) + len(done)  # a pair group is 1 + factors images
    t0 = time.perf_counter()
    stats = {"rendered": 0, "failed": 0, "retries": 0, "crashes": 0, "hung": 0, "rss_mb": {}}
    worker_cfg = {"object_set": cfg.object_set, "preset": opts.preset, "resolution": list(cfg.resolution),
                  "device": opts.device, "samples": opts.samples, "threads": opts.threads, "out": str(out),
                  "max_per_worker": opts.max_per_worker}
    timeout = image_timeout(opts, cfg.resolution)
    pool = WorkerPool(min(opts.workers, max(1, len(jobs))), worker_cfg, timeout) if jobs else None
    try:
        with progress(total, "render", "images", quiet) as bar, open(out / JOURNAL, "a", encoding="utf-8") as journal:
            bar.advance(len(done))
            # Scenes are planned in batches, then handed to _job as records.
            if groups is None:
                planned = planner.records_for(item for kind, item in jobs if kind == "scene")
                queue = [_job(planner, kind, item, opts, next(planned) if kind == "scene" else None)
                         for kind, item in jobs]
            else:
                planned = planner.groups_from((item, groups.first_retry.get(item, 0))
                                              for kind, item in jobs if kind == "scene")
                queue = [j for kind, item in jobs
                         for j in (groups.jobs(next(planned), opts) if kind == "scene"
                                   else [_job(planner, kind, item, opts)])]
            queue.reverse()  # pop() from the end keeps index order
            crashed_once: set[str] = set()
            while queue or (pool and pool.busy()):
                for w in pool.idle():
                    if not queue:
                        break
                    pool.send(w, queue.pop())
                for job, msg in pool.events():
                    if msg["kind"] == "disk_full":
                        raise DiskFull(msg["reason"])
                    if msg["kind"] == "done" and msg.get("served") in (1, 100, 1000, 10000):
                        stats["rss_mb"][msg["served"]] = round(msg["rss_mb"], 1)
                    if groups is not None and not groups.arrived(job, msg):
                        continue  # its pair group is being planned again: this image is stale
                    entry = _settle(planner, opts, job, msg, crashed_once, queue, stats, groups)
                    if groups is not None:
                        queue.extend(reversed(groups.ready(planner, opts)))
                    if entry is not None:
                        journal.write(dumps(entry) + "\n")
                        journal.flush()
                        bar.advance()
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


def _rehash(info: dict) -> dict:
    from comco.data.folder import config_hash

    return {"config_hash": config_hash(info["config"], info["object_set_hash"])}


def _job(planner: Planner, kind: str, item, opts: RenderOptions, record: dict | None = None) -> dict:
    if kind == "scene":
        rec = record or planner.plan(item)
        return {"kind": "scene", "key": scene_key(rec), "record": rec, "mask": opts.masks or opts.coco}
    return {"kind": "single", "key": f"single:{item['id']}", "record": item, "mask": opts.masks or opts.coco}


def _settle(planner, opts, job, msg, crashed_once, queue, stats, groups=None) -> dict | None:
    """Turn a worker's answer into a journal entry, or queue a retry."""
    rec = job["record"]
    if msg["kind"] == "crashed":
        stats["crashes" if msg["why"] == "crashed" else "hung"] += 1
        if job["key"] not in crashed_once:
            crashed_once.add(job["key"])
            queue.append(job)
            if groups is not None:
                groups.sent_again(job)
            return None
        # Transient: the next --resume tries it again.
        reason = CRASHED_TWICE if msg["why"] == "crashed" else f"the render worker {msg['why']}, twice"
        return {"key": job["key"], "status": "failed", "record": rec, "reason": reason, "transient": True}
    if msg["kind"] == "error":
        raise RuntimeError(f"render worker failed on {job['key']}:\n{msg['reason']}")
    if msg["kind"] == "failed":  # a broken object: another seed would not mend it
        return {"key": job["key"], "status": "failed", "record": rec, "reason": msg["reason"]}
    rec = msg["record"]
    reason = check_rendered(rec, opts.min_pixels, opts.min_visible) if job["kind"] == "scene" else None
    if reason is None:
        stats["rendered"] += 1
        return {"key": job["key"], "status": "ok", "record": rec}
    tries = rec.get("render_retries", 0)
    if tries < opts.max_retries and groups is not None:
        stats["retries"] += 1
        groups.redo(rec, queue)  # the whole group again, once none of it is in flight
        return None
    if tries < opts.max_retries:
        stats["retries"] += 1
        again = planner.plan(rec["index"], rec["retry"] + 1)  # a derived seed; the worker overwrites the image
        again["render_retries"] = tries + 1
        queue.append(_job(planner, "scene", rec["index"], opts, again))
        return None
    stats["failed"] += 1
    return {"key": job["key"], "status": "failed", "record": rec, "reason": reason}


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
    info["counts"] = {**info["counts"], "rendered": len(scenes), "singles": len(singles), "failed": len(failures),
                      "retried": sum(1 for r in scenes if r.get("retry"))}
    write_json(out / INFO, info)
    return {"rendered_total": len(scenes), "singles": len(singles), "failures": failures, "transient": transient}
