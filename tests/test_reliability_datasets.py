"""Dataset integrity (issue 16): validate recomputes the configuration hash and names missing
records; probes and training refuse an incomplete scenes.jsonl (item 6); datasets made from
a user object set validate and keep the set's gallery (item 10)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.probes import paint

from comco.data.folder import config_hash

COMCO = [sys.executable, "-m", "comco.cli"]
USER_SET = textwrap.dedent('''\
    name = "shapes"
    [[objects]]
    name = "block"
    plural = "blocks"
    article = "a"
    synonyms = ["brick"]
    dimensions_m = [1, 1, 1]
    size_class = "medium"
    colorable = true
    source = "builder:simco.cube"

    [[objects]]
    name = "ball"
    plural = "balls"
    article = "a"
    synonyms = ["orb"]
    dimensions_m = [1, 1, 1]
    size_class = "medium"
    colorable = true
    source = "builder:simco.sphere"

    [[objects]]
    name = "cone"
    plural = "cones"
    article = "a"
    dimensions_m = [1, 1, 1]
    size_class = "medium"
    colorable = true
    source = "builder:simco.cone"
    ''')


def run(*args, cwd=None):
    return subprocess.run([*COMCO, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def plan(out: Path, *args) -> None:
    r = run("plan", "--n", "12", "--objects", "2-3", "--quiet", *args, "--out", out)
    assert r.returncode == 0, r.stderr


def edit_info(folder: Path, change) -> None:
    info = json.loads((folder / "dataset.json").read_text())
    change(info)
    (folder / "dataset.json").write_text(json.dumps(info))


@pytest.mark.parametrize("key, value", [("seed", 5), ("n", 11), ("order_bias", 0.5)])
def test_validate_refuses_an_edited_configuration(tmp_path, key, value):
    out = tmp_path / "d"
    plan(out)
    assert run("validate", out).returncode == 0
    edit_info(out, lambda info: info["config"].__setitem__(key, value))
    r = run("validate", out)
    assert r.returncode == 1 and "config_hash" in r.stderr and "edited" in r.stderr, r.stderr


def test_validate_names_the_missing_records(tmp_path):
    out = tmp_path / "d"
    plan(out)
    lines = (out / "scenes.jsonl").read_text().splitlines()
    del lines[7], lines[3]
    (out / "scenes.jsonl").write_text("\n".join(lines) + "\n")
    r = run("validate", out)
    assert r.returncode == 1 and "000003" in r.stderr and "000007" in r.stderr, r.stderr


def test_validate_notices_captions_that_are_not_the_configurations(tmp_path):
    """A dataset whose records were captioned by other templates than its configuration's
    (what resuming after editing a --templates-file file used to make) is not valid."""
    out = tmp_path / "d"
    plan(out)
    lines = (out / "scenes.jsonl").read_text().splitlines()
    rec = json.loads(lines[5])
    rec["captions"]["photo"] = [c.replace("a photo of", "a picture of") for c in rec["captions"]["photo"]]
    lines[5] = json.dumps(rec)
    (out / "scenes.jsonl").write_text("\n".join(lines) + "\n")
    r = run("validate", out)
    assert r.returncode == 1 and "record 000005" in r.stderr and "captions" in r.stderr, r.stderr


def test_probes_and_training_refuse_a_dataset_with_records_missing(tmp_path):
    out = tmp_path / "d"
    plan(out)
    lines = (out / "scenes.jsonl").read_text().splitlines()
    del lines[4]
    (out / "scenes.jsonl").write_text("\n".join(lines) + "\n")
    from comco.errors import UserError
    from comco.probes.probe_data import open_dataset

    with pytest.raises(UserError, match="000004"):
        open_dataset(out)
    pytest.importorskip("torch")
    from comco.train.data import load_comco

    with pytest.raises(UserError, match="000004"):
        load_comco(out, ["and"])
    r = run("probe", out, "--model", "ViT-S-32", "--pretrained", "none", "--probes", "tor", "--text-only",
            "--no-cache", "--quiet", "--out", tmp_path / "p")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "000004" in lines[0], r.stderr[-2000:]


def test_probes_refuse_a_dataset_with_records_repeated(tmp_path):
    out = tmp_path / "d"
    plan(out)
    lines = (out / "scenes.jsonl").read_text().splitlines()
    (out / "scenes.jsonl").write_text("\n".join(lines + lines[:2]) + "\n")
    from comco.errors import UserError
    from comco.probes.probe_data import open_dataset

    with pytest.raises(UserError, match="holds 14 records but dataset.json counts 12"):
        open_dataset(out)


def test_a_complete_dataset_is_accepted(tmp_path):
    out = tmp_path / "d"
    plan(out)
    from comco.probes.probe_data import open_dataset

    assert len(open_dataset(out).records) == 12


@pytest.fixture
def user_set(tmp_path):
    folder = tmp_path / "my-set"
    folder.mkdir()
    (folder / "objects.toml").write_text(USER_SET)
    return folder


@pytest.mark.parametrize("relative", [False, True])
def test_a_dataset_of_a_user_set_validates(tmp_path, user_set, relative):
    out = tmp_path / "d"
    where = user_set.name if relative else user_set  # relative: planned and validated from its parent
    r = run("plan", "--n", "12", "--objects", "2-3", "--singles", "--quiet", "--object-set", where, "--out", out,
            cwd=user_set.parent)
    assert r.returncode == 0, r.stderr
    r = run("validate", out, cwd=user_set.parent)
    assert r.returncode == 0, r.stderr


def test_the_probe_gallery_keeps_a_user_sets_objects_and_forms(tmp_path, user_set):
    out = tmp_path / "d"
    plan(out, "--object-set", user_set, "--objects", "2")
    from comco.probes.probe_data import open_dataset

    data = open_dataset(out)
    assert sorted(data.names) == ["ball", "block", "cone"]
    assert data.forms["block"] == ["blocks", "brick"] and data.forms["ball"] == ["balls", "orb"]
    assert data.object_set is not None and data.object_set.root == user_set.resolve()


TEMPLATES = '[stack]\nobject = "{a} {name}"\njoin = " on "\ncaption = "{objects}, stacked"\n'


def test_an_edited_templates_file_is_another_configuration(tmp_path):
    """Editing the --templates-file file and resuming used to mix two caption versions in one
    dataset; the file's content is now part of the configuration."""
    templates = tmp_path / "mine.toml"
    templates.write_text(TEMPLATES)
    out = tmp_path / "d"
    plan(out, "--templates-file", templates)
    first = (out / "scenes.jsonl").read_bytes()
    info = json.loads((out / "dataset.json").read_text())
    assert info["config"]["templates_text"] == TEMPLATES
    templates.write_text(TEMPLATES.replace("stacked", "piled up"))
    r = run("plan", "--n", "12", "--objects", "2-3", "--quiet", "--templates-file", templates, "--resume", "--out", out)
    assert r.returncode == 2 and "another configuration" in r.stderr, r.stderr
    assert (out / "scenes.jsonl").read_bytes() == first
    # The dataset stays valid on its own: its recorded templates plan its captions, whatever the file says now.
    templates.unlink()
    r = run("validate", out)
    assert r.returncode == 0, r.stderr
    from comco.probes.texts import template_book

    assert template_book(info).templates["stack"].caption == "{objects}, stacked"


