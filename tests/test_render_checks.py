"""Render validity checks on measured records (pure Python)."""

from comco.record import measured_ranks
from comco.render.checks import check_rendered


def rec(layout, pixels, ranks, visible=None, border=None):
    objs = []
    for i, (p, r) in enumerate(zip(pixels, ranks)):
        objs.append({"name": f"o{i}", "size_rank": r, "measured": {
            "pixels": p, "visible_fraction": (visible or [1.0] * len(pixels))[i],
            "touches_border": bool(border and border[i]), "fraction": p / 4096, "bbox": [0, 0, 1, 1]}})
    return {"layout": layout, "objects": objs}


def test_good_one_large_passes():
    assert check_rendered(rec("one-large", [900, 60, 50], [0, 1, 2]), 10, 0.9) is None


def test_planned_large_must_measure_largest():
    reason = check_rendered(rec("one-large", [40, 900, 50], [0, 1, 2]), 10, 0.9)
    assert reason and "planned-large o0" in reason


def test_graded_ranks_must_match():
    assert check_rendered(rec("graded", [900, 300, 100], [0, 1, 2]), 10, 0.9) is None
    assert "ranks" in check_rendered(rec("graded", [900, 100, 300], [0, 1, 2]), 10, 0.9)


def test_min_pixels_visibility_and_border():
    assert "--min-pixels" in check_rendered(rec("equal", [900, 5], [0, 1]), 10, 0.9)
    assert "visible fraction" in check_rendered(rec("equal", [900, 50], [0, 1], visible=[1.0, 0.5]), 10, 0.9)
    assert "border" in check_rendered(rec("equal", [900, 50], [0, 1], border=[True, False]), 10, 0.9)


def test_measured_ranks():
    assert measured_ranks(rec("equal", [5, 900, 50], [0, 1, 2])) == [2, 0, 1]
