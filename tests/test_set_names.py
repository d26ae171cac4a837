"""A user set is addressed by its folder or by its manifest's `name` (what dataset.json
records): `--object-set kitchen` finds the folder beside it whose objects.toml says
`name = "kitchen"`; two such folders, or none, end in one line that says what to pass."""

import json
import subprocess
import sys

import pytest

from comco.errors import UserError
from comco.manifest import load_object_set, resolve_set_dir

KITCHEN = '''name = "{name}"
[[objects]]
name = "brick"
plural = "bricks"
article = "a"
dimensions_m = [0.2, 0.1, 0.06]
size_class = "small"
colorable = true
source = "mesh:brick.obj"
'''


def make_set(folder, name="kitchen"):
    folder.mkdir()
    (folder / "objects.toml").write_text(KITCHEN.format(name=name))
    (folder / "brick.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    return folder


def test_the_manifest_name_finds_its_folder(tmp_path, monkeypatch):
    make_set(tmp_path / "my-set")
    make_set(tmp_path / "other", name="garage")
    monkeypatch.chdir(tmp_path)
    assert resolve_set_dir("kitchen") == (tmp_path / "my-set").resolve()
    assert resolve_set_dir("my-set") == (tmp_path / "my-set").resolve()  # the folder still works
    assert load_object_set("garage").root == (tmp_path / "other").resolve()
    assert resolve_set_dir("simco").name == "simco"  # a built-in name wins


def test_two_sets_of_one_name_or_none_end_in_one_line(tmp_path, monkeypatch):
    make_set(tmp_path / "a")
    make_set(tmp_path / "b")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "objects.toml").write_text("name = ")  # not TOML: skipped, not a crash
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=r"'kitchen' is the name of 2 sets here .*/a, .*/b\); give its folder"):
        resolve_set_dir("kitchen")
    with pytest.raises(UserError, match=r"unknown object set 'garage': .*the `name` of a set"):
        resolve_set_dir("garage")


def test_plan_by_the_name_dataset_json_records(tmp_path):
    make_set(tmp_path / "my-set")
    first, again = tmp_path / "first", tmp_path / "again"
    for out, arg in ((first, "my-set"), (again, "kitchen")):
        r = subprocess.run([sys.executable, "-m", "comco.cli", "plan", "--object-set", arg, "--objects", "1",
                            "--n", "2", "--quiet", "--out", str(out)], cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    recorded = json.loads((first / "dataset.json").read_text())["object_set"]
    assert recorded == "kitchen"
    assert (first / "scenes.jsonl").read_text() == (again / "scenes.jsonl").read_text()