def test_a_dataset_whose_captions_mix_two_template_versions_is_not_valid(tmp_path):
    """What resuming after an edit made before: the first records captioned by one version of
    the file, the rest by another. validate plans every record again and names them."""
    templates = tmp_path / "mine.toml"
    templates.write_text(TEMPLATES)
    a, b = tmp_path / "a", tmp_path / "b"
    plan(a, "--templates-file", templates)
    templates.write_text(TEMPLATES.replace("stacked", "piled up"))
    plan(b, "--templates-file", templates)
    mixed = (a / "scenes.jsonl").read_text().splitlines()[:6] + (b / "scenes.jsonl").read_text().splitlines()[6:]
    (b / "scenes.jsonl").write_text("\n".join(mixed) + "\n")
    r = run("validate", b)
    assert r.returncode == 1 and "record 000000" in r.stderr and "record 000005" in r.stderr, r.stderr
    assert "record 000006" not in r.stderr


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage", b"[1, 2]", b'{"config": '])
def test_a_corrupt_dataset_json_is_one_line_everywhere_and_overwrite_replaces_it(tmp_path, content):
    out = tmp_path / "d"
    plan(out)
    (out / "dataset.json").write_bytes(content)
    for args in (["plan", "--n", "12", "--objects", "2-3", "--quiet", "--out", out],
                 ["probe", out, "--model", "ViT-S-32", "--pretrained", "none", "--no-cache", "--quiet",
                  "--out", tmp_path / "p"]):
        r = run(*args)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and "dataset.json" in lines[0], r.stderr[-2000:]
    r = run("validate", out)
    assert r.returncode == 1 and "Traceback" not in r.stderr and "dataset.json" in r.stderr, r.stderr[-2000:]
    r = run("plan", "--n", "12", "--objects", "2-3", "--quiet", "--overwrite", "--out", out)
    assert r.returncode == 0, r.stderr
    assert run("validate", out).returncode == 0


