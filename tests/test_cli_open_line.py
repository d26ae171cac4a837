"""Issue 37 item 5: probe, eval, train labclip and lab run end by printing the one file to open
(`open PATH`, the last line, a file that exists)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.export import comco
from support.natural import write_coco
from support.train import make_dataset, make_tiny_checkpoint

pytestmark = pytest.mark.torch


def last_open(stdout: str) -> Path:
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("open "), stdout[-500:]
    path = Path(last.removeprefix("open "))
    assert path.is_file(), path
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny.pt")


def test_probe_ends_with_its_page(tmp_path, capsys, tiny):
    code, stdout, err = comco(capsys, "probe", "--text-only", "--object-set", "simco", "--objects", "3", "--tuples",
                              "6", "--model", f"ckpt:{tiny}", "--bootstrap", "0", "--no-cache", "--no-plots",
                              "--device", "cpu", "--out", tmp_path / "p")
    assert code == 0, err
    assert last_open(stdout) == tmp_path / "p" / "report.html"


def test_eval_ends_with_its_table(tmp_path, capsys, tiny):
    root = write_coco(tmp_path / "coco")
    code, stdout, err = comco(capsys, "eval", "retrieval", "--benchmark", "coco", "--root", root, "--model",
                              f"ckpt:{tiny}", "--no-cache", "--device", "cpu", "--out", tmp_path / "e")
    assert code == 0, err
    assert last_open(stdout) == tmp_path / "e" / "retrieval.html"


def test_train_labclip_ends_with_its_report_page(tmp_path, capsys, tiny):
    data = make_dataset(tmp_path / "colours", n=12, colors=True, objects=(2,))
    code, stdout, err = comco(capsys, "train", "labclip", "--data", data, "--init", f"ckpt:{tiny}", "--steps", "2",
                              "--batch-size", "8", "--device", "cpu", "--out", tmp_path / "l")
    assert code == 0, err
    assert last_open(stdout) == tmp_path / "l" / "report.html"
    assert (tmp_path / "l" / "binding.json").is_file()


def test_lab_run_ends_with_its_report(tmp_path, capsys, monkeypatch):
    """The lab's own run is minutes (tests/test_lab.py); here its driver is the tested command's
    last step only: what `comco lab run` prints after run_lab returns."""
    import importlib

    lab = importlib.import_module("comco.lab")
    out = tmp_path / "run"

    def run_lab(recipe, out, **_):
        out.mkdir(parents=True)
        (out / "report.html").write_text("<html></html>")
        return {"ran": ["a"], "skipped": [], "wall_seconds": 6.0}

    monkeypatch.setattr(lab, "run_lab", run_lab)
    code, stdout, err = comco(capsys, "lab", "run", "order-bias", "--scale", "smoke", "--out", out)
    assert code == 0, err
    assert last_open(stdout) == out / "report.html"
