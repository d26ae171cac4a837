"""One progress bar for long work: rate and ETA, hidden by --quiet."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


class _Silent:
    def advance(self, n: int = 1) -> None:
        pass

    def note(self, text: str) -> None:
        pass


class _Bar:
    def __init__(self, progress, task):
        self._p, self._t = progress, task

    def advance(self, n: int = 1) -> None:
        self._p.advance(self._t, n)

    def note(self, text: str) -> None:
        self._p.update(self._t, note=text)


@contextmanager
def progress(total: int, label: str, unit: str = "images", quiet: bool = False) -> Iterator[_Silent | _Bar]:
    if quiet:
        yield _Silent()
        return
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    columns = [TextColumn(f"{label}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("eta"),
               TimeRemainingColumn(), TextColumn("{task.fields[note]}")]
    with Progress(*columns, transient=False) as p:
        task = p.add_task(label, total=total, rate="", note="")

        class Bar(_Bar):
            def advance(self, n: int = 1) -> None:
                p.advance(task, n)
                speed = p.tasks[0].speed
                if speed:
                    p.update(task, rate=f"{speed:,.1f} {unit}/s")

        yield Bar(p, task)