def test_probes_refuse_records_that_are_not_scene_records(tmp_path):
    out = tmp_path / "d"
    plan(out)
    with open(out / "scenes.jsonl", "a") as f:
        f.write("[1, 2]\n")
    from comco.errors import UserError
    from comco.probes.probe_data import open_dataset

    with pytest.raises(UserError, match="record 13 is not a scene record"):
        open_dataset(out)


def fake_shards(tmp_path: Path, image: str) -> list[Path]:
    """Two 'rendered' shards of a planned dataset (painted, no Blender): shard 0's first record names `image`."""
    base = tmp_path / "base"
    plan(base)
    records = [json.loads(line) for line in (base / "scenes.jsonl").read_text().splitlines()]
    shards = []
    for i in range(2):
        s = tmp_path / f"shard{i}"
        mine = [paint(r, s / r["image"]) for r in records if r["index"] % 2 == i]  # merge validates each shard
        if i == 0:
            mine[0]["image"] = image
        (s / "scenes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mine))
        info = json.loads((base / "dataset.json").read_text())
        info.update(rendered=True)
        info["config"]["render"] = {"shard": [i, 2]}
        info["config_hash"] = config_hash(info["config"], info["object_set_hash"])
        info["counts"].update(rendered=len(mine), failed=0)
        (s / "dataset.json").write_text(json.dumps(info))
        shards.append(s)
    return shards


@pytest.mark.parametrize("image", ["images/../../../escaped.png", "ABSOLUTE", "images/a/../../x.png"])
def test_merge_never_writes_outside_its_out_folder(tmp_path, image):
    if image == "ABSOLUTE":
        image = str(tmp_path / "w" / "elsewhere" / "escaped.png")
    shards = fake_shards(tmp_path / "w", image)
    out = tmp_path / "w" / "merged"
    before = sorted(p.name for p in tmp_path.rglob("*"))
    r = run("dataset", "merge", *shards, "--out", out)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "record image" in lines[0], r.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.rglob("*") if p.name != "merged") == before
    r = run("validate", shards[0])
    assert r.returncode == 1 and "record image" in r.stderr


def test_merge_of_honest_fake_shards_works(tmp_path):
    shards = fake_shards(tmp_path, "images/000000.png")
    r = run("dataset", "merge", *shards, "--out", tmp_path / "merged")
    assert r.returncode == 0, r.stderr
    assert len((tmp_path / "merged" / "scenes.jsonl").read_text().splitlines()) == 12
