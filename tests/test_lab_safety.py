"""Lab recipes that would write outside the run folder, and values that would fail only
once the run is under way: each is refused with exit code 2 and one line naming the
recipe key, before lab.json or stages/ is written (pure Python, except the GPU check)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from comco.errors import UserError
from comco.lab.graph import Stage, build_stages
from comco.lab.keys import StageKey, finetune_key, stage_folder
from comco.lab.recipe import load_recipe, parse_recipe

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"


def edit(old: str, new: str) -> str:
    source = RECIPE.read_text(encoding="utf-8")
    assert old in source, old
    return source.replace(old, new, 1)


def lab_run(tmp_path: Path, source: str, scale: str = "smoke") -> tuple[subprocess.CompletedProcess, Path]:
    recipe = tmp_path / "mine.toml"
    recipe.write_text(source, encoding="utf-8")
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(recipe), "--out", str(out),
                        "--scale", scale, "--quiet"], capture_output=True, text=True, timeout=300)
    return r, out


def one_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_a_variant_name_that_climbs_out_of_the_run_folder_is_refused(tmp_path):
    r, out = lab_run(tmp_path, edit('name = "longclip"\nkind = "longclip"',
                                    'name = "../../../../../x"\nkind = "longclip"'))
    line = one_line(r)
    assert "recipe key 'finetune.variants[0].name'" in line and "../../../../../x" in line
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.toml"]  # nothing beside it either


@pytest.mark.parametrize("old,new,key", [
    ('name = "debias"\nkind', 'name = ".hidden"\nkind', "finetune.variants[2].name"),
    ('name = "debias"\nkind', 'name = "a/b"\nkind', "finetune.variants[2].name"),
    ('name = "debias"\nkind', 'name = "a\\\\b"\nkind', "finetune.variants[2].name"),
    ('object_sets = ["simco", "comco"]', 'object_sets = ["simco", "../assets/comco"]', "data.object_sets[1]"),
    ('object_sets = ["simco", "comco"]', 'object_sets = ["simco", "/tmp/x"]', "data.object_sets[1]"),
])
def test_every_recipe_string_in_a_stage_id_is_one_safe_name(old, new, key):
    with pytest.raises(UserError) as err:
        parse_recipe(edit(old, new), "full")
    assert f"recipe key '{key}'" in str(err.value) and "\n" not in str(err.value)


def test_a_stage_folder_is_checked_where_it_is_made(tmp_path):
    """Whatever made the key, its folder must be one plain folder inside OUT/stages."""
    assert stage_folder(tmp_path, "scratch-simco-p1-s0") == tmp_path / "stages" / "scratch-simco-p1-s0"
    for bad in ("../x", "..", "", "a/b", "/etc", "a\\b"):
        with pytest.raises(UserError, match="outside"):
            stage_folder(tmp_path, bad)
    with pytest.raises(UserError, match="outside"):
        Stage(finetune_key("simco", "../../x", 0), {}).folder(tmp_path)
    # a stage folder that is a link out of the run folder is never written through (nor deleted)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.txt").write_text("keep")
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "render-train-simco").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UserError, match="link"):
        stage_folder(tmp_path, "render-train-simco")


def test_a_run_refuses_a_bad_stage_folder_before_it_writes_anything(tmp_path, monkeypatch):
    """The run checks every folder before it claims OUT, whatever the graph holds."""
    import comco.lab.run as run

    recipe = load_recipe(RECIPE, "smoke")
    real = build_stages(recipe)
    sneaky = Stage(StageKey("finetune", "simco", variant="../../../outside", seed=0), {})
    monkeypatch.setattr(run, "build_stages", lambda r: [*real, sneaky])
    out = tmp_path / "run"
    with pytest.raises(UserError, match="outside"):
        run.run_lab(recipe, out, quiet=True)
    assert not out.exists() and not (tmp_path / "outside").exists()


@pytest.mark.parametrize("old,new,key", [
    ('large_slot = "random"', 'large_slot = "XX"', "data.large_slot"),
    ('large_slot = "random"', 'large_slot = "M,XL"', "data.large_slot"),  # blanks dropped, unknown refused
    # a set of one object cannot hold the 3- and 4-object test scenes
    ('object_sets = ["simco"]\ntrain_images = 48', 'object_sets = ["ONE"]\ntrain_images = 48', "data.test_objects"),
    ("batch_size = 16\nsteps = 4", "batch_size = 60\nsteps = 4", "scratch.batch_size"),  # 48 training images
    ("batch_size = 8\nwarmup = 1", "batch_size = 50\nwarmup = 1", "finetune.batch_size"),
    ("steps = 3\nbatch_size = 16", "steps = 3\nbatch_size = 30", "labclip.batch_size"),  # 24 map images
    ("train_images = 48", "train_images = 1e12", "scales.smoke.data.train_images"),
    ("train_images = 48", "train_images = 1000000000000", "scales.smoke.data.train_images"),
    ("steps = 4\nwarmup = 1", "steps = 1000000000000\nwarmup = 1", "scales.smoke.scratch.steps"),
    ("steps = 4\nwarmup = 1", "steps = 1e12\nwarmup = 1", "scales.smoke.scratch.steps"),
    ("seeds = [0, 1]\nwidth", f"seeds = [0, {2 ** 63}]\nwidth", "scales.smoke.scratch.seeds[1]"),
    ("test_seed = 1\n", f"test_seed = {2 ** 63}\n", "data.test_seed"),
    ("seed = 0\ntest_seed", f"seed = {2 ** 63 - 5}\ntest_seed", "data.seed"),  # the colour renders add to it
    ('stages = ["render", "captions", "scratch", "probe", "finetune", "analyses", "labclip", "report"]\n\n'
     '[scales.smoke.data]', 'stages = ["report"]\n\n[scales.smoke.data]', "stages"),
])
def test_every_recipe_value_is_checked_before_the_run_folder_is_claimed(tmp_path, old, new, key):
    source = edit(old, new)
    if '"ONE"' in source:  # a one-object set of the user's own, next to the recipe
        from comco.manifest import resolve_set_dir

        source = source.replace("train_objects = [1, 2, 3, 4]", "train_objects = [1]", 1)

        one = tmp_path / "ONE"
        one.mkdir()
        manifest = (resolve_set_dir("simco") / "objects.toml").read_text(encoding="utf-8")
        head, _, rest = manifest.partition("[[objects]]")
        first = "[[objects]]" + rest.split("[[objects]]")[0]
        (one / "objects.toml").write_text(head.replace('name = "simco"', 'name = "ONE"') + first)
    recipe = tmp_path / "mine.toml"
    recipe.write_text(source, encoding="utf-8")
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(recipe), "--out", str(out),
                        "--scale", "smoke", "--quiet"], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)  # a bare set name is also a folder of the working directory
    line = one_line(r)
    assert f"recipe key '{key}'" in line, line
    assert "--" not in line.split("recipe key")[0]  # names the key, not a command-line flag
    assert not out.exists()


def test_a_recipe_nested_5000_deep_is_one_line(tmp_path):
    r, out = lab_run(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested too deeply" in one_line(r)
    assert not out.exists()


@pytest.mark.torch
def test_cuda_without_a_gpu_is_refused_before_the_folder_is_claimed(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    import comco.lab.run as run

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    recipe = parse_recipe(edit('[scales.smoke.run]\ndevice = "cpu"', '[scales.smoke.run]\ndevice = "cuda"'),
                          "smoke")
    out = tmp_path / "run"
    with pytest.raises(UserError, match="recipe key 'run.device'"):
        run.run_lab(recipe, out, quiet=True)
    assert not out.exists()
