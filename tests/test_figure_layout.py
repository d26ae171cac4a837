"""Probe figures a reader takes in: the title, the legend and the panel titles never overlap
one another or a panel, nothing is cut at the edge, legend letters are readable at 100 %,
and the legend sits above the first panels (not below the last row)."""

from support.probes import SET, FakeEmbedder, one_hot, planned_data

from comco.probes.report import FIGURE_DPI, draw_probe_figure, tables
from comco.probes.tor import tor_dataset
from comco.probes.words import mention_sequence
from comco.report.plots import layout_problems, pyplot


def tor_results(models=("a (none)", "b (none)")):
    def first_wins(text):
        return one_hot({n: 0.5 ** k for k, n in enumerate(mention_sequence(text, SET.names))})

    groups = tor_dataset(planned_data(n=16, objects=(3, 4)), FakeEmbedder(first_wins), ["and", "photo"],
                         n_boot=10, seed=0)
    return {"probes": {"tor": {m: groups for m in models}}}


def test_the_tor_figure_has_no_collisions_and_its_legend_is_beside_the_first_panels():
    tabs = tables(tor_results())["tor"]
    fig, rect = draw_probe_figure("tor", tabs)
    assert layout_problems(fig, FIGURE_DPI, rect) == []
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    top_panel = max(ax.get_window_extent(renderer).y1 for ax in fig.axes if ax.axison)
    assert 0 <= legend.y0 - top_panel < 0.15 * fig.bbox.height  # just above the first row, however many rows
    pyplot().close(fig)


def test_a_panel_without_any_number_keeps_its_marks_inside():
    tor = tor_results()
    for groups in tor["probes"]["tor"].values():
        for g in groups:  # no kept query anywhere: every conditional cell is a mark, not a bar
            g["metrics"]["conditional"] = [dict(s, acc=float("nan"), lo=float("nan"), hi=float("nan"), n=0, chance=None)
                                           for s in g["metrics"]["conditional"]]
    fig, rect = draw_probe_figure("tor", tables(tor)["tor"])
    assert layout_problems(fig, FIGURE_DPI, rect) == []
    pyplot().close(fig)


def test_the_checker_sees_overlaps_tiny_legends_and_clipped_labels():
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(6, 5))
    for ax in axes.flat:
        ax.bar([0, 1], [1, 2], label="measured")
        ax.set_title("3 objects", fontsize=8)
    fig.suptitle("TOR: text-based object retrieval", fontsize=10)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="center", bbox_to_anchor=(0.3, 0.7), fontsize=4)
    axes[1, 1].set_xlabel("a label that runs far past the right edge of the figure " * 3)
    axes[0, 1].text(5.0, 0.5, "n/a")  # a mark beyond the panel's last bar
    problems = layout_problems(fig, 110, rect=(0, 0.05, 1, 1))
    assert any(p.startswith("legend 1 overlaps panel") for p in problems), problems
    assert any(p.startswith("legend 1:") and "px letters" in p for p in problems), problems
    assert any("axis label" in p and "cut by the figure's edge" in p for p in problems), problems
    assert any("mark 'n/a' lies outside the panel" in p for p in problems), problems
    plt.close(fig)


def _stat(m):
    return {"mean": m, "lo": m - 0.05, "hi": m + 0.05, "n": 3}


def test_the_lab_figures_keep_their_legends_beside_the_panels_readable_and_nothing_cut(tmp_path):
    """The lab report's dose-response, bar and findings figures, drawn as the report draws them."""
    from comco.lab.report.figures import bar_plot, dose_plot, findings_plot
    from comco.report import checking_layout

    ps = [0.0, 0.5, 1.0]
    shares = {f"{r} mentioned": [_stat(0.25), _stat(0.3), _stat(0.8 if r == "1st" else 0.05)]
              for r in ("1st", "2nd", "3rd", "4th")}
    models = {name: [_stat(0.5)] * 4 for name in ("base (scratch, p = 1)", "longclip", "debias")}
    counts = {"3 objects": [_stat(0.4)] * 3, "4 objects": [_stat(0.3)] * 3}
    panels = {"TOR: the first mention's share": counts, "IOR: the largest object's share": counts}
    with checking_layout() as checked:
        dose_plot(tmp_path / "tor.png", "TOR position shares, 4-object captions (simco)", ps, shares, 0.25,
                  "share of top-1 hits (%)")
        bar_plot(tmp_path / "ft.png", "Before / after fine-tuning (simco, 4 objects)",
                 ["TOR `and`: 1st share", "TOR summary: 1st share", "IOR: largest share", "sensitivity: 1st share"],
                 models, "share (%)", chance=0.25)
        findings_plot(tmp_path / "findings.png", "The two biases against p (simco)", ps, panels,
                      {k: {"3 objects": _stat(0.33), "4 objects": _stat(0.3)} for k in panels},
                      {k: {"3 objects": 1 / 3, "4 objects": 0.25} for k in panels})
    assert [path.name for path, _ in checked] == ["tor.png", "ft.png", "findings.png"]
    assert {path.name: found for path, found in checked} == {"tor.png": [], "ft.png": [], "findings.png": []}
    assert all(p.is_file() for p, _ in checked)


def test_the_checker_sees_a_small_legend_inside_a_panel_and_cut_tick_labels():
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar([0, 1], [1, 2], label="measured")
    ax.legend(fontsize=6)  # inside the panel, over its bars: 8 px letters at 100 dpi
    ax.set_xticks([0, 1], ["a", "a tick label much too long for this little figure " * 2])
    ax.tick_params(axis="x", labelrotation=0)
    problems = layout_problems(fig, 100)
    assert "legend of panel 1 overlaps panel 1" in problems, problems
    assert any(p.startswith("legend of panel 1:") and "px letters" in p for p in problems), problems
    assert any("tick label 'a tick label" in p and "cut by the figure's edge" in p for p in problems), problems
    plt.close(fig)
