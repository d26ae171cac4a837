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
LAYERS = ("core", "plan", "data", "render", "models", "report", "scenes", "probes", "train", "lab", "api", "cli")
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
    "lab": set(LAYERS) - {"api", "cli"},
    "api": set(LAYERS) - {"cli"},  # comco/api.py: the public functions (comco.__all__), over the package doors
    "cli": set(LAYERS),
}
HEAVY = {"torch", "open_clip", "transformers", "torchvision"}
# third-party libraries a layer may import at all (the rest of the stdlib and numpy, PIL,
# orjson, rich and typer are open to every layer that needs them)
ONLY_IN = {"bpy": {"scenes"}, "mathutils": {"scenes"}, "bmesh": {"scenes"}, "matplotlib": {"report"},
           **{h: {"models", "probes", "train", "lab"} for h in HEAVY}}
DOORS_ONLY = {"cli", "lab", "api"}  # these use other packages' doors, never their submodules


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("assets", "recipes"):
        return "core"
    if parts[1] in LAYERS:
        return parts[1]
    return "core"  # comco/record.py, io.py, errors.py, ...: the core modules


def source_of(module: str) -> Path | None:
    """The file of a comco module or package in the checkout (None when there is none)."""
    parts = module.split(".")
    folder = {v: k for k, v in FOLDERS.items()}
    for n in range(len(parts), 0, -1):
        head = ".".join(parts[:n])
        if head in folder:
            base = ROOT / folder[head] / Path(*parts[n:])
            for path in (base / "__init__.py", base.with_suffix(".py")):
                if path.is_file():
                    return path
            return None
    return None


def is_door(module: str) -> bool:
    """A package (its __init__.py names what others may use), not one of its modules."""
    path = source_of(module)
    return path is not None and path.name == "__init__.py"


def door_names(package: str) -> set[str] | None:
    """The names a package's lazy door gives (None: the package has no lazy door)."""
    import importlib

    getter = getattr(importlib.import_module(package), "__getattr__", None)
    return set(getter.names) if getter is not None and hasattr(getter, "names") else None


def modules():
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            name = ".".join([package, *rel.parts]).removesuffix(".__init__")
            yield name, path


DYNAMIC = "<dynamic>"  # an import whose module name the source does not spell out
IMPORTERS = {"import_module", "__import__"}  # importlib.import_module(name), __import__(name)


def _dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _called_module(call: ast.Call) -> str | None:
    """The module an import_module / __import__ call loads: its literal name, the literal
    package before an f-string's first field ("comco.data.export." -> comco.data.export), or DYNAMIC."""
    name = _dotted(call.func)
    if name is None or name.split(".")[-1] not in IMPORTERS or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        head = str(arg.values[0].value)
        return head.rpartition(".")[0] or DYNAMIC
    return DYNAMIC


COMPUTED = "*"  # the name of a module imported as f"package.{...}": some module of that package


def imports_in(tree: ast.AST, module: str, is_package: bool):
    """(imported module, imported name or None, inside a function?) for every import: import
    statements, `from package import submodule` (the submodule is what is imported) and
    importlib.import_module / __import__ calls; an attribute chain comco.x.y as module comco.x.y, or
    as the name y of comco.x."""
    package = module if is_package else module.rpartition(".")[0]

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
                    gives = door_names(base) if base.startswith("comco") and is_door(base) else None
                    if a.name not in (gives or ()) and base.startswith("comco") and source_of(f"{base}.{a.name}"):
                        yield f"{base}.{a.name}", None, inner  # from comco import lab: the package comco.lab
                    else:
                        yield base, a.name, inner
            elif isinstance(child, ast.Call) and (called := _called_module(child)) is not None:
                computed = isinstance(child.args[0], ast.JoinedStr) and called != DYNAMIC
                yield called, COMPUTED if computed else None, inner
            elif isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Load):
                chain = _dotted(child)
                parts = chain.split(".") if chain else []
                if len(parts) == 3 and parts[0] == "comco" and source_of(".".join(parts[:2])) is not None:
                    if source_of(chain) is not None:
                        yield chain, None, inner  # comco.models.openclip: that module
                    else:
                        yield ".".join(parts[:2]), parts[2], inner
            yield from walk(child, inner)

    yield from walk(tree, False)


def imports(path: Path, module: str):
    return imports_in(ast.parse(path.read_text()), module, path.name == "__init__.py")


# Modules that import by a computed name (the layer test cannot read whom): the door machinery
# and the builder registry, which loads the modules of its own package.
DYNAMIC_OK = {"comco.lazy", "comco.scenes.registry"}
# Packages reached only through their door, from every other layer: comco/models/__init__.py
# names what the rest of comco may use of the model code.
DOOR_FOR_ALL = {"comco.models"}


