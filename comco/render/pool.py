"""The Blender worker pool: one process per worker (each imports bpy; this module never
does), each with its own scratch folder, replaced when it crashes, retires or goes silent."""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import tempfile
import time
from multiprocessing.connection import wait
from pathlib import Path

from comco.errors import UserError

SCRATCH_PREFIX = "comco-render-"  # + owner pid + "-": each worker's ID renders and Blender's temp files


class DiskFull(Exception):
    """A worker could not write an image: no space left on the device."""


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
        try:
            w["conn"].send(job)
        except OSError:  # it died since it said ready: events() sees its end and reports the job crashed
            pass

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
