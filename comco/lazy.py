"""Package doors that load lazily: a package's `__init__` names what the rest of comco
may use, and each name's module is imported on first use. `comco --help` stays instant
and neither torch nor bpy loads before a command needs it."""

from __future__ import annotations

import importlib
from typing import Callable


def door(package: str, names: dict[str, str]) -> tuple[Callable, Callable, list[str]]:
    """`__getattr__`, `__dir__` and `__all__` for a package.

    Args:
        package: the package's `__name__`.
        names: public name -> the submodule (relative to the package) that defines it.
    """

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        globals_of_package = importlib.import_module(package).__dict__
        globals_of_package[name] = value  # later look-ups skip __getattr__
        return value

    __getattr__.names = dict(names)  # what the door can load (the layer and digest tests read it)

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__, sorted(names)
