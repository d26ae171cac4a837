"""A stand-in for comco.render.pool.WorkerPool, without Blender: the test decides which job
answers next and how (measured as passing, failing its checks, crashed, hung), so the orders
a loaded machine produces by chance are played deterministically.

`FakePool.script(pool, in_flight)` picks the (worker, answer) to deliver next; answers are
"ok", "small" (an object under --min-pixels: fails its checks), "crashed" and "hung"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def measured(record: dict, small: bool) -> dict:
    """The record with measurements that pass the render checks, or (small) that fail them."""
    rec = {**record, "objects": [dict(o) for o in record["objects"]]}
    n = len(rec["objects"])
    for o in rec["objects"]:
        pixels = 1000 - 100 * o["size_rank"]
        o["measured"] = {"pixels": pixels, "fraction": pixels / 4096, "bbox": [0, 0, 8, 8],
                         "visible_fraction": 1.0}
    if small:  # the smallest object all but vanished: fewer pixels than --min-pixels
        smallest = max(range(n), key=lambda i: rec["objects"][i]["size_rank"])
        rec["objects"][smallest]["measured"]["pixels"] = 1
    return rec


def write_image(out: Path, record: dict, mask: bool) -> None:
    """What a worker leaves on disk: the image (and its mask), tiny but readable."""
    w, h = record["resolution"]
    path = Path(out) / record["image"]
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((h, w, 3), 128, np.uint8)).save(path)
    if mask:
        (Path(out) / "masks").mkdir(exist_ok=True)
        Image.fromarray(np.zeros((h, w), np.uint8)).save(Path(out) / "masks" / path.name)


class FakePool:
    """WorkerPool's interface (idle, busy, send, events, close) over a scripted order of answers."""

    script = None  # set by the test: (pool, in_flight workers in send order) -> (worker, answer)
    made: list = []  # every pool made, for the test to read `sent` and `answered`

    def __init__(self, n: int, cfg: dict, timeout: float = 0.0):
        self.out = Path(cfg["out"])
        self.workers = [{"job": None, "id": k} for k in range(n)]
        self.sent: list[str] = []  # job keys in send order (with their attempt: KEY@RETRY)
        self.answered: list[tuple[str, str]] = []
        self.log: list[tuple[str, str]] = []  # ("send" | "answer", KEY@RETRY) in the order they happened
        self.clock = 0
        FakePool.made.append(self)

    def idle(self) -> list[dict]:
        return [w for w in self.workers if w["job"] is None]

    def busy(self) -> int:
        return sum(1 for w in self.workers if w["job"] is not None)

    def send(self, w: dict, job: dict) -> None:
        assert w["job"] is None, "a job was sent to a busy worker"
        self.clock += 1
        w["job"], w["at"] = job, self.clock
        self.sent.append(f"{job['key']}@{job['record'].get('retry', 0)}")
        self.log.append(("send", self.sent[-1]))

    def events(self, timeout: float = 1.0) -> list[tuple[dict, dict]]:
        flying = sorted((w for w in self.workers if w["job"] is not None), key=lambda w: w["at"])
        if not flying:
            return []
        w, answer = type(self).script(self, flying)
        job, w["job"] = w["job"], None
        self.answered.append((f"{job['key']}@{job['record'].get('retry', 0)}", answer))
        self.log.append(("answer", self.answered[-1][0]))
        if answer in ("crashed", "hung"):  # the pool replaces the worker: a fresh one, idle
            why = "crashed" if answer == "crashed" else f"gave no answer in {timeout:g} s"
            return [(job, {"kind": "crashed", "why": why})]
        rec = job["record"]
        if job["kind"] == "scene":
            rec = measured(rec, answer == "small")
        write_image(self.out, rec, job.get("mask", False))
        return [(job, {"kind": "done", "record": rec, "rss_mb": 1.0, "served": 1})]

    def close(self, kill: bool = False) -> None:
        self.workers = []
