"""The layout of DESIGN.md as a test: a file's folder says what it may import.

Every import in the tree (module level or inside a function) is read with `ast` and
checked against the table below; the CLI and the lab reach other packages only through
their doors (the names a package's __init__ gives), and ruff keeps the tree clean.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# folder in the checkout -> its package
FOLDERS = {"comco": "comco", "scenes": "comco.scenes", "probes": "comco.probes", "train": "comco.train",
           "assets": "comco.assets", "recipes": "comco.recipes"}
LAYERS = ("core", "plan", "data", "render", "models", "report", "scenes", "probes", "train", "lab", "cli")
# layer -> the comco layers it may import (its own included)
MAY_IMPORT = {
    "core": {"core"},
    "plan": {"core", "plan"},
    "data": {"core", "plan", "data"},
    "render": {"core", "plan", "data", "render", "scenes"},  # scenes only as the worker processes' entry
    "models": {"core", "models"},
    "report": {"core", "report"},
    "scenes": {"core", "plan", "scenes"},
    "probes": {"core", "plan", "data", "models", "report", "probes"},
    "train": {"core", "plan", "data", "models", "report", "probes", "train"},
    "lab": set(LAYERS) - {"cli"},
    "cli": set(LAYERS),
}
HEAVY = {"torch", "open_clip", "transformers", "torchvision"}
# third-party libraries a layer may import at all (the rest of the stdlib and numpy, PIL,
# orjson, rich and typer are open to every layer that needs them)
ONLY_IN = {"bpy": {"scenes"}, "mathutils": {"scenes"}, "bmesh": {"scenes"}, "matplotlib": {"report"},
           **{h: {"models", "probes", "train", "lab"} for h in HEAVY}}
DOORS_ONLY = {"cli", "lab"}  # these use other packages' doors, never their submodules


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("assets", "recipes"):
        return "core"
    if parts[1] in LAYERS:
        return parts[1]
    return "core"  # comco/record.py, io.py, errors.py, ...: the core modules


def is_door(module: str) -> bool:
    """A package (its __init__.py names what others may use), not one of its modules."""
    parts = module.split(".")
    folder = {v: k for k, v in FOLDERS.items()}
    for n in range(len(parts), 0, -1):
        head = ".".join(parts[:n])
        if head in folder:
            return (ROOT / folder[head] / Path(*parts[n:]) / "__init__.py").is_file()
    return False


def modules():
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            name = ".".join([package, *rel.parts]).removesuffix(".__init__")
            yield name, path


def imports(path: Path, module: str):
    """(imported module, imported name or None, inside a function?) for every import."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                for a in child.names:
                    yield a.name, None, inner
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(up + ([base] if base else []))
                for a in child.names:
                    yield base, a.name, inner
            yield from walk(child, inner)

    yield from walk(tree, False)


ALL = list(modules())


def test_the_table_covers_every_module():
    assert len(ALL) > 100
    assert {layer_of(m) for m, _ in ALL} == set(LAYERS)


@pytest.mark.parametrize("module,path", ALL, ids=[m for m, _ in ALL])
def test_module_imports_only_what_its_layer_may(module, path):
    me = layer_of(module)
    bad = []
    for target, _name, in_function in imports(path, module):
        top = target.split(".")[0]
        if top == "comco":
            them = layer_of(target)
            if them not in MAY_IMPORT[me]:
                bad.append(f"{target} ({them} is above or beside {me})")
            elif me in DOORS_ONLY and them not in (me, "core") and not is_door(target):
                bad.append(f"{target}: {me} uses the door comco.{them}, not its modules")
            elif me == "render" and them == "scenes" and not (target == "comco.scenes.worker" and in_function):
                bad.append(f"{target}: render reaches bpy code only through the worker, in the worker process")
        elif top in ONLY_IN and me not in ONLY_IN[top]:
            bad.append(f"{target} (only {', '.join(sorted(ONLY_IN[top]))} may import it)")
        elif top in HEAVY | {"bpy"} and not in_function and me not in ("models", "probes", "train", "scenes"):
            bad.append(f"{target} at import time (load it inside the function that needs it)")
    assert not bad, f"{module}: " + "; ".join(bad)


def test_doors_name_only_what_exists():
    import importlib

    for module, path in ALL:
        if path.name != "__init__.py" or module.count(".") != 1:
            continue
        pkg = importlib.import_module(module)
        for name in getattr(pkg, "__all__", []):
            assert getattr(pkg, name) is not None, f"{module}.{name}"


def test_importing_comco_and_its_doors_loads_neither_torch_nor_bpy():
    code = ("import sys, comco, comco.plan, comco.data, comco.render, comco.models, comco.report, comco.lab, "
            "comco.probes, comco.train, comco.cli.app; "
            "from comco.plan import Planner; from comco.data import Dataset; from comco.lab import load_recipe; "
            "print(sorted(m for m in ('torch', 'bpy', 'open_clip', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_ruff_is_clean():
    # ruff comes with the test extra; its rules are in pyproject.toml
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
