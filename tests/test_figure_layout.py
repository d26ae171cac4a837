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
