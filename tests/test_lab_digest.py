"""The lab's cache must see all the code a stage runs: every comco module that a stage can
import (directly or through others, at module level or inside a function) has its file in
that stage's code digest, so a change there runs the stage again."""

import ast
import importlib.util
from pathlib import Path

import pytest

from comco.lab.graph import CODE, code_files

STAGES = Path(importlib.util.find_spec("comco.lab.stages").origin)
ENTRY = {"render": "render", "captions": "captions", "scratch": "scratch", "finetune": "finetune",
         "labclip": "labclip", "probe": "probe"}


def module_file(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin in (None, "built-in", "frozen") or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def imported(tree: ast.AST, package: str) -> set[str]:
    """comco modules named by the imports anywhere in `tree` (a package stands for its door:
    `from comco.probes import run_probes` counts comco.probes and, when the name is a
    submodule, that submodule)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("comco")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            if not base.startswith("comco"):
                continue
            out.add(base)
            for a in node.names:
                if importlib.util.find_spec(base) and importlib.util.find_spec(base).submodule_search_locations:
                    if module_file(f"{base}.{a.name}"):
                        out.add(f"{base}.{a.name}")
    return out


def door_targets(name: str) -> set[str]:
    """The modules a lazy package door can load (every submodule it names)."""
    if name == "comco":
        # comco's own door is the public API (comco/api.py), a layer above the lab: stages use
        # comco only for its constants, and tests/test_layers.py keeps the lab off the API
        return set()
    mod = importlib.import_module(name)
    getter = getattr(mod, "__getattr__", None)
    if getter is None:
        return set()
    return {f"{name}.{m}" for m in getattr(getter, "names", {}).values()}


def closure(start: set[str]) -> set[Path]:
    seen, files, todo = set(), set(), list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += (
            [t for t in door_targets(name) if t not in seen]
            if module_file(name) and module_file(name).name == "__init__.py"
            else []
        )
        path = module_file(name)
        if path is None:
            continue
        files.add(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        todo += [m for m in imported(ast.parse(path.read_text()), package) if m not in seen]
        parent = name.rpartition(".")[0]
        if parent:
            todo.append(parent)  # importing a submodule runs its package's __init__
    return files


def stage_entry(kind: str) -> set[str]:
    tree = ast.parse(STAGES.read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == ENTRY[kind])
    helpers = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    # the stage function, the module-level imports, and the module's helpers it calls
    names = {c.func.id for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
    bodies = [fn] + [helpers[n] for n in names if n in helpers]
    top = ast.Module(body=[n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))], type_ignores=[])
    return set().union(*(imported(b, "comco.lab") for b in bodies + [top]))


@pytest.mark.parametrize("kind", sorted(ENTRY))
def test_every_module_a_stage_imports_is_in_its_digest(kind):
    needed = closure(stage_entry(kind))
    covered = set(code_files(kind))
    missing = sorted(str(p) for p in needed - covered)
    assert not missing, f"{kind}: {missing}"


def test_report_stage_digest_covers_the_report_code():
    needed = closure({"comco.lab.report"})
    missing = sorted(str(p) for p in needed - set(code_files("report")))
    assert not missing, missing


def test_the_draws_and_placement_are_in_the_render_digests():
    # the modules the hand-kept list had left out (issue 12)
    for kind in ("render", "captions"):
        names = {p.name for p in code_files(kind)}
        assert {"draws.py", "placement.py", "rng.py", "captions.toml"} <= names, kind


def test_a_digest_fails_without_a_package_it_needs(monkeypatch):
    from comco.lab import graph

    monkeypatch.setitem(graph.CODE, "render", tuple(p for p in CODE["render"] if p != "comco.plan"))
    needed = closure(stage_entry("render"))
    assert needed - set(graph.code_files("render"))  # the check above would fail
