"""A plan's configuration: PlanConfig, built from the declarations of comco/plan/options.py,
the one way to build it from what a user or a file gives (`PlanConfig.from_dict`), and the
checks that look at several options together."""

from __future__ import annotations

import math
from dataclasses import asdict, field, make_dataclass

from comco.errors import UserError
from comco.manifest import ObjectSet
from comco.plan import captions as cap
from comco.plan import floors
from comco.plan import options as declared
from comco.plan.holdout import resolve_holdout
from comco.plan.parse import parse_pairs
from comco.plan.realism import PRESETS, apply_preset
from comco.plan.worlds import PLAIN
from comco.record import MAX_OBJECTS


class _Methods:
    """PlanConfig's behaviour; its fields are the declared options (comco/plan/options.py)."""

    def __post_init__(self):
        if self.templates is not None and self.templates_text is None:
            object.__setattr__(self, "templates_text", cap.read_template_file(self.templates))

    @classmethod
    def from_dict(cls, d: dict):
        """The configuration from `to_dict`'s form (dataset.json's `config`), a recipe's or the
        command line's: each declared option in any form its `parse` reads (counts as "2-5" or a
        list, slots as "M,UL", "random" or a list, the resolution as 512, "640x480" or [w, h], ...).
        Keys that are not plan options are refused, except dataset.json's `render` (the render
        options stored beside the plan's).

        Args:
            d: option name -> value; missing options take their defaults.
        """
        options = declared.by_name()
        unknown = sorted(set(d) - set(options) - {"render"})
        if unknown:
            raise UserError(f"unknown plan option(s) {', '.join(unknown)}; known: {', '.join(sorted(options))}")
        given = {k: options[k].read(v) for k, v in d.items() if k in options}
        return cls(**apply_preset(given, options) if given.get("realism") in PRESETS else given)

    def to_dict(self) -> dict:
        """dataset.json's `config` (and what the configuration hash reads): every option, but a
        WHEN_SET one only when it is not its default, so adding one keeps every existing hash."""
        d = asdict(self)
        for o in declared.OPTIONS:
            if o.in_hash == declared.WHEN_SET and d[o.name] == o.default:
                del d[o.name]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def _make_plan_config() -> type:
    cls = make_dataclass("PlanConfig", [(o.name, o.type, field(default=o.default)) for o in declared.OPTIONS],
                         bases=(_Methods,), frozen=True, namespace={"__module__": __name__})
    cls.__doc__ = ("Everything that decides the scenes of a dataset (with the object set and PLAN_VERSION): "
                   "one field per declared option (comco/plan/options.py).")
    return cls


PlanConfig = _make_plan_config()
DEFAULT = PlanConfig()


def check_config(cfg: PlanConfig, object_set: ObjectSet) -> None:
    """Refuse (UserError, one line) a configuration the planner cannot honour with this set:
    each option against its declaration, then the options against each other and the set."""
    for o in declared.OPTIONS:
        declared.check_option(o, getattr(cfg, o.name))
    if max(cfg.objects) > len(object_set.objects):
        raise UserError(f"--objects: {max(cfg.objects)} objects asked but set '{object_set.name}' "
                        f"has {len(object_set.objects)}")
    if "add" in cfg.pairs and max(cfg.objects) >= len(object_set.objects):
        raise UserError(f"--pairs add: set '{object_set.name}' has no object left to add to {max(cfg.objects)}; "
                        f"use fewer --objects")
    # Orders past the distinct permutations only repeat them (and bloat every record).
    most = max(cfg.objects) if max(cfg.objects) >= 4 else MAX_OBJECTS
    if cfg.orders > math.factorial(most):
        raise UserError(f"--orders {cfg.orders}: {most} objects have only {math.factorial(most)} different "
                        f"mention orders; use 1..{math.factorial(most)}")
    check_pairs(cfg)
    if cfg.world == (PLAIN,) and (cfg.world_rotation, cfg.world_strength) != (DEFAULT.world_rotation,
                                                                              DEFAULT.world_strength):
        raise UserError("--world-rotation and --world-strength turn and scale an HDRI world; "
                        "add --world (e.g. --world hdri)")
    resolve_holdout(cfg, object_set)
    check_realism(cfg)


def _unused(cfg: PlanConfig, names: tuple[str, ...]) -> str | None:
    """The flag of the first of these options that is not at its default, or None."""
    for name in names:
        if getattr(cfg, name) != getattr(DEFAULT, name):
            return declared.by_name()[name].flag
    return None


def check_realism(cfg: PlanConfig) -> None:
    """A realism factor's ranges need the factor itself (one line, what to add)."""
    if not set(cfg.floor) & set(floors.PATTERNS):
        flag = _unused(cfg, ("floor_hue", "floor_saturation", "floor_value"))
        if flag:
            raise UserError(f"{flag} colours a procedural floor; add --floor with one "
                            f"({', '.join(floors.PATTERNS)} or {floors.ALL_PATTERNS})")


def check_pairs(cfg: PlanConfig) -> None:
    """Refuse a factor the scenes cannot show (one line, what to pass instead)."""
    factors = parse_pairs(cfg.pairs)
    if "swap-colors" in factors and not cfg.colors:
        raise UserError("--pairs swap-colors: the objects have no colours to swap; add --colors")
    if "swap-size" in factors and cfg.layout == "equal":
        raise UserError("--pairs swap-size: the equal layout gives every object one size; use another --layout")
    two = [f for f in factors if f in ("swap-size", "swap-slots", "swap-colors", "remove")]
    if two and min(cfg.objects) < 2:
        raise UserError(f"--pairs {two[0]}: needs at least 2 objects per scene; use --objects 2 or more")
    grow = [f for f in factors if f in ("add", "count")]
    if grow and max(cfg.objects) >= MAX_OBJECTS:
        raise UserError(f"--pairs {grow[0]}: a scene of {max(cfg.objects)} objects has no free slot for one more; "
                        f"use --objects up to {MAX_OBJECTS - 1}")
