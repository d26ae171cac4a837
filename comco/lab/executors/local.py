"""`--executor local` (the default): stages side by side in worker processes of this machine.

Renders, captions and the report run in the driver's own process while no worker is
busy (a render brings its own bpy workers and uses every core); the other stages run
in a pool of `jobs` spawned workers, each with `threads` torch threads.
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from comco.lab.executors.base import Executor, Outcome, StageCall, run_call


class LocalExecutor(Executor):
    name = "local"
    inline_kinds = frozenset({"render", "captions", "report"})
    inline_waits_for_idle = True

    def __init__(self, jobs: int):
        self.jobs = jobs
        self._pool: ProcessPoolExecutor | None = None
        self._running: dict = {}  # future -> stage id

    def free(self) -> int:
        return self.jobs - len(self._running)

    def busy(self) -> int:
        return len(self._running)

    def start(self, calls: list[StageCall]) -> None:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=_mp_context(), initializer=_worker_init)
        for call in calls:
            self._running[self._pool.submit(run_call, call)] = call.id

    def wait(self) -> list[Outcome]:
        finished, _ = wait(list(self._running), return_when=FIRST_COMPLETED)
        out = []
        for fut in finished:
            sid = self._running.pop(fut)
            try:
                summary, seconds = fut.result()
            except BaseException as exc:  # noqa: BLE001 - the loop lets running stages finish, then re-raises
                out.append(Outcome(sid, error=exc))
                continue
            out.append(Outcome(sid, summary, seconds))
        return out

    def abort(self) -> None:
        # interrupted or failed: stop the stages in flight too (their folders stay unfinished)
        if self._pool is not None:
            for proc in list(getattr(self._pool, "_processes", {}).values()):
                proc.terminate()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _worker_init() -> None:
    """A stage worker ends when the lab process dies (Linux), instead of training on as an orphan."""
    import signal

    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _mp_context():
    import multiprocessing as mp

    # spawn: workers start clean (no inherited locks or threads); torch loads once per worker
    return mp.get_context("spawn")
