"""`comco render`: plan, then render every record in bpy worker processes.

This module never imports bpy: workers are separate processes that import
`comco.scenes.worker`. Finished records go to an append-only journal as they
arrive, images are written atomically by the workers, so an interrupted run
resumes (`--resume`) where it stopped; at the end the journal becomes the
dataset's `scenes.jsonl` in index order. One run holds a folder at a time
(OUT/.lock); a worker that crashes or goes silent past `--image-timeout` is
replaced and its image retried.
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
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path

from comco.data.folder import FAILURES, INFO, METADATA, SCENES, SINGLES, check_writable, metadata_rows, prepare_out
from comco.data.validate import image_problem
from comco.data.writer import dataset_info, make_planner
from comco.errors import UserError
from comco.io import dumps, write_json, write_jsonl
from comco.plan import PlanConfig, Planner
from comco.progress import progress
from comco.record import PRESETS
from comco.render.checks import check_rendered

JOURNAL = "journal.jsonl"
COCO = "annotations.json"
LOCK = ".lock"
SCRATCH_PREFIX = "comco-render-"  # + owner pid + "-": each worker's ID renders and Blender's temp files
CRASHED_TWICE = "the render worker crashed twice"


class DiskFull(Exception):
    """A worker could not write an image: no space left on the device."""
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
    image_timeout: float | None = None  # seconds per image; None: from preset and resolution, 0: no limit

    def image_config(self) -> dict:
        """What changes the images (and so the dataset's configuration hash)."""
        return {"preset": self.preset, "samples": self.samples, "min_pixels": self.min_pixels,
                "min_visible": self.min_visible, "max_retries": self.max_retries, "singles": self.singles,
                "masks": self.masks, "coco": self.coco, "shard": list(self.shard)}


def parse_shard(text: str) -> tuple[int, int]:
    """"i/N" (or "auto" under a SLURM array) -> (i, N), the slice of images this run renders.

    Args:
        text: the --shard value."""
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
    if opts.image_timeout is not None and not opts.image_timeout >= 0:  # also refuses nan
        raise UserError(f"--image-timeout {opts.image_timeout}: give seconds, at least 0 (0 = no limit)")
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


def image_timeout(opts: RenderOptions, resolution: tuple[int, int]) -> float:
    """Seconds one image may take before its worker counts as hung (0 = no limit).

    The default is 20 times a slow estimate (a loaded 2-core CPU: draft 0.5 s, Cycles
    15 s at 24 samples, EEVEE 2 s per 512x512 image), and at least two minutes, so that
    only a worker that has stopped answering reaches it."""
    if opts.image_timeout is not None:
        return opts.image_timeout
    megapixels = resolution[0] * resolution[1] / (512 * 512)
    if opts.preset == "draft":
        estimate = 0.5 * megapixels
    elif opts.preset == "eevee":
        estimate = 2.0 * megapixels * (opts.samples or 32) / 32
    else:
        estimate = 15.0 * megapixels * (opts.samples or (24 if opts.preset == "cycles" else 128)) / 24
    return max(120.0, 20 * estimate)


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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def sweep_scratch() -> None:
    """Remove scratch folders left by render runs that were killed (their owner is dead)."""
    for d in Path(tempfile.gettempdir()).glob(SCRATCH_PREFIX + "*"):
        owner = d.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)) and d.is_dir() and not d.is_symlink():
            shutil.rmtree(d, ignore_errors=True)


def _worker_entry(conn, cfg: dict) -> None:
    # Runs in a fresh (spawned) process: bpy is imported there, never here.
    # Ctrl-C reaches the whole process group: the parent alone decides, and stops the workers.
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from comco.scenes.worker import serve

    serve(conn, cfg)


