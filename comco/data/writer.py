"""`comco plan`: stream every scene record of a configuration to disk."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import queue
import time
import traceback
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from comco.data.folder import INFO, SCENES, SINGLES, check_writable, make_info, prepare_out
from comco.errors import UserError
from comco.io import atomic_write, dumps, write_json, write_jsonl
from comco.manifest import load_object_set
from comco.plan import PlanConfig, Planner, outputs_info
from comco.progress import progress

CHUNK = 4096
PARALLEL_FROM = 20000  # below this, starting processes costs more than it saves

@contextmanager
def _no_cycle_collection():
    """Planning makes millions of small dicts and lists and no reference cycles; the
    cycle collector would only walk them again and again (about 10 % of the time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _chunk_text(records, count: int) -> tuple[bytes, Counter]:
    """The next `count` records as JSON lines (encoded here, in the worker), and their retries."""
    lines, retries = [], Counter()
    for _ in range(count):
        rec = next(records)
        lines.append(dumps(rec))
        if rec.get("pair", {}).get("factor", "base") == "base":  # a pair group's retry counts once
            retries[rec["retry"]] += 1
    return ("\n".join(lines) + "\n").encode(), retries


def _plan_worker(cfg: PlanConfig, chunks: list[tuple[int, int]], out: mp.Queue) -> None:
    """Plan these chunks as one stream and send each one's text in order.

    One stream, not one per chunk: a chunk's last scenes retry in small batches,
    and a stream fills those batches with the next chunk's scenes instead.
    """
    try:
        with _no_cycle_collection():
            planner = Planner(cfg, load_object_set(cfg.object_set))
            records = planner.records_for(i for start, stop in chunks for i in range(start, stop))
            for start, stop in chunks:
                out.put(("chunk",) + _chunk_text(records, (stop - start) * (1 + len(cfg.pairs))))
    except UserError as exc:
        out.put(("user error", str(exc), None))
    except BaseException:  # an internal error keeps its traceback for the parent to show
        out.put(("crash", traceback.format_exc(), None))


def _receive(q: mp.Queue, proc) -> tuple[bytes, Counter]:
    while True:
        try:
            kind, text, retries = q.get(timeout=1.0)
        except queue.Empty:
            if not proc.is_alive():
                raise RuntimeError(f"a planning worker died (exit code {proc.exitcode})") from None
            continue
        if kind == "user error":
            raise UserError(text)
        if kind == "crash":
            raise RuntimeError(f"a planning worker failed:\n{text}")
        return text, retries


def make_planner(cfg: PlanConfig) -> Planner:
    """A Planner for `cfg`, checked up front (one scene of every count is planned first, so
    an impossible request fails before anything is written).

    Args:
        cfg: the plan configuration."""
    planner = Planner(cfg, load_object_set(cfg.object_set))
    planner.check_large_fraction()
    # Try one scene of every count first: an impossible request fails before anything is written.
    for i in range(min(cfg.n, len(cfg.objects))):
        planner.plan(i)
    return planner


def dataset_info(planner: Planner, extra_counts: dict | None = None) -> dict:
    """dataset.json for a planner's configuration.

    Args:
        planner: the planner (its config and object set).
        extra_counts: counts to add (rendered, failed, singles)."""
    cfg = planner.cfg
    per_count = {str(k): sum(1 for i in range(cfg.n) if planner.count_for(i) == k) for k in cfg.objects}
    counts = {"images": cfg.n, "per_object_count": per_count, **(extra_counts or {})}
    if cfg.pairs:  # every scene is a base image plus one variant image per factor
        counts = {**counts, "images": cfg.n * (1 + len(cfg.pairs)), "scenes": cfg.n}
    info = make_info(cfg.to_dict(), planner.set.name, planner.set.hash, counts)
    if planner.holdout is not None:  # the split, resolved (`comco validate` checks the records against it)
        info["holdout"] = planner.holdout.to_info()
    outputs = outputs_info(cfg)
    if outputs:  # only with --depth / --normals / --relations: other datasets keep today's dataset.json
        info["outputs"] = outputs
    return info


def write_plan(planner: Planner, out: Path, *, quiet: bool = False, workers: int | None = None,
               singles: bool = False) -> dict:
    """Write scenes.jsonl (and singles), return counts. Identical for identical configs."""
    cfg = planner.cfg
    workers = workers or min(2, os.cpu_count() or 1)
    chunks = [(s, min(s + CHUNK, cfg.n)) for s in range(0, cfg.n, CHUNK)]
    retries: Counter = Counter()
    t0 = time.perf_counter()
    images = cfg.n * (1 + len(cfg.pairs))
    with progress(images, "plan", "scenes", quiet) as bar, atomic_write(out / SCENES, "wb") as f, \
            _no_cycle_collection():
        if workers > 1 and cfg.n >= PARALLEL_FROM:
            # Chunk k is planned by worker k % workers; each sends its chunks in order
            # through a short queue (memory stays flat however large n is).
            ctx = mp.get_context("fork")
            queues = [ctx.Queue(maxsize=2) for _ in range(workers)]
            procs = [ctx.Process(target=_plan_worker, args=(cfg, chunks[w::workers], queues[w]), daemon=True)
                     for w in range(workers)]
            for p in procs:
                p.start()
            try:
                for k, (start, stop) in enumerate(chunks):
                    text, r = _receive(queues[k % workers], procs[k % workers])
                    f.write(text)
                    retries.update(r)
                    bar.advance((stop - start) * (1 + len(cfg.pairs)))
            finally:
                for p in procs:
                    if p.is_alive():
                        p.terminate()
                    p.join()
        else:
            for rec in planner.records():
                f.write((dumps(rec) + "\n").encode())
                if rec.get("pair", {}).get("factor", "base") == "base":
                    retries[rec["retry"]] += 1
                bar.advance()
    if singles:
        write_jsonl(out / SINGLES, planner.singles())
    return {"seconds": time.perf_counter() - t0,
            "replanned": sum(v for k, v in retries.items() if k > 0)}


def run_plan(cfg: PlanConfig, out: Path, *, overwrite: bool = False, resume: bool = False,
             quiet: bool = False, singles: bool = False, workers: int | None = None) -> dict:
    """`comco plan`: write every scene record of a configuration into a dataset folder.

    Args:
        cfg: the plan configuration.
        out: the dataset folder.
        overwrite: replace a dataset of another configuration; resume: continue the same one.
        quiet: no progress display.
        singles: also write the single-object reference records (singles/singles.jsonl).
        workers: planning processes (default: by size, one below 20,000 scenes).
    Returns a summary (counts, seconds, re-plans)."""
    planner = make_planner(cfg)
    info = dataset_info(planner)
    state = prepare_out(out, info, overwrite=overwrite, resume=resume)
    check_writable(out)
    stats = write_plan(planner, out, quiet=quiet, workers=workers, singles=singles)
    info["counts"]["replanned"] = stats["replanned"]
    write_json(out / INFO, info)
    return {"state": state, **stats, "images": info["counts"]["images"]}
