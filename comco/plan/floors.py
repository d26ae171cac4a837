"""The floor factor: ComCO's light-grey floor (the default), one of four procedural floors
(wood, tiles, checker, noise) in a colour drawn from hue / saturation / value ranges, or none
(no floor: the objects stand over the world's background).

Drawn per image from its own stream (rng.factor_seed), before Blender runs; recorded as the
record's `floor` only when --floor is given, so datasets without it stay byte-identical.
"""

from __future__ import annotations

import math

from comco.plan.factors import hsv_color, parse_names, stream

PLAIN, NONE = "plain", "none"
PATTERNS = ("wood", "tiles", "checker", "noise")
FLOORS = (PLAIN, *PATTERNS, NONE)
ALL_PATTERNS = "patterns"  # --floor patterns: any of the four procedural floors


def parse_floors(value) -> tuple[str, ...]:
    """"plain", "wood", "wood,none", "patterns" (all four) or a list -> the floors an image
    draws from (uniformly), each once, in FLOORS order."""
    return parse_names(value, "--floor", FLOORS, {ALL_PATTERNS: PATTERNS}, what="floor")


def check_floors(floors: tuple[str, ...]) -> None:
    parse_floors(list(floors))


class FloorDrawer:
    """The floor of each image, or None where the configuration keeps today's floor unrecorded
    (no --floor)."""

    def __init__(self, cfg):
        from comco.plan.rng import Reseedable  # numpy: not when the command line reads FLOORS

        self.floors = cfg.floor
        self.hue, self.saturation, self.value = cfg.floor_hue, cfg.floor_saturation, cfg.floor_value
        self.recorded = cfg.floor != (PLAIN,)
        self._rng = Reseedable()

    def draw(self, seed: int) -> dict | None:
        if not self.recorded:
            return None
        rng = stream(seed, "floor", self._rng)
        # five draws always, so a floor's colour and turn do not depend on which floor was drawn
        name = self.floors[int(rng.integers(len(self.floors)))]
        hue, sat, val = rng.uniform(*self.hue), rng.uniform(*self.saturation), rng.uniform(*self.value)
        turn = rng.uniform(0.0, 360.0)
        if name not in PATTERNS:
            return {"name": name}
        return {"name": name, "color": hsv_color(hue, sat, val), "rotation_z": round(math.radians(turn), 5)}
