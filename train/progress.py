"""A rich progress bar with the loss and samples per second; silent when disabled."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, \
    TimeElapsedColumn, TimeRemainingColumn


class Progress:
    def __init__(self, label: str, total: int, start: int = 0, enabled: bool = True):
        self.enabled = enabled
        self._bar = None
        if enabled:
            self._bar = RichProgress(
                TextColumn(f"train {label}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("loss {task.fields[loss]}"), TextColumn("{task.fields[rate]} samples/s"),
                TimeElapsedColumn(), TimeRemainingColumn(), transient=False)
            self._task = self._bar.add_task(label, total=total, completed=start, loss="-", rate="-")

    def __enter__(self) -> "Progress":
        if self._bar is not None:
            self._bar.start()
        return self

    def update(self, step: int, loss: float, rate: float) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=step, loss=f"{loss:.4f}", rate=f"{rate:.1f}")

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()
