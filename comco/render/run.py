"""`comco render`: plan, then render every record in bpy worker processes.

This module never imports bpy: workers are separate processes that import
`comco.scenes.worker`. Finished records go to an append-only journal as they
arrive, images are written atomically by the workers, so an interrupted run
resumes (`--resume`) where it stopped; at the end the journal becomes the
dataset's `scenes.jsonl` in index order.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path

from comco.data.folder import (FAILURES, INFO, METADATA, SCENES, SINGLES, check_writable, dumps, metadata_rows,
                           prepare_out, write_json, write_jsonl)
from comco.errors import UserError
from comco.data.writer import dataset_info, make_planner
from comco.plan.planner import PlanConfig, Planner
from comco.progress import progress
from comco.render.checks import check_rendered

JOURNAL = "journal.jsonl"
COCO = "annotations.json"


class DiskFull(Exception):
    """A worker could not write an image: no space left on the device."""
PRESETS = ("draft", "cycles", "high", "eevee")
DEVICES = ("cpu", "cuda", "optix")


@dataclass(frozen=True)
class RenderOptions:
    preset: str = "cycles"
    device: str = "cpu"
    samples: int | None = None
    workers: int = 1
    max_per_worker: int = 300
    masks: bool = False
    coco: bool = False
    singles: bool = False
    min_pixels: int = 10
    min_visible: float = 0.9
    max_retries: int = 5
    shard: tuple[int, int] = (0, 1)
    threads: int = 0

    def image_config(self) -> dict:
        """What changes the images (and so the dataset's configuration hash)."""
        return {"preset": self.preset, "samples": self.samples, "min_pixels": self.min_pixels,
                "min_visible": self.min_visible, "max_retries": self.max_retries, "singles": self.singles,
                "masks": self.masks, "coco": self.coco, "shard": list(self.shard)}


def parse_shard(text: str) -> tuple[int, int]:
    if text == "auto":
        i_s, n_s = os.environ.get("SLURM_ARRAY_TASK_ID"), os.environ.get("SLURM_ARRAY_TASK_COUNT")
        if i_s is None or n_s is None:
            raise UserError("--shard auto needs SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT in the environment")
        try:
            i, n = int(i_s) - int(os.environ.get("SLURM_ARRAY_TASK_MIN", "0")), int(n_s)
        except ValueError:
            raise UserError("--shard auto: SLURM_ARRAY_TASK_ID, _COUNT and _MIN must be whole numbers") from None
        if not (n >= 1 and 0 <= i < n):
            # a task past the count would render nothing and exit 0; say so instead
            raise UserError(f"--shard auto: task {i} of {n} (SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN) "
                            "is outside 0..COUNT-1; start the array at its MIN with COUNT tasks")
        return i, n
    try:
        i_s, n_s = text.split("/")
        i, n = int(i_s), int(n_s)
    except ValueError:
        raise UserError(f"--shard {text!r}: write i/N, e.g. 0/4 (or auto under SLURM)") from None
    if not (n >= 1 and 0 <= i < n):
        raise UserError(f"--shard {text}: need 0 <= i < N")
    return i, n


def check_environment(opts: RenderOptions) -> None:
    if sys.version_info[:2] != (3, 11):
        raise UserError(f"comco render needs Python 3.11 for bpy 5.0 (this is {sys.version.split()[0]})")
    if importlib.util.find_spec("bpy") is None:
        raise UserError("bpy is not installed: pip install 'bpy==5.0.*' (Python 3.11) to render")
    if opts.workers < 1:
        raise UserError(f"--workers {opts.workers}: at least 1")
    if opts.preset not in PRESETS:
        raise UserError(f"--preset {opts.preset}: use one of {', '.join(PRESETS)}")
    if opts.device not in DEVICES:
        raise UserError(f"--device {opts.device}: use cpu, cuda or optix")
    needs_gpu = opts.device in ("cuda", "optix") or opts.preset == "eevee"
    if needs_gpu and not nvidia_gpu_present():
        what = "--preset eevee" if opts.preset == "eevee" else f"--device {opts.device}"
        raise UserError(f"{what} needs an NVIDIA GPU and none was found; use --device cpu with draft or cycles")


def nvidia_gpu_present() -> bool:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return False
    try:
        return subprocess.run([exe, "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _worker_entry(conn, cfg: dict) -> None:
    # Runs in a fresh (spawned) process: bpy is imported there, never here.
    from comco.scenes.worker import serve

    serve(conn, cfg)


class WorkerPool:
    """Workers over pipes; a dead or retired worker is replaced, its job retried once."""

    def __init__(self, n: int, cfg: dict):
        self.ctx = mp.get_context("spawn")
        self.cfg = cfg
        self.workers: list[dict] = []
        for _ in range(n):
            self._start()

    def _start(self) -> dict:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker_entry, args=(child, self.cfg), daemon=True)
        proc.start()
        child.close()
        w = {"proc": proc, "conn": parent, "job": None, "ready": False}
        self.workers.append(w)
        return w

    def idle(self) -> list[dict]:
        return [w for w in self.workers if w["ready"] and w["job"] is None]

    def busy(self) -> int:
        return sum(1 for w in self.workers if w["job"] is not None)

    def send(self, w: dict, job: dict) -> None:
        w["job"] = job
        w["conn"].send(job)

    def events(self, timeout: float = 1.0) -> list[tuple[dict, dict]]:
        """(job, message) pairs for finished jobs; crashed workers give a 'crashed' message."""
        out = []
        conns = {w["conn"]: w for w in self.workers}
        sentinels = {w["proc"].sentinel: w for w in self.workers}
        for ready in wait(list(conns) + list(sentinels), timeout):
            w = conns.get(ready) or sentinels.get(ready)
            if w not in self.workers:
                continue
            try:
                msg = w["conn"].recv() if ready in conns else None
            except (EOFError, OSError):
                msg = None
            if msg is None:  # the process died (killed, out of memory, segfault)
                job = w["job"]
                self._replace(w)
                if job is not None:
                    out.append((job, {"kind": "crashed"}))
                continue
            if msg["kind"] == "ready":
                w["ready"] = True
                continue
            job, w["job"] = w["job"], None
            out.append((job, msg))
            if msg.get("last"):  # it retires after this answer (--max-per-worker): start a fresh one
                self._replace(w)
        return out

    def _replace(self, w: dict) -> None:
        self.workers.remove(w)
        w["proc"].join(timeout=5)
        if w["proc"].is_alive():
            w["proc"].kill()
        self._start()

    def close(self) -> None:
        for w in self.workers:
            try:
                w["conn"].send(None)
            except (OSError, BrokenPipeError):
                pass
        for w in self.workers:
            w["proc"].join(timeout=10)
            if w["proc"].is_alive():
                w["proc"].kill()


def _read_journal(out: Path) -> dict[str, dict]:
    """Completed entries by key; a line cut by a crash is ignored (its image is re-rendered)."""
    path = out / JOURNAL
    done: dict[str, dict] = {}
    if not path.is_file():
        return done
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            rec = entry.get("record")
            if entry.get("status") == "ok" and not (out / rec["image"]).is_file():
                continue
            done[entry["key"]] = entry
    return done


def run_render(cfg: PlanConfig, opts: RenderOptions, out: Path, *, overwrite: bool = False, resume: bool = False,
               quiet: bool = False) -> dict:
    check_environment(opts)
    planner = make_planner(cfg)
    info = dataset_info(planner)
    info["config"]["render"] = opts.image_config()
    info = {**info, **_rehash(info)}
    state = prepare_out(out, info, overwrite=overwrite, resume=resume)
    if state == "same" and not resume and (out / JOURNAL).exists():
        raise UserError(f"--out {out} already holds this dataset (partly) rendered; pass --resume to continue "
                        f"or --overwrite to start again")
    if state == "overwrite" or (overwrite and state == "same"):
        for name in (JOURNAL, SCENES, FAILURES, METADATA, INFO):
            (out / name).unlink(missing_ok=True)
        for d in ("images", "singles", "masks"):
            shutil.rmtree(out / d, ignore_errors=True)
    check_writable(out)
    for leftover in out.glob("*/.*.tmp.png"):  # images cut by a kill: never part of the dataset
        leftover.unlink()
    write_json(out / INFO, {**info, "rendered": False})
    done = _read_journal(out) if resume else {}
    if not resume:
        (out / JOURNAL).unlink(missing_ok=True)

    shard_i, shard_n = opts.shard
    jobs = [("scene", i) for i in range(cfg.n) if i % shard_n == shard_i and f"scene:{i}" not in done]
    singles = planner.singles() if opts.singles and shard_i == 0 else []
    jobs += [("single", s) for s in singles if f"single:{s['id']}" not in done]
    total = len(jobs) + len(done)
    t0 = time.perf_counter()
    stats = {"rendered": 0, "failed": 0, "retries": 0, "crashes": 0, "rss_mb": {}}
    worker_cfg = {"object_set": cfg.object_set, "preset": opts.preset, "resolution": list(cfg.resolution),
                  "device": opts.device, "samples": opts.samples, "threads": opts.threads, "out": str(out),
                  "max_per_worker": opts.max_per_worker}
    pool = WorkerPool(min(opts.workers, max(1, len(jobs))), worker_cfg) if jobs else None
    try:
        with progress(total, "render", "images", quiet) as bar, open(out / JOURNAL, "a", encoding="utf-8") as journal:
            bar.advance(len(done))
            # Scenes are planned in batches, then handed to _job as records.
            planned = planner.records_for(item for kind, item in jobs if kind == "scene")
            queue = [_job(planner, kind, item, opts, next(planned) if kind == "scene" else None)
                     for kind, item in jobs]
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
                    entry = _settle(planner, opts, job, msg, crashed_once, queue, stats)
                    if entry is not None:
                        journal.write(dumps(entry) + "\n")
                        journal.flush()
                        bar.advance()
    except (DiskFull, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno != errno.ENOSPC:
            raise
        if pool:
            pool.close()
            pool = None
        done_now = len(_read_journal(out))
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
        return {"kind": "scene", "key": f"scene:{rec['index']}", "record": rec, "mask": opts.masks or opts.coco}
    return {"kind": "single", "key": f"single:{item['id']}", "record": item, "mask": opts.masks or opts.coco}


def _settle(planner, opts, job, msg, crashed_once, queue, stats) -> dict | None:
    """Turn a worker's answer into a journal entry, or queue a retry."""
    rec = job["record"]
    if msg["kind"] == "crashed":
        stats["crashes"] += 1
        if job["key"] not in crashed_once:
            crashed_once.add(job["key"])
            queue.append(job)
            return None
        return {"key": job["key"], "status": "failed", "record": rec, "reason": "the render worker crashed twice"}
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
    entries = _read_journal(out)
    scenes = sorted((e["record"] for e in entries.values() if e["status"] == "ok" and e["key"].startswith("scene:")),
                    key=lambda r: r["index"])
    singles = sorted((e["record"] for e in entries.values() if e["status"] == "ok" and e["key"].startswith("single:")),
                     key=lambda r: r["id"])
    failures = [{"key": e["key"], "id": e["record"]["id"], "reason": e["reason"], "retry": e["record"].get("retry")}
                for e in entries.values() if e["status"] == "failed"]
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
    return {"rendered_total": len(scenes), "singles": len(singles), "failures": failures}
