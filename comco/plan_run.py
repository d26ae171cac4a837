"""`comco plan`: stream every scene record of a configuration to disk."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from comco.dataset import (INFO, SCENES, SINGLES, atomic_write, check_writable, dumps, make_info,
                           prepare_out, write_json, write_jsonl)
from comco.manifest import load_object_set
from comco.planner import PlanConfig, Planner
from comco.progress import progress

CHUNK = 4096
PARALLEL_FROM = 20000  # below this, starting processes costs more than it saves

_worker_planner: Planner | None = None


def _init_worker(cfg: PlanConfig) -> None:
    global _worker_planner
    _worker_planner = Planner(cfg, load_object_set(cfg.object_set))


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


def _plan_chunk(bounds: tuple[int, int]) -> tuple[bytes, Counter]:
    assert _worker_planner is not None
    lines, retries = [], Counter()
    with _no_cycle_collection():
        for rec in _worker_planner.records(*bounds):
            lines.append(dumps(rec))
            retries[rec["retry"]] += 1
    # Encoded here, in the worker: the writer only appends bytes.
    return ("\n".join(lines) + "\n").encode(), retries


def make_planner(cfg: PlanConfig) -> Planner:
    planner = Planner(cfg, load_object_set(cfg.object_set))
    # Try one scene of every count first: an impossible request fails before anything is written.
    for i in range(min(cfg.n, len(cfg.objects))):
        planner.plan(i)
    return planner


def dataset_info(planner: Planner, extra_counts: dict | None = None) -> dict:
    cfg = planner.cfg
    per_count = {str(k): sum(1 for i in range(cfg.n) if planner.count_for(i) == k) for k in cfg.objects}
    counts = {"images": cfg.n, "per_object_count": per_count, **(extra_counts or {})}
    return make_info(cfg.to_dict(), planner.set.name, planner.set.hash, counts)


def write_plan(planner: Planner, out: Path, *, quiet: bool = False, workers: int | None = None,
               singles: bool = False) -> dict:
    """Write scenes.jsonl (and singles), return counts. Identical for identical configs."""
    cfg = planner.cfg
    workers = workers or min(2, os.cpu_count() or 1)
    chunks = [(s, min(s + CHUNK, cfg.n)) for s in range(0, cfg.n, CHUNK)]
    retries: Counter = Counter()
    t0 = time.perf_counter()
    with progress(cfg.n, "plan", "scenes", quiet) as bar, atomic_write(out / SCENES, "wb") as f, \
            _no_cycle_collection():
        if workers > 1 and cfg.n >= PARALLEL_FROM:
            ctx = mp.get_context("fork")
            with ctx.Pool(workers, initializer=_init_worker, initargs=(cfg,)) as pool:
                # A bounded window of chunks in flight keeps memory flat whatever n is
                # (Pool.imap would queue every chunk's result if the writer fell behind).
                window = 2 * workers
                pending = [pool.apply_async(_plan_chunk, (c,)) for c in chunks[:window]]
                for k, (start, stop) in enumerate(chunks):
                    text, r = pending.pop(0).get()
                    if k + window < len(chunks):
                        pending.append(pool.apply_async(_plan_chunk, (chunks[k + window],)))
                    f.write(text)
                    retries.update(r)
                    bar.advance(stop - start)
        else:
            for rec in planner.records():
                f.write((dumps(rec) + "\n").encode())
                retries[rec["retry"]] += 1
                bar.advance()
    if singles:
        write_jsonl(out / SINGLES, planner.singles())
    return {"seconds": time.perf_counter() - t0,
            "replanned": sum(v for k, v in retries.items() if k > 0)}


def run_plan(cfg: PlanConfig, out: Path, *, overwrite: bool = False, resume: bool = False,
             quiet: bool = False, singles: bool = False, workers: int | None = None) -> dict:
    planner = make_planner(cfg)
    info = dataset_info(planner)
    state = prepare_out(out, info, overwrite=overwrite, resume=resume)
    check_writable(out)
    stats = write_plan(planner, out, quiet=quiet, workers=workers, singles=singles)
    info["counts"]["replanned"] = stats["replanned"]
    write_json(out / INFO, info)
    return {"state": state, **stats, "images": cfg.n}
