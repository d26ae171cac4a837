"""The lab report's figures: a sample of the renders, dose-response and bar plots, and
the findings figure (the two biases against p, with the untrained priors)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from comco.lab.report.stats import thin
from comco.report import error_bars, interval_bars, legend_beside, legend_entry, pyplot, save

DPI = 100  # the report's figures are drawn at their size at 100 % zoom
PAGE_IN = 10.0  # the page is 1000 px wide: a wider figure would be shrunk, and its letters with it
TITLE_PT, TICK_PT = 10, 8


def sample_grid(path: Path, train_root: Path, variants: dict[float, Path], k: int = 8) -> Path | None:
    """Rendered training images, each with its first caption at the lowest and highest p."""
    from PIL import Image

    scenes = train_root / "scenes.jsonl"
    if not scenes.is_file():
        return None
    recs = [json.loads(line) for line in scenes.read_text(encoding="utf-8").splitlines() if line.strip()]
    picks = [r for r in recs if len(r["objects"]) >= 3][:k] or recs[:k]
    ps = sorted(variants)
    caps = {}
    for p in (ps[0], ps[-1]) if ps else ():
        f = variants[p] / "scenes.jsonl"
        if f.is_file():
            by_id = {json.loads(line)["id"]: json.loads(line)
                     for line in f.read_text(encoding="utf-8").splitlines() if line}
            caps[p] = {i: by_id[i]["captions"].get("and", [""])[0] for i in by_id}
    plt = pyplot()
    cols = min(4, len(picks))
    rows = math.ceil(len(picks) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(PAGE_IN / 4 * cols, 3.7 * rows), squeeze=False)  # 5 title lines
    for ax in axes.flat:
        ax.axis("off")
    for ax, r in zip(axes.flat, picks):
        with Image.open(train_root / r["image"]) as im:
            ax.imshow(np.asarray(im.convert("RGB")), interpolation="nearest")
        large = next(o["name"] for o in r["objects"] if o["size_rank"] == 0)
        lines = [f"#{r['id']} largest: {large}"] + [f"p={p:g}: {caps[p].get(r['id'], '')}" for p in caps]
        ax.set_title("\n".join(_wrap(x, 30) for x in lines), fontsize=TICK_PT, loc="left")
    return save(fig, path, dpi=DPI)


def _wrap(text: str, n: int) -> str:
    words, lines, cur = text.split(), [], ""
    for w in words:
        if len(cur) + len(w) + 1 > n and cur:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    lines.append(cur)
    return "\n".join(lines)


def _points(stats: list[dict]) -> tuple[list[float], list[float], list[float]]:
    """Mean, low and high of each summary in %, NaN (no point drawn) where there is none or where
    the report's text calls it too few to read (thin): a figure never shows what its text withholds."""
    cols = ([], [], [])
    for s in stats:
        for col, k in zip(cols, ("mean", "lo", "hi")):
            col.append(np.nan if s.get(k) is None or thin(s) is not None else 100 * s[k])
    return cols


def dose_plot(path: Path, title: str, ps: list[float], series: dict[str, list[dict]], chance: float | None,
              ylabel: str) -> Path:
    return save(draw_dose(title, ps, series, chance, ylabel), path, dpi=DPI)


