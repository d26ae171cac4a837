"""Tiny datasets for the probe tests: planned by comco's planner, "rendered" with PIL.

The stand-in renderer paints one filled ellipse per object at its projected location,
sized by its planned image fraction, then writes `measured` exactly as the contract
says (pixels, fraction, bbox, visible_fraction). Until the Blender renderer is
available in tests this gives real files the image probes can read.
"""

from __future__ import annotations

from support.probes import make_dataset

from comco.data.folder import SCENES
from comco.io import read_jsonl


def test_fixture_paints_measured_sizes_in_planned_order(tmp_path):
    root = make_dataset(tmp_path / "ds", n=4, objects=(3,), singles=False)
    for rec in read_jsonl(root / SCENES):
        assert (root / rec["image"]).is_file()
        large = min(rec["objects"], key=lambda o: o["size_rank"])
        assert all(large["measured"]["pixels"] > o["measured"]["pixels"] for o in rec["objects"] if o is not large)
