"""PNG figures with intervals, written atomically; matplotlib loads only here, headless."""

from __future__ import annotations

import io
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence

from comco.io import write_text


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend (never a window)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


_checked: list | None = None  # (path, layout problems) of every figure saved inside checking_layout()


@contextmanager
def checking_layout():
    """Inside this, every figure `save` writes is first checked by layout_problems; yields the list
    of (path, problems) it fills, so a page's figures can be checked as the page drew them."""
    global _checked
    outer, _checked = _checked, []
    try:
        yield _checked
    finally:
        _checked = outer


def save(fig, path: str | Path, dpi: int = 100, rect: tuple | None = None) -> Path:
    """Write the figure as PNG (atomically) and close it; `rect` (left, bottom, right, top, as figure
    fractions) keeps the axes inside it, leaving room for a figure legend."""
    if _checked is not None:
        _checked.append((Path(path), layout_problems(fig, dpi, rect)))
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


MIN_TEXT_PX = 10  # a legend's or title's letters at 100 % zoom: smaller is hard to read
LEGEND_PT = 8  # 11 px letters at 100 dpi, 12 px at 110: above MIN_TEXT_PX


def legend_entry(**style):
    """A legend handle for marks drawn without a label of their own (a marker or a line style)."""
    from matplotlib.lines import Line2D

    return Line2D([], [], **style)


def legend_beside(ax, handles=None, labels=None, fontsize: float = LEGEND_PT):
    """The panel's legend to its right, outside the data (never over a bar or a line), its
    letters readable at 100 % zoom; `save`'s tight layout makes room for it."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    return ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                     fontsize=fontsize, frameon=False)


def layout_problems(fig, dpi: int, rect: tuple | None = None) -> list[str]:
    """What a reader would stumble on in a figure, laid out as `save` lays it out: the figure's
    title, legends (the figure's and the panels') and panel titles that overlap one another or a
    panel, text drawn past the figure's edge (titles, legends, axis labels, tick labels), a panel's
    marks outside it, and legend or title letters under MIN_TEXT_PX."""
    fig.set_dpi(dpi)
    fig.tight_layout(rect=rect)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    named = []
    if fig._suptitle is not None and fig._suptitle.get_text():
        named.append(("figure title", fig._suptitle, fig._suptitle.get_fontsize()))
    for k, legend in enumerate(fig.legends):
        size = min((t.get_fontsize() for t in legend.get_texts()), default=MIN_TEXT_PX)
        named.append((f"legend {k + 1}", legend, size))
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    for i, ax in enumerate(panels):
        if ax.get_title():
            named.append((f"panel {i + 1} title '{ax.get_title()}'", ax.title, ax.title.get_fontsize()))
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():  # a legend inside a panel covers its data
            size = min((t.get_fontsize() for t in legend.get_texts()), default=MIN_TEXT_PX)
            named.append((f"legend of panel {i + 1}", legend, size))
    boxes = [(name, artist.get_window_extent(renderer), size) for name, artist, size in named]
    problems = [f"{name}: {size * dpi / 72:.1f} px letters (under {MIN_TEXT_PX})" for name, _, size in boxes
                if not name.startswith("panel") and size * dpi / 72 < MIN_TEXT_PX]
    for i, (a, box_a, _) in enumerate(boxes):
        for b, box_b, _ in boxes[i + 1:]:
            if box_a.overlaps(box_b):
                problems.append(f"{a} overlaps {b}")
        for j, ax in enumerate(panels):
            if not a.startswith("panel") and box_a.overlaps(ax.get_window_extent(renderer)):
                problems.append(f"{a} overlaps panel {j + 1}")
    width, height = fig.bbox.width, fig.bbox.height
    for name, box, _ in boxes:
        if box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1:
            problems.append(f"{name} is cut by the figure's edge")
    for j, ax in enumerate(panels):
        inside = ax.get_window_extent(renderer)
        for mark in ax.texts:  # marks drawn in a panel ("n/a") belong inside it
            box = mark.get_window_extent(renderer)
            if mark.get_text() and (box.x0 < inside.x0 - 1 or box.x1 > inside.x1 + 1):
                problems.append(f"panel {j + 1}'s mark '{mark.get_text()}' lies outside the panel")
        for label in (ax.xaxis.label, ax.yaxis.label):
            box = label.get_window_extent(renderer)
            if label.get_text() and (box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1):
                problems.append(f"panel {j + 1}'s axis label '{label.get_text()}' is cut by the figure's edge")
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        ticks = [t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1] + \
            [t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]  # the ones drawn
        for tick in ticks:
            box = tick.get_window_extent(renderer)
            if tick.get_visible() and tick.get_text() and \
                    (box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1):
                problems.append(f"panel {j + 1}'s tick label '{tick.get_text()}' is cut by the figure's edge")
    return problems
