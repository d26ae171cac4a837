"""The lab report's cells say when a number came from too few trials (the probe page's minimum,
comco.report.MIN_TRIALS), and every "–" in its tables carries the mark of a reason given below
the table (pure Python: planted probe results, no stage runs)."""

from __future__ import annotations

import re

from comco.lab.report.context import SetContext
from comco.lab.report.dose import dose_sections
from comco.lab.report.stats import cell, counted, pct, summarize
from comco.report import MIN_TRIALS, Doc

MARK = re.compile(r"–[⁰¹²³⁴⁵⁶⁷⁸⁹]+")


def stats(n: int, values: list[float]) -> list[dict]:
    roles = ["1st", "2nd", "3rd"][:len(values)]
    return [{"role": r, "value": v, "n": n, "chance": 0.2} for r, v in zip(roles, values)]


def probe_result(n_tor: int, n_ior: int) -> dict:
    return {"tor": {"and": {"3": {"unconditional": stats(n_tor, [0.6, 0.2, 0.2])}}},
            "ior": {"3": {"unconditional": stats(n_ior, [0.5, 0.3, 0.2])}},
            "ior_present": {"3": stats(n_ior, [0.5, 0.3, 0.2])},
            "sensitivity": {"3": stats(n_tor, [0.5, 0.3, 0.2])}}


def test_a_gate_cell_from_too_few_trials_says_so():
    assert cell({"value": 0.5, "lo": 0.3, "hi": 0.7, "n": MIN_TRIALS - 8}) == "12 trials: too few to read"
    assert cell({"value": 0.5, "lo": 0.3, "hi": 0.7, "n": MIN_TRIALS}) == "50.0 [30.0, 70.0]"


def test_a_mean_across_seeds_counts_the_fewest_trials_of_its_models():
    few = counted(summarize([0.5, 0.6, 0.7]), [MIN_TRIALS - 8, 240, 240])
    assert pct(few) == "12 trials per model: too few to read"
    assert pct(counted(summarize([0.5, 0.6, 0.7]), [240, 240, 240])) == "60.0 [35.2, 84.8]"


def test_dose_tables_mark_thin_cells_and_give_every_dash_its_reason(tmp_path):
    settings = {"data": {"order_bias": [0.0, 1.0]}, "scratch": {"seeds": [0, 1]}, "gates": {"min_passing": 1}}
    c = SetContext(Doc(), run=None, fig=tmp_path, oset="simco", s=settings)
    # IOR from 12 images per model (too few); TOR from 240 captions; no model passed at p = 1
    probes = {(0.0, 0): probe_result(240, 12), (0.0, 1): probe_result(240, 12), (1.0, 0): {}, (1.0, 1): {}}
    dose_sections(c, probes, [3], [])
    tables = [b for b in c.doc.blocks if b[0] == "table"]
    paragraphs = " ".join(b[1] for b in c.doc.blocks if b[0] == "p")
    tor, ior, sens = tables
    assert tor[2][0][1] != "–" and "too few" not in tor[2][0][1]  # 240 captions: a number
    assert ior[2][0][1:] == ["12 trials per model: too few to read"] * 3
    for table in tables:
        for row in table[2]:
            for text in row:
                if "–" in text:  # every dash carries a mark, and the mark's reason is written
                    assert MARK.fullmatch(text), (row, text)
                    assert f"{text[1:]} " in paragraphs, text
    assert "no model passed its gates at this p" in paragraphs


def test_a_headline_from_too_few_trials_says_so_instead_of_a_number(tmp_path):
    settings = {"data": {"order_bias": [0.0, 1.0]}, "scratch": {"seeds": [0, 1]}, "gates": {"min_passing": 1}}
    c = SetContext(Doc(), run=None, fig=tmp_path, oset="simco", s=settings)
    probes = {(p, seed): probe_result(240, 12) for p in (0.0, 1.0) for seed in (0, 1)}
    prior = [probe_result(240, 12), probe_result(240, 12)]
    dose_sections(c, probes, [3], prior)
    ior = next(b[1] for b in c.doc.blocks if b[0] == "p" and b[1].startswith("The largest object's share of IOR"))
    assert "12 trials, fewer than 20, too few to read" in ior and "goes from" not in ior
    prior_ior = next(f for f in c.findings if "untrained image tower" in f.question)
    assert prior_ior.number.startswith("12 trials per model: too few to read against chance")
    prior_tor = next(f for f in c.findings if "untrained architecture" in f.question)
    assert re.fullmatch(r"\d+\.\d \[\d+\.\d, \d+\.\d\] % against chance 33\.3 %", prior_tor.number), prior_tor.number


def test_a_lab_figure_draws_no_point_its_text_calls_too_few():
    """Issue 37 item 6: the dose figure drew the 12-trial point the table beside it withheld."""
    import numpy as np

    from comco.lab.report.figures import draw_dose, draw_findings

    thin_point = counted(summarize([0.5, 0.6, 0.7]), [MIN_TRIALS - 8, 240, 240])
    full_point = counted(summarize([0.3, 0.35, 0.4]), [240, 240, 240])
    assert pct(thin_point) == "12 trials per model: too few to read"
    fig = draw_dose("t", [0.0, 1.0], {"3 objects": [full_point, thin_point]}, 0.2, "%")
    (line,) = fig.axes[0].lines[:1]
    y = np.asarray(line.get_ydata(), dtype=float)
    assert y[0] == 100 * full_point["mean"] and np.isnan(y[1])
    fig = draw_findings("t", [0.0, 1.0], {"TOR": {"3 objects": [thin_point, full_point]}},
                        {"TOR": {"3 objects": thin_point}}, {"TOR": {"3 objects": 0.33}})
    drawn = [np.asarray(ln.get_ydata(), dtype=float) for ln in fig.axes[0].lines if len(ln.get_ydata())]
    assert not any(np.isclose(y, 100 * thin_point["mean"]).any() for y in drawn)  # nor its prior marker
    assert any(np.isclose(y, 100 * full_point["mean"]).any() for y in drawn)


def test_lab_figures_count_the_units_the_bootstrap_resamples():
    from comco.lab.report.stats import metric

    res = {"ior": {"3": {"unconditional": [{"role": "largest", "value": 0.5, "n": 96, "clusters": 8}]}}}
    assert metric(res, "ior", "3")["n"] == [8]  # 96 trials from 8 images: 8 draws of the interval
