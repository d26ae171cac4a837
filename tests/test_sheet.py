"""Contact sheets (comco.sheet): a title wider than the sheet wraps onto more lines instead of
running past the right edge (the realism presets sheet lost its end that way)."""

from __future__ import annotations

import numpy as np
from PIL import Image

from comco.sheet import PAD, Tile, draw_grid, layout

TITLE = ("comco: the same scenes, one realism per column (cycles, 8 samples, 128 px, everything else "
         "fixed, all on --floor checker --floor-hue 30)")


def grid(columns: int = 3) -> list[list[Tile]]:
    return [[Tile(Image.new("RGB", (64, 64), "grey"), (f"col {c}",)) for c in range(columns)]]


def test_a_long_title_wraps_within_the_sheet_and_keeps_every_word():
    g = layout(grid(), title=TITLE, gap=2)
    assert len(g.title_lines) > 1 and " ".join(g.title_lines) == TITLE
    assert all(g.font.getlength(line) <= g.size[0] - 2 * PAD for line in g.title_lines)
    assert g.head == g.line_h * len(g.title_lines) + 8 and g.tops[0] == g.head  # the grid moves down
    sheet = np.asarray(draw_grid(grid(), title=TITLE, gap=2).convert("L"))
    head = sheet[:g.head]
    assert (head < 128).any(axis=1).sum() > g.line_h  # ink on more than one line's rows
    assert (head[:, -3:] == 255).all()  # nothing reaches the right edge


def test_a_title_that_fits_keeps_its_one_line_head():
    g = layout(grid(9), title="comco: one floor per column", gap=2)
    assert g.title_lines == ("comco: one floor per column",) and g.head == g.line_h + 8
    assert layout(grid(9), gap=2).head == 0 and layout(grid(9), gap=2).title_lines == ()
