"""Procedural object builders: a registry from manifest source names to functions.

A manifest entry `source = "builder:comco.pizza"` names the function registered
here as "comco.pizza". A builder makes ONE Blender object:
- at the real-world size of its manifest entry (dimensions_m = width x, depth y,
  height z, metres), centred on x = y = 0, resting on z = 0;
- facing the camera by default: its canonical front looks towards -y;
- with its colours as material slots made by `ctx.material(...)`. Parts that a
  record's colour should repaint use `primary=True` materials; patterns (zebra
  stripes, pizza toppings, keys) are geometry with their own material slots, so
  that every preset (Workbench included, which shows material colours only) sees them.
Builders may create temporary objects and join them; `ctx.finish(...)` does that.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

BUILDERS: dict[str, Callable] = {}


def builder(name: str) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        if name in BUILDERS:
            raise ValueError(f"builder {name} registered twice")
        BUILDERS[name] = fn
        return fn

    return register


def load_all() -> dict[str, Callable]:
    """Import every module of comco.scenes.builders so their builders register."""
    from comco.scenes import builders

    for mod in pkgutil.iter_modules(builders.__path__):
        importlib.import_module(f"{builders.__name__}.{mod.name}")
    return BUILDERS
