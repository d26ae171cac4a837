"""The wheel (a non-editable install) carries every module and data file comco needs, and
builds quietly: every folder that ships data is a declared package with patterns that match
its files, so setuptools has nothing to warn about ("Package would be ignored")."""

import subprocess
import sys
import tomllib
import zipfile
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_wheel_holds_code_and_data(tmp_path):
    # -v: pip shows what setuptools says while building (with -q it would hide it here)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                        "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "would be ignored" not in r.stdout + r.stderr and "is absent from the `packages`" not in r.stdout + r.stderr
    wheel = next(tmp_path.glob("comco-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in ("comco/cli/app.py", "comco/plan/captions.toml", "comco/assets/comco/objects.toml",
                     "comco/assets/simco/objects.toml", "comco/scenes/worker.py", "comco/scenes/builders/simco.py",
                     "comco/probes/tor.py", "comco/train/loop.py", "comco/data/export/run.py",
                     "comco/probes/natural/coco_synonyms.toml"):
        assert required in names, required
    for folder, package in (("scenes", "comco/scenes"), ("probes", "comco/probes"), ("train", "comco/train"),
                            ("scenes/builders", "comco/scenes/builders")):
        for py in (ROOT / folder).glob("*.py"):
            assert f"{package}/{py.name}" in names, py
    for recipe in (ROOT / "recipes").glob("*.toml"):
        assert f"comco/recipes/{recipe.name}" in names, recipe
    assert not any(n.startswith(("train/", "probes/", "scenes/")) for n in names)  # no top-level modules


def test_installed_wheel_finds_its_object_sets(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path / "w"), str(ROOT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    wheel = next((tmp_path / "w").glob("comco-*.whl"))
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    # -S: no site-packages, so neither the source tree nor the editable install can answer.
    code = ("import sys; sys.path.insert(0, %r); from comco.manifest import load_object_set, builtin_sets;"
            "print(builtin_sets(), len(load_object_set('comco').objects), load_object_set('simco').hash)" % str(site))
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    from comco.manifest import load_object_set

    assert out.stdout.split() == ["['comco',", "'simco']", "72", load_object_set("simco").hash]


def folder_of(package: str) -> Path:
    """Where setuptools finds a package, by the longest package-dir prefix."""
    dirs = CONFIG["package-dir"]
    prefix = max((p for p in dirs if package == p or package.startswith(p + ".")), key=len)
    return ROOT / dirs[prefix] / Path(*package[len(prefix):].strip(".").split(".") if package != prefix else ())


def test_every_data_folder_is_a_declared_package():
    packages = set(CONFIG["packages"])
    for package in packages:
        folder = folder_of(package)
        assert folder.is_dir(), package
        for sub in folder.iterdir():
            ships = sub.is_dir() and not sub.name.startswith((".", "_")) and any(
                f.is_file() and f.suffix != ".py" for f in sub.iterdir())
            if ships and not (sub / "__init__.py").exists():
                # setuptools warns about (and will stop shipping) data in an undeclared sub-package
                assert f"{package}.{sub.name}" in packages, f"{sub} ships data but is not a declared package"


def test_every_built_in_set_and_recipe_is_package_data():
    data = CONFIG["package-data"]
    for manifest in (ROOT / "assets").glob("*/objects.toml"):
        package = f"comco.assets.{manifest.parent.name}"
        files = [f.name for f in manifest.parent.iterdir() if f.is_file()]
        assert all(any(fnmatch(name, p) for p in data.get(package, [])) for name in files), package
    assert any(fnmatch("order-bias.toml", p) for p in data["comco.recipes"])
