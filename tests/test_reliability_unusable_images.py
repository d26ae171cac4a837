"""Issue 25 item 10: `comco probe` (the pair probe too) and `comco train` on a dataset with a
missing, cut, scrambled or non-PNG image end with exit 2 and one line naming the record,
before a model loads and before anything is written. The check is `comco validate`'s own
(comco.data.validate.image_problem)."""

from __future__ import annotations

import os
import shutil
import sys

import pytest
from support.pairs import write_pair_dataset
from support.probes import make_dataset

from comco.cli.app import main
from comco.io import read_jsonl

pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _cut(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _scrambled(path):
    data = bytearray(path.read_bytes())
    data[60:120] = os.urandom(60)  # inside the image data: the chunk CRCs no longer hold
    path.write_bytes(bytes(data))


DAMAGE = {
    "missing": lambda p: p.unlink(),
    "cut": _cut,
    "scrambled": _scrambled,
    "not a PNG": lambda p: p.write_text("this is a text file named .png\n"),
    "empty": lambda p: p.write_bytes(b""),
}


@pytest.fixture(scope="module")
def probe_dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("probe") / "ds", n=6, resolution=32)


@pytest.fixture(scope="module")
def pair_dataset(tmp_path_factory):
    return write_pair_dataset(tmp_path_factory.mktemp("pairs") / "ds", n=3)


@pytest.fixture
def no_model(monkeypatch):
    """The images are checked before any model is loaded."""
    from comco.models import factory

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the images were checked")

    monkeypatch.setattr(factory, "load_model", refuse)


def _damaged(src, tmp_path, how, which=2):
    ds = tmp_path / "ds"
    shutil.copytree(src, ds)
    record = list(read_jsonl(ds / "scenes.jsonl"))[which]
    DAMAGE[how](ds / record["image"])
    return ds, record


def run(args, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["comco", *map(str, args)])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


def _one_line(code, err, out, record):
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err[-2000:]
    assert f"record {record['id']}: image {record['image']}" in lines[0], lines[0]
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.usefixtures("no_model")
@pytest.mark.parametrize("how", list(DAMAGE))
def test_probe_names_the_record_whose_image_cannot_be_used(probe_dataset, tmp_path, capsys, monkeypatch, how):
    ds, record = _damaged(probe_dataset, tmp_path, how)
    out = tmp_path / "out"
    code, err = run(["probe", ds, "-m", "ViT-S-32", "--pretrained", "none", "--probes", "matching",
                     "--out", out, "--quiet"], capsys, monkeypatch)
    _one_line(code, err, out, record)


@pytest.mark.usefixtures("no_model")
def test_probe_checks_the_singles_ior_reads(probe_dataset, tmp_path, capsys, monkeypatch):
    ds = tmp_path / "ds"
    shutil.copytree(probe_dataset, ds)
    single = list(read_jsonl(ds / "singles" / "singles.jsonl"))[1]
    _cut(ds / single["image"])
    out = tmp_path / "out"
    code, err = run(["probe", ds, "-m", "ViT-S-32", "--pretrained", "none", "--probes", "ior",
                     "--out", out, "--quiet"], capsys, monkeypatch)
    assert code == 2 and len(err.strip().splitlines()) == 1 and f"single {single['id']}" in err, err[-2000:]


@pytest.mark.usefixtures("no_model")
@pytest.mark.parametrize("how", ["cut", "not a PNG"])
def test_the_pair_probe_names_the_record_too(pair_dataset, tmp_path, capsys, monkeypatch, how):
    ds, record = _damaged(pair_dataset, tmp_path, how, which=1)  # a variant
    out = tmp_path / "out"
    code, err = run(["probe", ds, "-m", "ViT-S-32", "--pretrained", "none", "--probes", "pairs",
                     "--out", out, "--quiet"], capsys, monkeypatch)
    _one_line(code, err, out, record)


@pytest.mark.usefixtures("no_model")
@pytest.mark.parametrize("how", list(DAMAGE))
def test_train_names_the_record_whose_image_cannot_be_used(probe_dataset, tmp_path, capsys, monkeypatch, how):
    ds, record = _damaged(probe_dataset, tmp_path, how)
    out = tmp_path / "out"
    code, err = run(["train", "scratch", "--data", ds, "--out", out, "--steps", "1", "--resolution", "32",
                     "--quiet"], capsys, monkeypatch)
    _one_line(code, err, out, record)


@pytest.mark.usefixtures("no_model")
def test_train_spot_checks_a_list_of_images(probe_dataset, tmp_path, capsys, monkeypatch):
    image = tmp_path / "a.png"
    image.write_text("not an image\n")
    data = tmp_path / "list.jsonl"
    data.write_text('{"image": "a.png", "caption": "a cube"}\n')
    out = tmp_path / "out"
    code, err = run(["train", "scratch", "--data", data, "--out", out, "--steps", "1", "--quiet"],
                    capsys, monkeypatch)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "a.png cannot be decoded" in err, err[-2000:]
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("how", ["cut", "not a PNG", "missing"])
def test_the_training_image_loaders_name_an_image_past_the_spot_check(probe_dataset, tmp_path, how):
    """A list of a million images is spot-checked only; the loaders name a bad one when they reach it."""
    import torch

    from comco.errors import UserError
    from comco.train.images import CachedImages, FileImages

    ds, record = _damaged(probe_dataset, tmp_path, how)
    paths = [ds / r["image"] for r in read_jsonl(ds / "scenes.jsonl")]
    with pytest.raises(UserError, match=f"image {ds / record['image']} cannot be decoded"):
        FileImages(paths, lambda im: torch.zeros(3))(list(range(len(paths))))
    if how != "missing":  # the cache keys on every file's size first, which names a missing one itself
        with pytest.raises(UserError, match=f"image {ds / record['image']} cannot be decoded"):
            CachedImages.build(paths, 32, tmp_path / "cache")
