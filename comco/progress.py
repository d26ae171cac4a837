"""The one progress display for long work: a bar per job with its rate and ETA (rich),
hidden by --quiet. Planning, rendering, embedding, training and the lab all use it.

On a terminal it draws rich bars. Anywhere else (a log file, a pipe, a batch job's
output) a bar would be cut to the width rich assumes, so each job prints plain lines
instead: its name, done of total, the rate, elapsed and ETA and its note, at the start,
at most every LINE_SECONDS, and when it ends.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

LINE_SECONDS = 15.0  # a plain-line job prints at most this often (and at its start and end)


class Bar:
    """One job's bar. A silent one (quiet) takes the same calls and draws nothing."""

    def __init__(self, display=None, task=None, unit: str = ""):
        self._d, self._t, self._unit = display, task, unit

    def advance(self, n: int = 1) -> None:
        """Count `n` more items done."""
        if self._d is not None:
            self._d.advance(self._t, n)
            self._show_rate()

    def set(self, completed: int, note: str | None = None) -> None:
        """Set how many items are done (and the note after the bar)."""
        if self._d is not None:
            self._d.update(self._t, completed=completed, **({} if note is None else {"note": note}))
            self._show_rate()

    def note(self, text: str) -> None:
        """Text shown after the bar (a loss, the current stage)."""
        if self._d is not None:
            self._d.update(self._t, note=text)

    def _show_rate(self) -> None:
        speed = self._d.tasks[self._t].speed
        if speed:
            self._d.update(self._t, rate=f"{speed:,.1f} {self._unit}/s")


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-:--:--"
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class _Job:
    """What a plain-line job knows: rich's task fields, with the speed measured since its start."""

    def __init__(self, label: str, total: int, completed: int, unit: str, now: float):
        self.label, self.total, self.completed, self.unit = label, total, completed, unit
        self.note, self.started, self.first = "", now, completed
        self.printed, self.printed_at = None, None  # the (completed, note) last printed, and when

    @property
    def speed(self) -> float | None:
        # the rate goes into the line itself; Bar's "rate" field is ignored here
        return None

    def rate(self, now: float) -> float | None:
        dt = now - self.started
        return (self.completed - self.first) / dt if dt > 0 and self.completed > self.first else None

    def line(self, now: float) -> str:
        rate = self.rate(now)
        share = f" ({100 * self.completed / self.total:.0f} %)" if self.total else ""
        eta = (self.total - self.completed) / rate if rate and self.total else None
        parts = [f"{self.label}: {self.completed}/{self.total} {self.unit}{share}",
                 f"{rate:,.2f} {self.unit}/s" if rate else "", f"{_clock(now - self.started)} elapsed",
                 "" if eta is None or self.completed >= self.total else f"eta {_clock(eta)}", self.note]
        return ", ".join(p for p in parts if p)


class Lines:
    """rich Progress's calls (add_task, advance, update, tasks), written as plain lines."""

    def __init__(self, stream=None, every: float = LINE_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.stream, self.every, self.clock = stream, every, clock
        self.tasks: list[_Job] = []
        self._units: list[str] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for t in self.tasks:  # the last word on every job, where it stopped
            if t.printed != (t.completed, t.note):
                self._print(t)
        return False

    def add_task(self, label: str, total: int, completed: int = 0, unit: str = "items", **_fields) -> int:
        self.tasks.append(_Job(label, total, completed, unit, self.clock()))
        self._print(self.tasks[-1])
        return len(self.tasks) - 1

    def advance(self, task: int, n: int = 1) -> None:
        self.update(task, completed=self.tasks[task].completed + n)

    def update(self, task: int, completed: int | None = None, note: str | None = None, **_fields) -> None:
        t = self.tasks[task]
        if completed is not None:
            t.completed = completed
        if note is not None:
            t.note = note
        if completed is not None and (t.completed >= t.total or self.clock() - t.printed_at >= self.every):
            self._print(t)

    def _print(self, t: _Job) -> None:
        now = self.clock()
        stream = self.stream or sys.stdout
        stream.write(t.line(now) + "\n")
        stream.flush()
        t.printed, t.printed_at = (t.completed, t.note), now


def on_terminal() -> bool:
    """Whether rich would draw live bars here (a terminal or a notebook, or FORCE_TERMINAL)."""
    from rich.console import Console

    console = Console()
    return console.is_terminal or console.is_jupyter


def _display():
    if not on_terminal():
        return Lines()
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("eta"),
                    TimeRemainingColumn(), TextColumn("{task.fields[note]}"), transient=False)


def _add(display, label: str, total: int, unit: str, completed: int = 0):
    if isinstance(display, Lines):
        return display.add_task(label, total=total, completed=completed, unit=unit)
    return display.add_task(label, total=total, completed=completed, rate="", note="")


@contextmanager
def progress(total: int, label: str, unit: str = "images", quiet: bool = False, start: int = 0) -> Iterator[Bar]:
    """A bar for one job.

    Args:
        total: items the job will do.
        label: what the job is ("render", "train scratch").
        unit: what an item is, for the rate ("images", "scenes", "steps").
        quiet: draw nothing (--quiet).
        start: items already done (a resumed job).
    """
    if quiet:
        yield Bar()
        return
    with _display() as display:
        yield Bar(display, _add(display, label, total, unit, start), unit)


@contextmanager
def progress_group(
    quiet: bool = False, unit: str = "items"
) -> Iterator[Callable[[str, int], Callable[[int], None]] | None]:
    """One display for a run of several jobs (a probe's embedding passes): yields
    `start(label, total, unit=None) -> advance(n)`, or None when quiet."""
    if quiet:
        yield None
        return
    with _display() as display:

        def start(label: str, total: int, unit_of_job: str | None = None) -> Callable[[int], None]:
            return Bar(display, _add(display, label, total, unit_of_job or unit), unit_of_job or unit).advance

        yield start
