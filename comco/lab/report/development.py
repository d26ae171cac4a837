"""Bias development (issue 26, ComCO Fig. 4c): every gated scratch model probed at the
snapshots its training saved (comco.probes.development), the untrained point first.

Curves per p: the TOR first mention's share of the hits, the IOR largest object's share
of the hits (the dose-response tables' figures; ComCO's conditional IOR share is kept in
results.json but is undefined until some image has exactly its objects on top),
presence TOR / IOR and set R@1 against the training step, one line per variant, a band
for the 95 % t-interval across seeds. Two questions: which bias appears first (each
seed's half-rise step: the first snapshot where a figure has made half of its change from
the untrained model to the last snapshot), and whether the text side moves at all at the
lowest p (the last snapshot against the untrained one, paired by seed, and its largest
excursion).
"""

from __future__ import annotations

import math

import numpy as np

from comco.lab.keys import probe_key, scratch_key
from comco.lab.report.context import SetContext
from comco.lab.report.origins import BASELINE, describe, text_only, variants
from comco.lab.report.stats import pct, signed, summarize
from comco.lab.report.verdict import CANNOT, Judgement, judge_paired

STEPS_WIDE = 1e9  # step differences: width never makes a verdict "too wide" (the wording rule is for shares)


def figures_of(n: int) -> dict[str, str]:
    """panel title -> the development point's figure name (comco.probes.development)."""
    return {f"TOR: first mention's share of hits, {n} obj.": f"TOR first of hits, {n} objects",
            f"IOR: largest object's share of hits, {n} obj.": f"IOR largest of hits, {n} objects",
            "presence TOR": "presence TOR", "presence IOR": "presence IOR", "set R@1": "set R@1"}


IMAGE_FIGURES = ("IOR largest", "presence IOR", "set R@1")  # not read from a text tower trained alone


def curves(c: SetContext, name: str | None, p: float, passing: set) -> dict[int, list[dict]]:
    """seed -> the development points of one gated model (absent: failed its gates or saved none)."""
    out = {}
    for seed in c.seeds:
        key = probe_key(scratch_key(c.oset, p, seed, name))
        if key in passing and c.run.has(key):
            points = c.run.results(key).get("development")
            if points:
                out[seed] = points
    return out


def band(points_by_seed: dict[int, list[dict]], figure: str) -> tuple[list[int], list[dict]]:
    """(steps, the across-seed summary at each step) of one figure."""
    steps = sorted({pt["step"] for pts in points_by_seed.values() for pt in pts})
    out = []
    for step in steps:
        vals = [next((pt.get(figure) for pt in pts if pt["step"] == step), None) for pts in points_by_seed.values()]
        out.append(summarize([None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in vals]))
    return steps, out


def _series(points_by_seed: dict, figure: str) -> dict:
    steps, stats = band(points_by_seed, figure)
    return {"steps": steps, "stats": stats}


