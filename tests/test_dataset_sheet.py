"""`comco dataset sheet DIR --out FOLDER` (issue 37 item 5): a dataset's first scenes with their
captions and sizes, drawn with comco.sheet; the last line names the one file to open."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from support.export import comco
from typer.testing import CliRunner

from comco.cli.app import app
from comco.data.folder import Dataset
from comco.data.sheet import scene_lines

pytestmark = pytest.mark.torch  # support.train (the painted dataset) imports the trainer


def sheet(*args):
    return CliRunner().invoke(app, ["dataset", "sheet", *map(str, args)])


def test_sheet_shows_the_first_scenes_with_caption_and_sizes(tiny_dataset, tmp_path):
    out = tmp_path / "look"
    r = sheet(tiny_dataset, "--out", out, "--limit", "6", "--columns", "3", "--tile", "96")
    assert r.exit_code == 0, r.output
    png = out / "sheet.png"
    assert r.stdout.splitlines()[-1] == f"open {png}"
    assert "6 scenes in 2 x 3" in r.stdout
    with Image.open(png) as im:
        assert im.width == 3 * 96 + 2 * 4  # three cells and two gaps
        pixels = np.asarray(im.convert("RGB"))
    records = list(Dataset(tiny_dataset).records())[:6]
    # the first cell holds the first scene's image (grey floor, painted objects), not white paper
    top = next(y for y in range(pixels.shape[0]) if (pixels[y, 48] != 255).any() and y > 30)
    assert (pixels[top + 10, 10:86] != 255).any()
    lines = scene_lines(records[0], "and")
    assert lines[0].startswith(records[0]["id"]) and "64 x 64 px" in lines[0]
    assert lines[1] == f"and: {records[0]['captions']['and'][0]}"
    largest = min(records[0]["objects"], key=lambda o: o["size_rank"])["name"]
    assert lines[2].startswith(largest)  # sizes are listed largest first
    assert len(lines[2].split(", ")) == len(records[0]["objects"])


def test_measured_sizes_are_shares_of_the_image():
    record = {"id": "000007", "resolution": [96, 64], "captions": {"photo": ["a photo of a cube and a ball"]},
              "objects": [{"name": "ball", "size_rank": 1, "measured": {"fraction": 0.0123}},
                          {"name": "cube", "size_rank": 0, "measured": {"fraction": 0.0712}}]}
    assert scene_lines(record, "and") == ("000007  96 x 64 px", "photo: a photo of a cube and a ball",
                                          "cube 7.1%, ball 1.2%")


def test_a_planned_dataset_or_a_file_out_is_one_line(tmp_path, capsys):
    from comco.data.writer import run_plan
    from comco.plan import PlanConfig

    planned = tmp_path / "planned"
    run_plan(PlanConfig(object_set="simco", objects=(2,), n=3, resolution=(32, 32)), planned, quiet=True)
    code, _, err = comco(capsys, "dataset", "sheet", planned, "--out", tmp_path / "o")
    assert code == 2 and len(err.splitlines()) == 1 and "not rendered" in err and "comco render" in err
    assert not (tmp_path / "o").exists()
    (tmp_path / "f").write_text("mine")
    code, _, err = comco(capsys, "dataset", "sheet", planned, "--out", tmp_path / "f")
    assert code == 2 and "is a file; give a folder" in err