def problems(module: str, tree: ast.AST, is_package: bool = False) -> list[str]:
    """What is wrong with the imports of `module` (parsed as `tree`), one line each."""
    me = layer_of(module)
    bad = []
    for target, name, in_function in imports_in(tree, module, is_package):
        top = target.split(".")[0]
        door = next((d for d in DOOR_FOR_ALL if target == d or target.startswith(d + ".")), None)
        if target == DYNAMIC:
            if module not in DYNAMIC_OK:
                bad.append("an import by a computed name (spell the module out, or its package before the f-string)")
        elif top == "comco":
            them = layer_of(target)
            if them not in MAY_IMPORT[me]:
                bad.append(f"{target} ({them} is above or beside {me})")
            elif me in DOORS_ONLY and them not in (me, "core") and not is_door(target):
                bad.append(f"{target}: {me} uses the door comco.{them}, not its modules")
            elif door and them != me and target != door:
                bad.append(f"{target}: {door}'s internals; use the names its door gives")
            elif door and them != me and name is not None and name not in door_names(door):
                bad.append(f"{door}.{name}: not a name {door}'s door gives")
            elif me == "render" and them == "scenes" and not (target == "comco.scenes.worker" and in_function):
                bad.append(f"{target}: render reaches bpy code only through the worker, in the worker process")
        elif top in ONLY_IN and me not in ONLY_IN[top]:
            bad.append(f"{target} (only {', '.join(sorted(ONLY_IN[top]))} may import it)")
        elif top in HEAVY | {"bpy"} and not in_function and me not in ("models", "probes", "train", "scenes"):
            bad.append(f"{target} at import time (load it inside the function that needs it)")
    return bad


ALL = list(modules())


def test_the_table_covers_every_module():
    assert len(ALL) > 100
    assert {layer_of(m) for m, _ in ALL} == set(LAYERS)


@pytest.mark.parametrize("module,path", ALL, ids=[m for m, _ in ALL])
def test_module_imports_only_what_its_layer_may(module, path):
    bad = problems(module, ast.parse(path.read_text()), path.name == "__init__.py")
    assert not bad, f"{module}: " + "; ".join(bad)


# Imports a review planted (issue 23): each must be found, and the good ones beside them not.
PLANTED = [
    ("comco.plan.x", "from comco import lab", "comco.lab (lab is above or beside plan)"),
    ("comco.data.x", "from comco import render as r", "comco.render (render is above or beside data)"),
    ("comco.plan.x", "import importlib\ndef f():\n    return importlib.import_module('comco.lab')",
     "comco.lab (lab is above or beside plan)"),
    ("comco.plan.x", "from importlib import import_module\nm = import_module('comco.probes.tor')",
     "comco.probes.tor (probes is above or beside plan)"),
    ("comco.data.x", "m = __import__('comco.train')", "comco.train (train is above or beside data)"),
    ("comco.data.x", "import importlib\nm = importlib.import_module(f'comco.lab.{name}')",
     "comco.lab (lab is above or beside data)"),
    ("comco.plan.x", "import importlib\nm = importlib.import_module(name)", "a computed name"),
    ("comco.probes.x", "from comco.models.openclip import padding_is_inert", "comco.models.openclip: comco.models's"),
    ("comco.probes.x", "from comco.models import openclip", "comco.models.openclip: comco.models's"),
    ("comco.train.x", "import comco.models.factory", "comco.models.factory: comco.models's"),
    ("comco.probes.x", "from comco.models import _resolve", "comco.models._resolve: not a name"),
    ("comco.probes.x", "import comco.models\ndef f():\n    return comco.models.openclip.x",
     "comco.models.openclip: comco.models's"),
    ("comco.probes.x", "import importlib\nm = importlib.import_module('comco.models.hf')",
     "comco.models.hf: comco.models's"),
    ("comco.probes.x", "import importlib\nm = importlib.import_module(f'comco.models.{kind}')",
     "comco.models.*: not a name"),
]


@pytest.mark.parametrize("module, source, found", PLANTED, ids=[p[1].splitlines()[-1][:40] for p in PLANTED])
def test_a_planted_bad_import_is_found(module, source, found):
    bad = problems(module, ast.parse(source))
    assert any(found in b for b in bad), bad


@pytest.mark.parametrize("module, source", [
    ("comco.plan.x", "from comco import errors, record"),
    ("comco.lab.x", "from comco import plan\nimport importlib\nm = importlib.import_module('comco.data')"),
    ("comco.probes.x", "from comco.models import load_model, ModelRef\nimport comco.models"),
    ("comco.models.x", "from comco.models.openclip import padding_is_inert"),
    ("comco.data.x", "import importlib\nm = importlib.import_module(f'comco.data.export.{name}')"),
])
def test_the_allowed_imports_beside_them_pass(module, source):
    assert problems(module, ast.parse(source)) == []


def test_no_modules_import_each_other():
    """No import circle between comco's modules (at module level or inside functions): a circle
    makes which module loads first decide whether a name exists yet."""
    names = {m for m, _ in ALL}
    graph = {m: set() for m in names}
    for module, path in ALL:
        for target, name, _ in imports(path, module):
            if name is not None and name != COMPUTED and f"{target}.{name}" in names:
                target = f"{target}.{name}"
            if target in names and target != module and name != COMPUTED:
                graph[module].add(target)
    circles = []
    for start in sorted(names):  # a path from a module back to itself, by depth-first search
        stack, seen = [(start, [start])], set()
        while stack:
            node, trail = stack.pop()
            for nxt in sorted(graph[node]):
                if nxt == start:
                    circles.append(" -> ".join(trail + [start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, trail + [nxt]))
    assert not circles, circles[:5]


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
