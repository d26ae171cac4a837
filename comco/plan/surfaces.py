"""The object-material factor: each object's roughness and metallic drawn from ranges, and a
procedural texture that varies its brightness but not its hue (two tones of the object's own
colour), so its colour name stays true. Default: each look's own surface (rubber, metal, ...).

Drawn per object from a stream of the image's seed and the object's name (rng.factor_seed),
so an object keeps its surface in every pair variant of its scene; recorded as the object's
`surface` only when an option is given, so datasets without them stay byte-identical.
"""

from __future__ import annotations

from comco.plan.factors import parse_names, stream

NONE = "none"
TEXTURES = ("noise", "stripes", "spots")
ALL_TEXTURES = "textures"
STEP = 0.05  # roughness and metallic are drawn on this grid (one material per value in a worker)
OPTIONS = ("roughness", "metallic", "texture")


def parse_textures(value) -> tuple[str, ...]:
    """"none", "noise", "noise,none", "textures" (all three) or a list -> the textures an object
    draws from, each once, in (none, *TEXTURES) order."""
    return parse_names(value, "--texture", (NONE, *TEXTURES), {ALL_TEXTURES: TEXTURES}, what="texture")


def check_textures(textures: tuple[str, ...]) -> None:
    parse_textures(list(textures))


def _on_grid(lo: float, hi: float, x: float) -> float:
    return round(round((lo + x * (hi - lo)) / STEP) * STEP, 2)


class SurfaceDrawer:
    """Each object's surface, or None where the configuration keeps the looks' own."""

    def __init__(self, cfg):
        from comco.plan.rng import Reseedable

        self.cfg = cfg
        self.recorded = cfg.roughness is not None or cfg.metallic is not None or cfg.texture != (NONE,)
        self._rng = Reseedable()

    def draw(self, seed: int, name: str) -> dict | None:
        if not self.recorded:
            return None
        cfg = self.cfg
        u = stream(seed, f"surface:{name}", self._rng).random(3)  # three draws always
        out: dict = {}
        if cfg.roughness is not None:
            out["roughness"] = _on_grid(*cfg.roughness, u[0])
        if cfg.metallic is not None:
            out["metallic"] = _on_grid(*cfg.metallic, u[1])
        out["texture"] = cfg.texture[min(int(u[2] * len(cfg.texture)), len(cfg.texture) - 1)]
        return out
