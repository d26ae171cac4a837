"""Manifests: the two built-in sets load and hash; bad manifests fail with one line."""


import pytest

from comco.errors import UserError
from comco.manifest import load_object_set

GOOD = '''name = "mine"
[[objects]]
name = "brick"
plural = "bricks"
article = "a"
dimensions_m = [0.2, 0.1, 0.06]
size_class = "small"
colorable = true
source = "mesh:brick.obj"
'''


def write(tmp_path, text, mesh=True):
    (tmp_path / "objects.toml").write_text(text)
    if mesh:
        (tmp_path / "brick.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    return tmp_path


def test_builtin_sets_load_with_stable_hash():
    a, b = load_object_set("comco"), load_object_set("comco")
    assert a.hash == b.hash and len(a.hash) == 16
    assert load_object_set("simco").hash != a.hash
    car = a.get("car")
    assert car.size_class == "medium" and car.longest_m == 4.5 and car.colorable


def test_user_set_loads_from_a_folder(tmp_path):
    s = load_object_set(write(tmp_path, GOOD))
    assert s.names == ["brick"] and s.get("brick").source_ref == "brick.obj"


def test_hash_covers_mesh_bytes(tmp_path):
    h1 = load_object_set(write(tmp_path, GOOD)).hash
    (tmp_path / "brick.obj").write_text("v 0 0 0\nv 2 0 0\nv 0 1 0\nf 1 2 3\n")
    assert load_object_set(tmp_path).hash != h1


@pytest.mark.parametrize("change, message", [
    (lambda t: t.replace('plural = "bricks"\n', ""), "missing field 'plural'"),
    (lambda t: t + 'colour = "red"\n', "unknown key 'colour'"),
    (lambda t: t + t[t.index("[[objects]]"):], "duplicate object name 'brick'"),
    (lambda t: t.replace("mesh:brick.obj", "mesh:../brick.obj"), "leaves the set's folder"),
    (lambda t: t.replace("mesh:brick.obj", "mesh:/etc/brick.obj"), "is absolute"),
    (lambda t: t.replace("mesh:brick.obj", "mesh:nothere.obj"), "not found"),
    (lambda t: t.replace('size_class = "small"', 'size_class = "large"'), "disagrees"),
    (lambda t: t.replace('article = "a"', 'article = "the"'), "article"),
    (lambda t: t.replace("[0.2, 0.1, 0.06]", "[0.2, 0, 0.06]"), "positive"),
    (lambda t: t + "fill = 0\n", "fill must be a share"),
    (lambda t: t + "fill = 1.5\n", "fill must be a share"),
    (lambda t: t + 'fill = "dense"\n', "fill must be a share"),
    (lambda t: t + "fill = true\n", "fill must be a share"),
])
def test_bad_manifests(tmp_path, change, message):
    write(tmp_path, change(GOOD))
    with pytest.raises(UserError, match=message):
        load_object_set(tmp_path)


def test_unknown_set_names_the_builtins():
    with pytest.raises(UserError, match="comco, simco"):
        load_object_set("nosuchset")


def test_unknown_object_suggests(tmp_path):
    with pytest.raises(UserError, match="did you mean"):
        load_object_set("comco").get("carot")


def test_fills_are_written_into_the_manifest_text_as_it_is(tmp_path):
    from comco.manifest import write_fills

    text = GOOD.replace('name = "mine"\n', '# my bricks\nname = "mine"\n') + (
        '\n[[objects]]\nname = "slab"  # flat\nplural = "slabs"\narticle = "a"\ndimensions_m = [0.4, 0.3, 0.02]\n'
        'size_class = "small"\ncolorable = true\nsource = "mesh:brick.obj"\nfill = 0.5\n\n# the end\n')
    write(tmp_path, text)
    write_fills(tmp_path / "objects.toml", {"brick": 0.8123, "slab": 0.95})
    s = load_object_set(tmp_path)
    assert s.get("brick").fill == 0.812 and s.get("slab").fill == 0.95
    new = (tmp_path / "objects.toml").read_text()
    assert "# my bricks" in new and "# flat" in new and new.rstrip().endswith("# the end")
    assert new.count("fill =") == 2
    with pytest.raises(UserError, match="fill must be a share"):
        write_fills(tmp_path / "objects.toml", {"brick": 2.0})
    assert load_object_set(tmp_path).get("brick").fill == 0.812  # a bad value never reaches the file


def test_objects_validate_names_every_manifest_problem_in_one_run(tmp_path):
    """Issue 37 item 5: a manifest with four problems in two objects and the set used to be fixed
    one run at a time (the first problem only); one run now names all four, in one line."""
    import subprocess
    import sys

    text = GOOD.replace('article = "a"', 'article = "the"').replace('size_class = "small"', 'size_class = "huge"')
    text += '''
[[objects]]
name = "slab"
plural = "slabs"
article = "a"
dimensions_m = [0.2, 0.1, 0.06]
size_class = "small"
colorable = "no"
source = "mesh:missing.obj"
'''
    text = text.replace('name = "mine"', 'name = "mine"\ncolour = "red"')
    write(tmp_path, text)
    with pytest.raises(UserError) as err:
        load_object_set(tmp_path)
    line = str(err.value)
    assert "5 problems" in line and "\n" not in line
    for words in ("unknown key 'colour'", "(brick): article must be 'a' or 'an'", "(brick): size_class must be",
                  "(slab): key 'colorable' must be true or false", "(slab): mesh file 'missing.obj' not found"):
        assert words in line, words
    r = subprocess.run([sys.executable, "-m", "comco.cli", "objects", "validate", str(tmp_path)],
                       capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and all(w in lines[0] for w in ("colour", "article", "missing.obj"))
