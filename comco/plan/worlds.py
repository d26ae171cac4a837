"""The world factor: the plain backdrop (ComCO's look, the default) or one of the CC0 HDRI
worlds that ship inside bpy (`datafiles/studiolights/world`) as light and background,
turned about the vertical axis and scaled in strength.

Drawn per image from its own stream (rng.factor_seed), before Blender runs; recorded as the
record's `world` only when --world is given, so datasets without it stay byte-identical.
"""

from __future__ import annotations

import math

from comco.errors import UserError

PLAIN = "plain"
HDRIS = ("city", "courtyard", "forest", "interior", "night", "studio", "sunrise", "sunset")
WORLDS = (PLAIN, *HDRIS)
ALL_HDRIS = "hdri"  # --world hdri: any of the eight


def parse_worlds(value) -> tuple[str, ...]:
    """"plain", "forest", "forest,city", "hdri" (all eight) or a list -> the worlds an image
    draws from (uniformly), each once, in WORLDS order."""
    names = [t.strip().lower() for t in (value.split(",") if isinstance(value, str) else value) if str(t).strip()]
    names = [n for t in names for n in (HDRIS if t == ALL_HDRIS else (t,))]
    bad = [t for t in names if t not in WORLDS]
    if bad or not names:
        what = bad[0] if bad else repr(value)
        raise UserError(f"--world {what}: unknown world; use {', '.join(WORLDS)}, "
                        f"a comma list of them, or {ALL_HDRIS} (all eight HDRIs)")
    return tuple(w for w in WORLDS if w in names)


def check_worlds(worlds: tuple[str, ...]) -> None:
    parse_worlds(list(worlds))


class WorldDrawer:
    """The world of each image, or None where the configuration keeps the plain backdrop
    unrecorded (no --world)."""

    def __init__(self, cfg):
        from comco.plan.rng import Reseedable  # numpy: not when the command line reads WORLDS

        self.worlds, self.rotation, self.strength = cfg.world, cfg.world_rotation, cfg.world_strength
        self.recorded = cfg.world != (PLAIN,)
        self._rng = Reseedable()

    def draw(self, seed: int) -> dict | None:
        if not self.recorded:
            return None
        from comco.plan.rng import factor_seed

        rng = self._rng.seed(factor_seed(seed, "world"))
        # three draws always, so a world's turn and strength do not depend on which was drawn
        name = self.worlds[int(rng.integers(len(self.worlds)))]
        turn, strength = rng.uniform(*self.rotation), rng.uniform(*self.strength)
        if name == PLAIN:
            return {"name": PLAIN}
        return {"name": name, "rotation_z": round(math.radians(turn), 5), "strength": round(strength, 4)}
