"""Tiny copies of each natural benchmark, written in its distributed layout.

Imported by the other test_natural_* files (pytest puts tests/ on sys.path); the
tests here only check that the writers produce the files the real datasets have.
"""

from __future__ import annotations

from PIL import Image
from support.natural import (
    write_coco,
    write_dci,
    write_flickr,
    write_image,
)


def test_fixtures_write_the_distributed_file_names(tmp_path):
    assert (write_coco(tmp_path / "c") / "annotations" / "captions_val2017.json").is_file()
    assert (write_flickr(tmp_path / "f") / "results_20130124.token").read_text().count("\n") == 20
    assert (write_dci(tmp_path / "d") / "densely_captioned_images" / "photos" / "sa_4.jpg").is_file()
    assert Image.open(write_image(tmp_path / "x.jpg", 3)).size == (24, 24)