def draw_dose(title: str, ps: list[float], series: dict[str, list[dict]], chance: float | None, ylabel: str):
    """A line per series against p, whiskers for the intervals, the legend beside the panel."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    for j, (label, stats) in enumerate(series.items()):
        y, lo, hi = _points(stats)
        ax.errorbar(np.array(ps) + 0.006 * (j - len(series) / 2), y, yerr=error_bars(y, lo, hi), marker="o",
                    capsize=3, label=label)
    if chance is not None:
        ax.axhline(100 * chance, color="k", linestyle="--", linewidth=1, label="chance (uniform)")
    ax.set_xlabel("order bias p of the training captions\n(P[largest object named first])")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=TITLE_PT)
    legend_beside(ax)
    return fig


def bar_plot(path: Path, title: str, groups: list[str], series: dict[str, list[dict]], ylabel: str,
             chance: float | None = None) -> Path:
    return save(draw_bars(title, groups, series, ylabel, chance), path, dpi=DPI)


def draw_bars(title: str, groups: list[str], series: dict[str, list[dict]], ylabel: str,
              chance: float | None = None):
    """Bars with interval whiskers per group, the legend beside the panel."""
    plt = pyplot()
    width = min(PAGE_IN, max(5.0, 1.1 * len(groups) * max(1, len(series)) ** 0.5 + 1.5) + 2.2)
    fig, ax = plt.subplots(figsize=(width, 3.8))
    x = np.arange(len(groups))
    interval_bars(ax, groups, {label: [None if thin(s) else (s["mean"], s.get("lo"), s.get("hi")) for s in stats]
                               for label, stats in series.items()})
    if chance is not None:
        ax.axhline(100 * chance, color="k", linestyle="--", linewidth=1, label="chance")
    ax.set_xticks(x, [_wrap(g, 22) for g in groups], fontsize=TICK_PT)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=TITLE_PT)
    legend_beside(ax)
    return fig


def findings_plot(path: Path, title: str, ps: list[float], panels: dict[str, dict[str, list[dict]]],
                  priors: dict[str, dict[str, dict]], chances: dict[str, dict[str, float]]) -> Path:
    return save(draw_findings(title, ps, panels, priors, chances), path, dpi=DPI)


def draw_findings(title: str, ps: list[float], panels: dict[str, dict[str, list[dict]]],
                  priors: dict[str, dict[str, dict]], chances: dict[str, dict[str, float]]):
    """One panel per bias (TOR first-mention share, IOR largest-object share), a line per
    object count against p, the untrained prior of each count at the left (x = "untrained");
    one legend beside the last panel (the counts, the prior's marker, chance's line)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(min(PAGE_IN, 3.9 * len(panels) + 2.0), 3.8), squeeze=False)
    span = (max(ps) - min(ps)) or 1.0
    x_prior = min(ps) - 0.25 * span
    handles: dict = {}
    for ax, (name, series) in zip(axes[0], panels.items()):
        for j, (label, stats) in enumerate(series.items()):
            colour = f"C{j}"  # the same count has the same colour in every panel (one legend serves both)
            y, lo, hi = _points(stats)
            shift = 0.01 * span * (j - len(series) / 2)
            line = ax.errorbar(np.array(ps) + shift, y, yerr=error_bars(y, lo, hi), marker="o", capsize=3,
                               color=colour, label=label)
            handles.setdefault(label, line)
            prior = priors.get(name, {}).get(label)
            if prior and prior.get("mean") is not None and thin(prior) is None:
                py, plo, phi = ([np.nan if prior.get(k) is None else 100 * prior[k]] for k in ("mean", "lo", "hi"))
                ax.errorbar([x_prior + shift], py, yerr=error_bars(py, plo, phi), marker="s", mfc="white",
                            color=colour, capsize=3)
            chance = chances.get(name, {}).get(label)
            if chance is not None:
                ax.axhline(100 * chance, color=colour, linestyle=":", linewidth=1)
        ax.set_xticks([x_prior] + list(ps), ["untrained"] + [f"{p:g}" for p in ps])
        ax.set_xlabel("order bias p of the training captions")
        ax.set_ylabel("share of top-1 hits (%)")
        ax.set_title(name, fontsize=TITLE_PT)
    handles["untrained architecture"] = legend_entry(marker="s", mfc="white", color="grey", linestyle="none")
    handles["chance (1 / objects)"] = legend_entry(color="grey", linestyle=":", linewidth=1)
    legend_beside(axes[0][-1], list(handles.values()), list(handles))
    fig.suptitle(title, fontsize=TITLE_PT + 1)
    return fig


def forest_plot(path: Path, title: str, rows: list[str], panels: dict[str, list[dict]]) -> Path:
    return save(draw_forest(title, rows, panels), path, dpi=DPI)


def draw_forest(title: str, rows: list[str], panels: dict[str, list[dict]]):
    """Paired changes with their intervals, one row per comparison and one panel per figure,
    zero marked: a change is read where its whisker does not cross the line."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(PAGE_IN, 0.9 + 0.32 * len(rows)), sharey=True, squeeze=False)
    y = np.arange(len(rows))[::-1]
    for ax, (name, stats) in zip(axes[0], panels.items()):
        v, lo, hi = _points(stats)
        ax.errorbar(v, y, xerr=error_bars(v, lo, hi), fmt="o", color="C0", capsize=3)
        ax.axvline(0, color="k", linewidth=1)
        ax.set_title(name, fontsize=TITLE_PT)
        ax.set_xlabel("fix - plain, paired by seed (points)", fontsize=TICK_PT)
        ax.tick_params(labelsize=TICK_PT)
    axes[0][0].set_yticks(y, [_wrap(r, 34) for r in rows], fontsize=TICK_PT)
    fig.suptitle(title, fontsize=TITLE_PT + 1)
    return fig
