"""The wheel (a non-editable install) carries every module and data file comco needs."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_holds_code_and_data(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
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
