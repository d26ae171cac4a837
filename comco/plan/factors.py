"""What the realism factors share (comco/plan/worlds.py, floors.py, ...): reading a list of
names, drawing a colour from hue / saturation / value ranges, and each factor's own stream.

Light on purpose (the command line reads the names): numpy only inside the functions that draw.
"""

from __future__ import annotations

import colorsys

from comco.errors import UserError


def parse_names(value, flag: str, known: tuple[str, ...], groups: dict[str, tuple[str, ...]] | None = None,
                what: str = "name") -> tuple[str, ...]:
    """"a", "a,b", a group word or a list -> the names, each once, in `known`'s order; an unknown
    name (or none) is one line naming `flag` and what it takes."""
    groups = groups or {}
    words = [t.strip().lower() for t in (value.split(",") if isinstance(value, str) else value) if str(t).strip()]
    names = [n for t in words for n in groups.get(t, (t,))]
    bad = [t for t in names if t not in known]
    if bad or not names:
        shown = bad[0] if bad else repr(value)
        extra = "".join(f", {g} ({', '.join(ns)})" for g, ns in groups.items())
        raise UserError(f"{flag} {shown}: unknown {what}; use {', '.join(known)}, a comma list of them{extra}")
    return tuple(n for n in known if n in names)


def stream(seed: int, factor: str, rng):
    """`rng` (a comco.plan.rng.Reseedable) set to the factor's own stream of this image's seed."""
    from comco.plan.rng import factor_seed

    return rng.seed(factor_seed(seed, factor))


def hsv_color(hue_deg: float, saturation: float, value: float) -> list[float]:
    """sRGB [r, g, b] in 0..1 (rounded for the record) of a hue in degrees, a saturation and a value."""
    return [round(c, 4) for c in colorsys.hsv_to_rgb((hue_deg % 360.0) / 360.0, saturation, value)]
