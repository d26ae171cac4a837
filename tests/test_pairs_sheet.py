"""`comco dataset pairs-sheet`: one row per pair group (base, then each variant), each image
enlarged to the cell and labelled with its factor and the captions the pair probe compares;
a dataset without pairs, a missing folder or unrendered images end with one line."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from PIL import Image
from support.export import comco
from support.pairs import FACTORS_BUILT, write_pair_dataset
from support.probes import make_dataset

from comco.data import Dataset
from comco.data.sheet import GAP, sheet_rows, sheet_title
from comco.io import read_jsonl
from comco.sheet import Tile, layout

TILE = 64  # the builder's images are 32 px: every cell is a 2x nearest-neighbour enlargement


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    return write_pair_dataset(tmp_path_factory.mktemp("sheet") / "ds", n=4)


def records(root):
    return list(read_jsonl(root / "scenes.jsonl"))


def sheet(capsys, root, out, *args):
    code, stdout, err = comco(capsys, "dataset", "pairs-sheet", root, "--out", out, "--tile", TILE, *args)
    assert code == 0, err
    assert stdout.splitlines()[-1] == f"open {out / 'pairs-sheet.png'}"  # the one file to open, last
    return np.asarray(Image.open(out / "pairs-sheet.png").convert("RGB"))


def boxes(root, **kw):
    """Where each row's images lie, from the sheet's layout of the same rows and labels."""
    data = Dataset(root)
    rows = sheet_rows(data, **kw)
    tiles = [[Tile(Image.new("RGB", (32, 32)), lines) for _, lines in row] for row in rows]
    title = sheet_title(data, len(rows), (32, 32))  # the builder's 32 px images
    g = layout(tiles, tile=TILE, gap=GAP, title=title, font_px=max(11, TILE // 15))
    return rows, g


def enlarged(path):
    return np.asarray(Image.open(path).convert("RGB")).repeat(2, axis=0).repeat(2, axis=1)


def test_one_row_per_pair_group_base_then_each_variant(pairs, tmp_path, capsys):
    png = sheet(capsys, pairs, tmp_path / "s")
    recs = records(pairs)
    rows, g = boxes(pairs, limit=8)
    assert len(rows) == 4 and all(len(r) == 1 + len(FACTORS_BUILT) for r in rows)
    assert png.shape[1] == 4 * TILE + 3 * GAP and png.shape[:2] == g.size[::-1]
    bases = [r for r in recs if r["pair"]["factor"] == "base"]
    for r, base in enumerate(bases):
        ids = [base["id"]] + [f"{base['id']}-{f}" for f in FACTORS_BUILT]
        for c, rid in enumerate(ids):
            x0, y0, x1, y1 = g.box(r, c)
            assert np.array_equal(png[y0:y1, x0:x1], enlarged(pairs / "images" / f"{rid}.png")), (r, c)
            below = png[y1:y1 + g.line_h, x0:x1]
            assert (below < 128).any()  # the label's first line is drawn under the image


def test_labels_name_the_factor_and_its_templates_captions(pairs):
    rows, _ = boxes(pairs, limit=1)
    by = {r["id"]: r for r in records(pairs)}
    (_, base_lines), *variants = rows[0]
    base = by["000000"]
    assert base_lines == ("000000 base", base["captions"]["and"][0])
    templates = {"swap-size": "sizes", "swap-slots": "relations", "remove": "and"}
    for (path, lines), factor in zip(variants, FACTORS_BUILT):
        v = by[path.stem]
        assert v["pair"]["factor"] == factor and lines[0] == f"{factor} ({templates[factor]})"
        t = templates[factor]
        k = next(k for k, (a, b) in enumerate(zip(base["captions"][t], v["captions"][t])) if a != b)
        assert lines[1:] == (v["captions"][t][k], f"base: {base['captions'][t][k]}")


def test_limit_and_factors_pick_rows_and_columns(pairs, tmp_path, capsys):
    png = sheet(capsys, pairs, tmp_path / "s", "--limit", "2", "--factors", "remove", "--resample", "bicubic")
    rows, g = boxes(pairs, limit=2, factors=("remove",))
    assert len(rows) == 2 and [p.name for p, _ in rows[1]] == ["000001.png", "000001-remove.png"]
    assert png.shape[:2] == g.size[::-1] and png.shape[1] == 2 * TILE + GAP
    x0, y0, x1, y1 = g.box(1, 1)
    src = Image.open(pairs / "images" / "000001-remove.png").convert("RGB")
    cell = png[y0:y1, x0:x1]
    assert np.array_equal(cell, np.asarray(src.resize((TILE, TILE), Image.Resampling.BICUBIC)))
    assert not np.array_equal(cell, enlarged(pairs / "images" / "000001-remove.png"))  # smoothed, not blocks


def test_bad_inputs_end_with_one_line(pairs, tmp_path, capsys):
    plain = make_dataset(tmp_path / "plain", n=2, objects=(2,), resolution=32, singles=False)
    unrendered = tmp_path / "unrendered"
    shutil.copytree(pairs, unrendered)
    (unrendered / "images" / "000001-swap-slots.png").unlink()
    cases = [
        ((tmp_path / "nowhere",), "does not exist"),
        ((plain,), "no pair records"),
        ((unrendered,), "not rendered (first: images/000001-swap-slots.png)"),
        ((pairs, "--factors", "swap-size,shuffle"), "--factors: unknown factor 'shuffle'"),
        ((pairs, "--factors", "count"), "has no count pairs"),
        ((pairs, "--limit", "0"), "--limit 0"),
        ((pairs, "--resample", "lanczos"), "--resample lanczos"),
    ]
    for (root, *args), words in cases:
        out = tmp_path / "bad"
        code, stdout, err = comco(capsys, "dataset", "pairs-sheet", root, "--out", out, *args)
        lines = (stdout + err).strip().splitlines()
        assert code == 2 and len(lines) == 1 and words in lines[0], (words, lines)
        assert not out.exists()
    (tmp_path / "a-file").write_text("mine")  # --out is a folder, never a file
    code, stdout, err = comco(capsys, "dataset", "pairs-sheet", pairs, "--out", tmp_path / "a-file")
    assert code == 2 and "is a file; give a folder" in err
