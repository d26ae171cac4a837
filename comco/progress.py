"""The one progress display for long work: a bar per job with its rate and ETA (rich),
hidden by --quiet. Planning, rendering, embedding, training and the lab all use it."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator


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


def _display():
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
        task = display.add_task(label, total=total, completed=start, rate="", note="")
        yield Bar(display, task, unit)


@contextmanager
def progress_group(
    quiet: bool = False, unit: str = "items"
) -> Iterator[Callable[[str, int], Callable[[int], None]] | None]:
    """One display for a run of several jobs (a probe's embedding passes): yields
    `start(label, total) -> advance(n)`, or None when quiet."""
    if quiet:
        yield None
        return
    with _display() as display:

        def start(label: str, total: int) -> Callable[[int], None]:
            return Bar(display, display.add_task(label, total=total, rate="", note=""), unit).advance

        yield start
