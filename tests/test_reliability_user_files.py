"""Files a user hands over are read defensively (issue 16, items 7 and 15): manifests, caption
templates, lab recipes and scene records that are not UTF-8, not TOML or of the wrong types end
with exit code 2 and one line naming the file and the key; object names are safe file-name
components; `--out` / `--cache` that is a file is refused before any work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from comco.errors import UserError

COMCO = [sys.executable, "-m", "comco.cli"]
RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"
MANIFEST = '''name = "mine"
default_color = "red"
[palette]
red = [0.7, 0.1, 0.1]
[[objects]]
name = "brick"
plural = "bricks"
article = "a"
synonyms = ["block"]
dimensions_m = [0.2, 0.1, 0.06]
size_class = "small"
colorable = true
source = "mesh:meshes/brick.obj"
yaw_range = 30

[[objects]]
name = "cube"
plural = "cubes"
article = "a"
dimensions_m = [1, 1, 1]
size_class = "medium"
colorable = true
source = "builder:simco.cube"
'''
MESH = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"


def run(*args, cwd=None):
    return subprocess.run([*COMCO, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def one_line(r) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, (r.returncode, r.stderr[-2000:])
    return lines[0]


def make_set(folder: Path, text: str = MANIFEST) -> Path:
    (folder / "meshes").mkdir(parents=True, exist_ok=True)
    (folder / "meshes" / "brick.obj").write_text(MESH)
    (folder / "objects.toml").write_text(text, encoding="utf-8")
    return folder


def swap(old: str, new: str, text: str = MANIFEST) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# ------------------------------------------------------------------------- manifests

@pytest.mark.parametrize("text, words", [
    (swap("[[objects]]\nname", "objects = [1, 2]\n[[nothing]]\nname"), ["objects"]),
    ('name = "mine"\nobjects = [1, 2]\n', ["objects[0]", "table"]),
    (swap("red = [0.7, 0.1, 0.1]", 'red = "red"'), ["palette colour 'red'"]),
    (swap("yaw_range = 30", 'yaw_range = "wide"'), ["brick", "yaw_range"]),
    (swap("yaw_range = 30", "yaw_range = true"), ["brick", "yaw_range"]),
    (swap("colorable = true", 'colorable = "no"'), ["brick", "colorable"]),
    (swap('synonyms = ["block"]', 'synonyms = "block"'), ["brick", "synonyms"]),
    (swap('synonyms = ["block"]', "synonyms = [1]"), ["brick", "synonyms"]),
    (swap('plural = "bricks"', "plural = 3"), ["brick", "plural"]),
    (swap('plural = "bricks"', 'plural = "{size} bricks"'), ["brick", "plural"]),
    (swap('size_class = "small"', 'size_class = "small"\ncolors = "red"'), ["brick", "colors"]),
    (swap('size_class = "small"', 'size_class = "small"\nmaterial = 7'), ["brick", "material"]),
    (swap("[0.2, 0.1, 0.06]", "[0.2, true, 0.06]"), ["brick", "dimensions_m"]),
    (swap('source = "mesh:meshes/brick.obj"', "source = 5"), ["brick", "source"]),
    (swap('name = "mine"', 'name = "mine"\nmaterials = "rubber"'), ["materials"]),
    (swap('name = "mine"', 'name = "mine"\ndescription = 4'), ["description"]),
    (swap('name = "mine"', 'name = "mine"\n[color_articles]\nred = "the"'), ["color_articles"]),
    (swap('name = "mine"', "name = 5"), ["set name"]),
    (swap('name = "mine"', 'name = "../mine"'), ["set name"]),
])
def test_a_manifest_of_wrong_types_names_the_file_and_the_key(tmp_path, text, words):
    from comco.manifest import load_object_set

    make_set(tmp_path, text)
    with pytest.raises(UserError) as err:
        load_object_set(tmp_path)
    assert str(tmp_path / "objects.toml") in str(err.value)
    for w in words:
        assert w in str(err.value), str(err.value)


@pytest.mark.parametrize("content", [MANIFEST.encode("utf-16"), b"name = \"caf\xe9\"\n", b"name = [\n"])
def test_a_manifest_that_is_not_utf8_toml_is_one_line(tmp_path, content):
    make_set(tmp_path)
    (tmp_path / "objects.toml").write_bytes(content)
    line = one_line(run("objects", "list", tmp_path))
    assert "objects.toml" in line


# ------------------------------------------------------------------------- object names (item 7)

@pytest.mark.parametrize("name", ["../../escaped", "sub/dir", "back\\slash", "..", ".hidden", "a..b", "tab\there",
                                  "bell\x07", "", " ", "000000", "1234567", " padded", "{color}"])
def test_unsafe_object_names_are_refused_naming_object_and_manifest(tmp_path, name):
    make_set(tmp_path, swap('name = "brick"', f"name = {json.dumps(name)}"))
    line = one_line(run("objects", "list", tmp_path))
    assert str(tmp_path / "objects.toml") in line and "objects[0]" in line and "name" in line, line


@pytest.mark.parametrize("name", ["../../escaped", "000000"])
def test_render_refuses_an_unsafe_name_before_writing_anything(tmp_path, name):
    folder = make_set(tmp_path / "deep" / "er" / "set", swap('name = "brick"', f"name = {json.dumps(name)}"))
    out = tmp_path / "deep" / "out"
    before = sorted(p for p in tmp_path.rglob("*"))
    line = one_line(run("render", "--object-set", folder, "--objects", "1", "--n", "1", "--singles", "--masks",
                        "--preset", "draft", "--resolution", "32", "--out", out))
    assert name in line and "objects.toml" in line
    assert sorted(p for p in tmp_path.rglob("*")) == before  # no image, mask or cached mesh anywhere


def test_names_must_differ_after_case_folding(tmp_path):
    from comco.manifest import load_object_set

    # Lower case is required already; casefold also folds what lower() keeps apart.
    make_set(tmp_path, swap('name = "cube"', 'name = "straße"', swap('name = "brick"', 'name = "strasse"')))
    with pytest.raises(UserError, match="duplicate object name 'straße'"):
        load_object_set(tmp_path)


def test_palette_and_default_colours_are_file_names_too(tmp_path):
    from comco.manifest import load_object_set

    for text in (swap("red = [0.7", '"../red" = [0.7'), swap('default_color = "red"', 'default_color = "x/y"')):
        make_set(tmp_path, text)
        with pytest.raises(UserError, match="objects.toml"):
            load_object_set(tmp_path)


@pytest.mark.parametrize("link", ["file", "folder"])
def test_meshes_reached_through_a_symbolic_link_outside_the_set_are_refused(tmp_path, link):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.obj").write_text(MESH)
    folder = make_set(tmp_path / "set")
    if link == "file":
        os.symlink(outside / "secret.obj", folder / "meshes" / "stolen.obj")
        ref = "meshes/stolen.obj"
    else:
        os.symlink(outside, folder / "elsewhere", target_is_directory=True)
        ref = "elsewhere/secret.obj"
    (folder / "objects.toml").write_text(swap("meshes/brick.obj", ref))
    line = one_line(run("objects", "list", folder))
    assert "leaves the set's folder" in line and "brick" in line
    # A link that stays inside the set is fine.
    os.symlink(folder / "meshes" / "brick.obj", folder / "meshes" / "alias.obj")
    (folder / "objects.toml").write_text(swap("meshes/brick.obj", "meshes/alias.obj"))
    assert run("objects", "list", folder).returncode == 0


def test_singles_of_a_safe_set_are_written_inside_their_folders(tmp_path):
    """Every file name derived from an object name (singles' images and masks) stays one
    component below its folder."""
    from comco.manifest import load_object_set
    from comco.plan import PlanConfig, Planner

    folder = make_set(tmp_path)
    planner = Planner(PlanConfig(object_set=str(folder), objects=(2,), n=1, colors=True), load_object_set(folder))
    for s in planner.singles():
        image = Path(s["image"])
        assert image.parent == Path("singles") and image.name == f"{s['id']}.png" and "/" not in s["id"]


# ------------------------------------------------------------------------- caption templates

GOOD_TEMPLATE = '[mine]\nobject = "{a} {name}"\njoin = " and "\ncaption = "{objects}"\n'
LONG_TEMPLATE = ('[story]\nkind = "long"\nobject = "{a} {name}"\njoin = ", "\ncaption = "A photo of {objects}."\n'
                 'sentences = ["The {name} is {size}."]\n')


@pytest.mark.parametrize("text, key", [
    (GOOD_TEMPLATE.replace('"{a} {name}"', '"{a} {nmae}"'), "mine.object"),
    (GOOD_TEMPLATE.replace('"{a} {name}"', '"{a} {name"'), "mine.object"),
    (GOOD_TEMPLATE.replace('"{a} {name}"', '"{a} name}"'), "mine.object"),
    (GOOD_TEMPLATE.replace('"{objects}"', '"{objects} {size}"'), "mine.caption"),
    (GOOD_TEMPLATE.replace('" and "', '" {and} "'), "mine.join"),
    (GOOD_TEMPLATE.replace('" and "', "3"), "mine.join"),
    (GOOD_TEMPLATE + 'requires = "color"\n', "mine.requires"),
    (GOOD_TEMPLATE + 'kind = "short"\n', "mine.kind"),
    (LONG_TEMPLATE.replace('["The {name} is {size}."]', '"The {name} is {size}."'), "story.sentences"),
    (LONG_TEMPLATE.replace('["The {name} is {size}."]', '["The {name} is {big}."]'), "story.sentences"),
    (LONG_TEMPLATE.replace('["The {name} is {size}."]', "[1]"), "story.sentences"),
    ('mine = "x"\n', "mine"),
    (GOOD_TEMPLATE + '[words.size]\none-large = "big"\n', "words.size.one-large"),
    (GOOD_TEMPLATE + '[words.size]\none-large = ["{name}", "small"]\n', "words.size.one-large"),
    (GOOD_TEMPLATE + '[words.position]\nM = 5\n', "words.position.M"),
])
def test_a_template_file_of_wrong_types_or_placeholders_names_the_file_and_the_key(tmp_path, text, key):
    from comco.plan.captions import load_templates

    f = tmp_path / "mine.toml"
    f.write_text(text)
    with pytest.raises(UserError) as err:
        load_templates(f)
    assert str(f) in str(err.value) and key in str(err.value), str(err.value)


@pytest.mark.parametrize("content", [GOOD_TEMPLATE.encode("utf-16"), b'[x]\nobject = "caf\xe9"\n', b"[x\n",
                                     GOOD_TEMPLATE.replace('"{a} {name}"', '"{a} {nmae}"').encode()])
def test_a_bad_template_file_ends_plan_with_one_line(tmp_path, content):
    f = tmp_path / "mine.toml"
    f.write_bytes(content)
    out = tmp_path / "d"
    line = one_line(run("plan", "--n", "2", "--objects", "2", "--templates-file", f, "--out", out))
    assert "mine.toml" in line
    assert not out.exists()


def test_good_templates_leave_no_braces_in_captions(tmp_path):
    from comco.manifest import load_object_set
    from comco.plan import PlanConfig, Planner

    f = tmp_path / "mine.toml"
    f.write_text(GOOD_TEMPLATE + LONG_TEMPLATE)
    planner = Planner(PlanConfig(n=20, objects=(2, 3), templates=str(f)), load_object_set("comco"))
    texts = [c for r in planner.records() for caps in r["captions"].values() for c in caps]
    assert texts and not [t for t in texts if "{" in t or "}" in t]


# ------------------------------------------------------------------------- lab recipes

def recipe(old: str, new: str) -> str:
    source = RECIPE.read_text(encoding="utf-8")
    assert old in source, old
    return source.replace(old, new, 1)


@pytest.mark.parametrize("content, key", [
    (recipe("orders = 4 ", 'orders = "four" ').encode(), "data.orders"),
    (recipe("seed = 0\n", "seed = 1.5\n").encode(), "data.seed"),
    (recipe('layout = "one-large"', "layout = 3").encode(), "data.layout"),
    (recipe('captions = ["and", "long"]', 'captions = "and"').encode(), "data.captions"),
    (recipe('object_sets = ["simco", "comco"]', "object_sets = [1, 2]").encode(), "data.object_sets[0]"),
    (recipe("order_bias = [0.0,", "order_bias = [true,").encode(), "data.order_bias[0]"),
    (RECIPE.read_text(encoding="utf-8").encode("utf-16"), "UTF-8"),
    (b"name = \"caf\xe9\"\n", "UTF-8"),
    (b"[data\n", "TOML"),
])
def test_a_recipe_of_wrong_types_names_the_file_or_the_key(tmp_path, content, key):
    f = tmp_path / "mine.toml"
    f.write_bytes(content)
    out = tmp_path / "run"
    line = one_line(run("lab", "run", f, "--scale", "smoke", "--out", out))
    assert key in line, line
    assert not out.exists() or not any(out.iterdir())


# ------------------------------------------------------------------------- scene records (validate)

@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    out = tmp_path_factory.mktemp("planned") / "d"
    r = run("plan", "--n", "6", "--objects", "2-3", "--quiet", "--out", out)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("bad, words", [
    ("[1, 2, 3]", ["record 3", "list"]),
    ('"a string"', ["record 3", "str"]),
    ("null", ["record 3"]),
    ("{}", ["record 3", "no id"]),
    ('{"id": "000002"}', ["record 000002", "missing field"]),
    ("OBJECT-WITHOUT-NAME", ["record 000002", "objects[0]", "'name'"]),
    ("OBJECTS-NOT-A-LIST", ["record 000002", "objects"]),
    ("CAPTIONS-A-LIST", ["record 000002", "captions"]),
    ("SCALE-A-STRING", ["record 000002"]),
])
def test_validate_reports_records_of_the_wrong_shape_without_crashing(planned, tmp_path, bad, words):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(planned, copy)
    lines = (copy / "scenes.jsonl").read_text().splitlines()
    rec = json.loads(lines[2])
    if bad == "OBJECT-WITHOUT-NAME":
        del rec["objects"][0]["name"]
    elif bad == "OBJECTS-NOT-A-LIST":
        rec["objects"] = {"name": "cup"}
    elif bad == "CAPTIONS-A-LIST":
        rec["captions"] = ["a cup"]
    elif bad == "SCALE-A-STRING":
        rec["objects"][0]["scale"] = "big"
    lines[2] = json.dumps(rec) if bad.isupper() else bad
    (copy / "scenes.jsonl").write_text("\n".join(lines) + "\n")
    r = run("validate", copy)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    for w in words:
        assert w in r.stderr, r.stderr


def test_a_scenes_file_with_bad_bytes_is_reported(planned, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(planned, copy)
    with open(copy / "scenes.jsonl", "ab") as f:
        f.write(b'{"id": "caf\xe9"}\n')
    r = run("validate", copy)
    assert r.returncode == 1 and "Traceback" not in r.stderr and "scenes.jsonl:7" in r.stderr, r.stderr


# ------------------------------------------------------------------------- --out / --cache that is a file

@pytest.mark.parametrize("args", [
    ["plan", "--n", "2", "--out", "{file}"],
    ["plan", "--n", "2", "--out", "{file}/below"],
    ["render", "--n", "1", "--objects", "1", "--out", "{file}"],
    ["probe", "{data}", "--model", "ViT-S-32", "--pretrained", "none", "--text-only", "--no-cache", "--out", "{file}"],
    ["probe", "{data}", "--model", "ViT-S-32", "--pretrained", "none", "--text-only", "--cache", "{file}",
     "--out", "{fresh}"],
    ["train", "scratch", "--data", "{data}", "--steps", "1", "--out", "{file}"],
    ["eval", "retrieval", "--benchmark", "coco", "--root", "{data}", "--model", "ViT-S-32", "--pretrained", "none",
     "--out", "{file}"],
    ["eval", "retrieval", "--benchmark", "coco", "--root", "{data}", "--model", "ViT-S-32", "--pretrained", "none",
     "--cache", "{file}", "--out", "{fresh}"],
    ["dataset", "merge", "{data}", "--out", "{file}"],
    ["lab", "run", "order-bias", "--scale", "smoke", "--out", "{file}"],
    ["objects", "preview", "simco", "--out", "{file}/sheets"],
    ["objects", "show", "simco", "cube", "--out", "{file}"],
    ["dataset", "sheet", "{data}", "--out", "{file}"],
])
def test_an_output_or_cache_that_is_a_file_is_refused_before_any_work(planned, tmp_path, args):
    file = tmp_path / "a-file"
    file.write_text("precious")
    fresh = tmp_path / "fresh"
    line = one_line(run(*[a.format(file=file, data=planned, fresh=fresh) for a in args]))
    assert "a-file" in line or str(planned) in line, line
    assert file.read_text() == "precious" and not fresh.exists()


def test_two_singles_that_would_share_a_file_name_are_refused(tmp_path):
    """Object 'ball' in colour 'dark-red' and object 'ball-dark' in colour 'red' would both be
    singles/ball-dark-red.png (and the same mask): one would overwrite the other."""
    from comco.manifest import load_object_set
    from comco.plan import PlanConfig, Planner

    text = swap('name = "cube"', 'name = "ball-dark"', swap('name = "brick"', 'name = "ball"'))
    text = swap("red = [0.7, 0.1, 0.1]", 'red = [0.7, 0.1, 0.1]\ndark-red = [0.4, 0.0, 0.0]', text)
    folder = make_set(tmp_path, text)
    oset = load_object_set(folder)
    Planner(PlanConfig(object_set=str(folder), objects=(2,), n=1), oset).singles()  # no colours: no clash
    with pytest.raises(UserError, match="ball-dark-red.png"):
        Planner(PlanConfig(object_set=str(folder), objects=(2,), n=1, colors=True), oset).singles()