class WorkerPool:
    """Workers over pipes; a dead, hung or retired worker is replaced, its job retried once.

    Each worker gets a scratch folder (its ID renders and Blender's temp files) that the
    pool removes when the worker ends, is killed or is replaced."""

    def __init__(self, n: int, cfg: dict, timeout: float = 0.0):
        self.ctx = mp.get_context("spawn")
        self.cfg = cfg
        self.timeout = timeout  # 0: wait forever
        # Starting bpy is slower than a draft image; a worker that never says ready is hung too.
        self.start_timeout = max(timeout, 300.0) if timeout else 0.0
        self.failed_starts = 0
        self.workers: list[dict] = []
        for _ in range(n):
            self._start()

    def _start(self) -> dict:
        scratch = tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-")
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker_entry, args=(child, {**self.cfg, "scratch": scratch}), daemon=True)
        proc.start()
        child.close()
        w = {"proc": proc, "conn": parent, "job": None, "ready": False, "scratch": scratch,
             "since": time.monotonic()}
        self.workers.append(w)
        return w

    def idle(self) -> list[dict]:
        return [w for w in self.workers if w["ready"] and w["job"] is None]

    def busy(self) -> int:
        return sum(1 for w in self.workers if w["job"] is not None)

    def send(self, w: dict, job: dict) -> None:
        w["job"] = job
        w["since"] = time.monotonic()
        w["conn"].send(job)

    def events(self, timeout: float = 1.0) -> list[tuple[dict, dict]]:
        """(job, message) pairs for finished jobs; crashed or hung workers give a 'crashed' message."""
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
                self._lost(w)
                if job is not None:
                    out.append((job, {"kind": "crashed", "why": "crashed"}))
                continue
            if msg["kind"] == "ready":
                w["ready"] = True
                self.failed_starts = 0
                continue
            job, w["job"] = w["job"], None
            out.append((job, msg))
            if msg.get("last"):  # it retires after this answer (--max-per-worker): start a fresh one
                self._replace(w)
        now = time.monotonic()
        for w in list(self.workers):  # silent too long (a stopped or deadlocked Blender): as if it crashed
            limit = self.timeout if w["job"] is not None else 0.0 if w["ready"] else self.start_timeout
            if limit and now - w["since"] > limit:
                job = w["job"]
                self._lost(w, kill=True)
                if job is not None:
                    out.append((job, {"kind": "crashed", "why": f"gave no answer in {limit:g} s"}))
        return out

    def _lost(self, w: dict, kill: bool = False) -> None:
        if not w["ready"]:
            self.failed_starts += 1
            if self.failed_starts >= 3:  # replacing it again would loop forever
                self._replace(w, kill=kill, restart=False)
                raise UserError(f"render workers fail to start (3 in a row); their output is in "
                                f"{Path(self.cfg['out']) / '.logs'}")
        self._replace(w, kill=kill)

    def _replace(self, w: dict, kill: bool = False, restart: bool = True) -> None:
        self.workers.remove(w)
        if kill:
            w["proc"].kill()  # SIGKILL ends a stopped process too
        w["proc"].join(timeout=5)
        if w["proc"].is_alive():
            w["proc"].kill()
            w["proc"].join(timeout=5)
        w["conn"].close()
        shutil.rmtree(w["scratch"], ignore_errors=True)
        if restart:
            self._start()

    def close(self, kill: bool = False) -> None:
        """Stop every worker: ask them to finish (or kill them at once), then remove their scratch."""
        for w in self.workers:
            if kill:
                w["proc"].kill()
                continue
            try:
                w["conn"].send(None)
            except (OSError, BrokenPipeError):
                pass
        for w in self.workers:
            w["proc"].join(timeout=10)
            if w["proc"].is_alive():
                w["proc"].kill()
                w["proc"].join(timeout=5)
            shutil.rmtree(w["scratch"], ignore_errors=True)
        self.workers = []


def _read_journal(out: Path) -> dict[str, dict]:
    """Entries by key, the last of a key winning; a line cut by a crash is ignored (its image
    is re-rendered), and so is an 'ok' entry whose image is gone."""
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


def _end_journal(path: Path) -> None:
    """Before appending: a last line cut by a kill or a full disk is ended when it holds a
    whole entry and cut off when not, so the next entry starts a line of its own (appended
    to a cut line, both would be lost)."""
    if not path.is_file():
        return
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        start, pos = 0, size
        while pos > 0:  # back to the last newline; entries can be long (many mention orders)
            step = min(1 << 16, pos)
            pos -= step
            f.seek(pos)
            i = f.read(step).rfind(b"\n")
            if i >= 0:
                start = pos + i + 1
                break
        f.seek(start)
        try:
            whole = isinstance(json.loads(f.read()), dict)
        except ValueError:
            whole = False
        if whole:
            f.seek(size)
            f.write(b"\n")
        else:
            f.truncate(start)
        f.flush()
        os.fsync(f.fileno())


def _settled(out: Path, entry: dict, masks: bool) -> bool:
    """Whether --resume may skip this entry: an image (and mask) that decodes, or a final failure.
    A worker that crashed or hung is no verdict on the scene: it is tried again."""
    if entry["status"] == "failed":
        return not (entry.get("transient") or entry.get("reason") == CRASHED_TWICE)
    rec = entry["record"]
    if image_problem(out / rec["image"], rec.get("resolution")):
        return False
    return not masks or image_problem(out / "masks" / Path(rec["image"]).name) is None


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
        _end_journal(out / JOURNAL)
        done = {k: e for k, e in _read_journal(out).items() if _settled(out, e, opts.masks)}
    else:
        done = {}
        (out / JOURNAL).unlink(missing_ok=True)

    shard_i, shard_n = opts.shard
    jobs = [("scene", i) for i in range(cfg.n) if i % shard_n == shard_i and f"scene:{i}" not in done]
    singles = planner.singles() if opts.singles and shard_i == 0 else []
    jobs += [("single", s) for s in singles if f"single:{s['id']}" not in done]
    total = len(jobs) + len(done)
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
        stats["crashes" if msg["why"] == "crashed" else "hung"] += 1
        if job["key"] not in crashed_once:
            crashed_once.add(job["key"])
            queue.append(job)
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
    transient = sum(1 for e in entries.values() if e["status"] == "failed" and not _settled(out, e, False))
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