def half_rise_step(points: list[dict], figure: str) -> int | None:
    """The first step where the figure has made half its change from step 0 to the last
    snapshot (None when it does not rise)."""
    vals = [(pt["step"], pt.get(figure)) for pt in points]
    vals = [(s, v) for s, v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if len(vals) < 2 or vals[0][0] != 0:
        return None
    v0, v_end = vals[0][1], vals[-1][1]
    if v_end <= v0:
        return None
    return next(s for s, v in vals if v - v0 >= 0.5 * (v_end - v0))


def development_sections(c: SetContext, passing: set, counts: list[int]) -> dict:
    if not c.s["probe"].get("development") or not counts:
        return {}
    names = [BASELINE] + [v["name"] for v in variants(c)]
    n = counts[-1]
    data = {(name, p): curves(c, name, p, passing) for name in names for p in c.ps}
    if not any(data.values()):
        return {}
    c.h(3, "Bias development along training")
    spacing = c.s["scratch"].get("checkpoint_spacing", "even")
    spread = ("spaced geometrically from a hundredth of the run to its end, so most fall early"
              if spacing == "log" else "spread evenly over its training")
    c.doc.p(f"Every gated scratch model saved its untrained weights and snapshots {spread} "
            f"(scratch.checkpoints = {c.s['scratch'].get('checkpoints', 0)}, checkpoint_spacing = \"{spacing}\"); "
            "each was probed on the held-out "
            "order-balanced test set (point estimates; the band is the 95 % t-interval across the seeds that passed "
            "their gates at the end). The first point of every curve is the untrained model. Both shares are the "
            "dose-response tables' (the first mention's, the largest object's share of the queries whose top-1 is "
            "one of their own objects): ComCO's conditional IOR share (among images whose top-n single renders are "
            "exactly their n objects) is kept in results.json, but it is undefined until some image has exactly its "
            "objects on top and rests on a handful of images after, too few to date a rise. A model trained on the "
            "captions alone has no image figures.")
    numbers: dict = {"figures": {}, "questions": {}}
    for p in c.ps:
        path = _plot(c, names, data, p, n)
        if path:
            c.doc.img(path, f"development at p = {p:g}")
        numbers["figures"][f"{p:g}"] = {
            describe(c, name): {fig: _series(data[name, p], fig) for fig in figures_of(n).values()}
            for name in names if data[name, p]}
    numbers["questions"] = _questions(c, data, n)
    return numbers


def _questions(c: SetContext, data: dict, n: int) -> dict:
    out = {}
    tor, ior = f"TOR first of hits, {n} objects", f"IOR largest of hits, {n} objects"
    p_hi, p_lo = c.ps[-1], c.ps[0]
    base = data[BASELINE, p_hi]
    rows = []
    onsets = {}
    for p in c.ps:
        for fig in (tor, ior):
            steps = [half_rise_step(data[BASELINE, p].get(s, []), fig) if s in data[BASELINE, p] else None
                     for s in c.seeds]
            onsets[p, fig] = steps
            rows.append([f"{p:g}", fig, ", ".join("–" if s is None else str(s) for s in steps)])
    c.doc.p("Each seed's half-rise step (the first snapshot where the figure has made half of its change from the "
            "untrained model to the last snapshot; – where it does not rise), baseline models:")
    c.doc.table(["p", "figure", "half-rise step per seed"], rows)
    if base:
        a = [None if s is None else float(s) for s in onsets[p_hi, tor]]
        b = [None if s is None else float(s) for s in onsets[p_hi, ior]]
        j = judge_paired(a, b, c.seeds, need=c.need, wide=STEPS_WIDE, bounds=None)  # steps, not shares
        dated = sum(x is not None and y is not None for x, y in zip(a, b))
        if dated < c.need:  # say why: a model that passed but whose figure never rose has no step
            gated = sum(s in base for s in c.seeds)
            j = Judgement(CANNOT, j.way, j.estimate, f"{dated} of {gated} gated seed(s) have a half-rise step for "
                          f"both figures, fewer than {c.need} (a figure that does not rise has none)")
        c.find(f"At p = {p_hi:g}, does the image side's size bias appear before the text side's first-mention bias "
               f"(TOR half-rise step - IOR half-rise step, paired by seed, {n} objects)?",
               signed(_scaled(j.estimate), " steps"), j)
        out["IOR rises before TOR"] = j.to_dict()
    for name in [BASELINE] + [v["name"] for v in variants(c)]:
        pts = data.get((name, p_lo)) or {}
        if not pts:
            continue
        first = [_at(pts.get(s), 0, tor) for s in c.seeds]
        last = [_at(pts.get(s), -1, tor) for s in c.seeds]
        j = judge_paired(last, first, c.seeds, need=c.need)
        steps, stats = band(pts, tor)
        excursion = max((st for st in stats[1:] if st.get("mean") is not None and stats[0].get("mean") is not None),
                        key=lambda st: abs(st["mean"] - stats[0]["mean"]), default=None)
        extra = "" if excursion is None else (f"; largest excursion {pct(excursion)} % at step "
                                              f"{steps[stats.index(excursion)]} against {pct(stats[0])} % untrained")
        c.find(f"At p = {p_lo:g}, does the text side's first-mention share move during training "
               f"({name or 'baseline'}; last snapshot - untrained, paired by seed, {n} objects)?",
               signed(j.estimate) + extra, j)
        out[f"{name or 'baseline'}: TOR moves at p = {p_lo:g}"] = j.to_dict()
    return out


def _scaled(est: dict) -> dict:
    """A difference in steps, as signed() prints shares x 100."""
    return {k: (v / 100 if k in ("mean", "lo", "hi") and v is not None else v) for k, v in est.items()}


def _at(points: list[dict] | None, i: int, figure: str):
    if not points:
        return None
    v = points[i].get(figure)
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def _plot(c: SetContext, names: list, data: dict, p: float, n: int):
    from comco.lab.report.figures import PAGE_IN
    from comco.report import pyplot, save

    figs = figures_of(n)
    panels = list(figs.items())
    if not any(data[name, p] for name in names):
        return None
    plt = pyplot()
    fig, axes = plt.subplots(2, 3, figsize=(PAGE_IN, 6.0), squeeze=False)  # the page's width: never shrunk
    log_steps = c.s["scratch"].get("checkpoint_spacing") == "log"
    first = min((pt["step"] for name in names for pts in data[name, p].values() for pt in pts if pt["step"] > 0),
                default=1)
    for ax, (title, figure) in zip(axes.flat, panels):
        for name in names:
            pts = data[name, p]
            if not pts or (text_only(c, name) and figure.startswith(IMAGE_FIGURES)):
                continue
            steps, stats = band(pts, figure)
            y = np.array([np.nan if s.get("mean") is None else 100 * s["mean"] for s in stats])
            lo = np.array([np.nan if s.get("lo") is None else 100 * s["lo"] for s in stats])
            hi = np.array([np.nan if s.get("hi") is None else 100 * s["hi"] for s in stats])
            line, = ax.plot(steps, y, marker="o", markersize=3, label=f"{describe(c, name)} ({len(pts)} seeds)")
            ax.fill_between(steps, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
        if figure.startswith(("TOR first", "IOR largest")):
            ax.axhline(100 / n, color="k", linestyle=":", linewidth=1)
        ax.set_title(title, fontsize=9)
        if log_steps:  # early snapshots readable; 0 stays on the axis
            ax.set_xscale("symlog", linthresh=first)
            ax.set_xlim(left=-0.3 * first)  # no empty negative half of the axis
        ax.set_xlabel("training step (0 = untrained)", fontsize=8)
        ax.set_ylabel("%", fontsize=8)
        ax.tick_params(labelsize=7)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    axes.flat[-1].axis("off")
    if handles:
        axes.flat[-1].legend(handles, labels, loc="center", fontsize=8, title=f"p = {p:g}", title_fontsize=9)
    fig.suptitle(f"Bias development at p = {p:g} ({c.oset}; dotted: chance; bands: 95 % across seeds)", fontsize=10)
    return save(fig, c.fig / f"{c.oset}-development-p{p:g}.png")
