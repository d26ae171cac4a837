"""Tiny comco datasets for the training tests: real planner records, images drawn with
PIL instead of Blender (each object a disc of its own colour at its planned place and
size), so a model can learn which names go with which pictures."""

from __future__ import annotations

from support.train import (
    make_dataset,
)

from comco.data.folder import Dataset


def test_fixture_dataset_has_images_and_long_captions(tmp_path):
    root = make_dataset(tmp_path / "d", n=4)
    records = list(Dataset(root).records())
    assert len(records) == 4
    assert all((root / r["image"]).is_file() for r in records)
    assert all(len(r["captions"]["long"]) == len(r["mention_orders"]) for r in records)






