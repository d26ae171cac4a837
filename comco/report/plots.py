"""PNG figures with intervals, written atomically; matplotlib loads only here, headless."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

from comco.io import write_text


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend (never a window)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path: str | Path, dpi: int = 100, rect: tuple | None = None) -> Path:
    """Write the figure as PNG (atomically) and close it; `rect` (left, bottom, right, top, as figure
    fractions) keeps the axes inside it, leaving room for a figure legend."""
    buffer = io.BytesIO()
    fig.tight_layout(rect=rect)
    fig.savefig(buffer, format="png", dpi=dpi)
    pyplot().close(fig)
    return write_text(path, buffer.getvalue())


def error_bars(values: Sequence, lo: Sequence, hi: Sequence):
    """matplotlib's yerr (2 x n, non-negative) for values with interval bounds; NaN -> 0."""
    import numpy as np

    v, lo, hi = (np.asarray(a, dtype=float) for a in (values, lo, hi))
    return np.nan_to_num(np.vstack([v - lo, hi - v]), nan=0.0).clip(min=0)


def interval_bars(ax, groups: Sequence[str], series: dict[str, Sequence[tuple]], *, scale: float = 100.0,
                  hatch_published: bool = False) -> None:
    """Bars with interval whiskers: one group per entry of `groups`, one bar per series.

    Args:
        ax: the matplotlib axes to draw on.
        groups: the x-axis groups.
        series: label -> one (value, lo, hi) per group (None entries draw nothing).
        scale: multiply every number (100 for shares shown as %).
        hatch_published: draw series whose label ends in "(published)" hatched and lighter.
    """
    import numpy as np

    x = np.arange(len(groups))
    width = 0.8 / max(1, len(series))
    for j, (label, stats) in enumerate(series.items()):
        v, lo, hi = ([np.nan if s is None or s[k] is None else scale * s[k] for s in stats] for k in range(3))
        published = hatch_published and label.endswith("(published)")
        ax.bar(x + (j - (len(series) - 1) / 2) * width, v, width, yerr=error_bars(v, lo, hi), capsize=3, label=label,
               hatch="//" if published else None, alpha=0.6 if published else 1.0)
