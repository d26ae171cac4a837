"""Planning options as lab recipe keys.

A planning option declared with `recipe="section.key"` (comco/plan/options.py) is a key of
that recipe section: checked as `comco plan` checks the option, and every render stage plans
with its value. The key of a WHEN_SET option may be left out of a recipe (it then means the
option's default, which is what recipes meant before the option existed)."""

from __future__ import annotations

from typing import Any, Callable

from comco.errors import UserError


def _recipe_options(section: str | None = None) -> list:
    from comco.plan import plan_options

    return [o for o in plan_options() if o.recipe and (section is None or o.recipe.split(".")[0] == section)]


def _checker(option) -> Callable:
    from comco.plan import check_option

    def check(path: str, value):
        try:
            stored = option.read(value)
        except UserError as exc:
            raise UserError(f"recipe key '{path}' = {value!r}: {exc}") from None
        except (TypeError, ValueError):
            raise UserError(f"recipe key '{path}' = {value!r}: not a value {option.flag} takes") from None
        try:
            check_option(option, stored, flag=f"recipe key '{path}' =")
        except (TypeError, ValueError):
            raise UserError(f"recipe key '{path}' = {value!r}: not a value {option.flag} takes") from None
        # the recipe's own form stays (stage configs and their hashes read it); numbers as floats
        return float(value) if option.type is float else value
    return check


def schema(section: str) -> dict[str, Callable]:
    """Recipe key (within `section`) -> its check, for every planning option keyed there."""
    return {o.recipe.split(".", 1)[1]: _checker(o) for o in _recipe_options(section)}


def optional(section: str) -> set[str]:
    """The keys of `section` a recipe may leave out."""
    from comco.plan import WHEN_SET

    return {o.recipe.split(".", 1)[1] for o in _recipe_options(section) if o.in_hash == WHEN_SET}


def plan_settings(settings: dict) -> dict[str, Any]:
    """Option name -> the recipe's value, for each planning option the recipe sets (the render
    stages' common plan; the lab sets counts, seeds and captions per stage)."""
    out = {}
    for o in _recipe_options():
        section, key = o.recipe.split(".", 1)
        if key in settings[section]:
            out[o.name] = settings[section][key]
    return out
