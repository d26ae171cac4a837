"""The light factor: the key light's direction, the rig's intensity and colour temperature,
and how many of its lights (key, fill, back) shine, drawn per image from ranges around
today's rig (the default: three white area lights, jittered; comco/plan/planner.py).

Each option changes only its own part of the rig: without --light-azimuth / --light-elevation
the key keeps its jittered place, without --light-temperature the lights stay white. Drawn from
the image's own stream (rng.factor_seed), before Blender runs; what was drawn is recorded in
the record's `lights` only when a light option is given, so datasets without one stay
byte-identical.
"""

from __future__ import annotations

import math

from comco.plan.factors import stream

RIG = ("key", "fill", "back")  # the lights a count keeps, in this order
WHITE_K = 6500.0  # the temperature of a white light (the rig's today)
OPTIONS = ("light_azimuth", "light_elevation", "light_intensity", "light_temperature", "light_count")


def kelvin_rgb(kelvin: float) -> list[float]:
    """A light's colour at a colour temperature (Tanner Helland's fit of the black body),
    scaled so that WHITE_K is white."""
    def fit(k: float) -> tuple[float, float, float]:
        t = k / 100.0
        r = 255.0 if t <= 66 else 329.698727446 * (t - 60) ** -0.1332047592
        g = 99.4708025861 * math.log(t) - 161.1195681661 if t <= 66 else 288.1221695283 * (t - 60) ** -0.0755148492
        b = 255.0 if t >= 66 else (0.0 if t <= 19 else 138.5177312231 * math.log(t - 10) - 305.0447927307)
        return tuple(min(255.0, max(0.0, c)) for c in (r, g, b))  # type: ignore[return-value]
    white = fit(WHITE_K)
    return [round(c / w, 4) for c, w in zip(fit(kelvin), white)]


class LightDrawer:
    """Changes each image's rig by the light options that are set (`apply`)."""

    def __init__(self, cfg):
        from comco.plan.options import by_name
        from comco.plan.rng import Reseedable

        self.cfg = cfg
        self.set = {o for o in OPTIONS if getattr(cfg, o) != by_name()[o].default}
        self.recorded = bool(self.set)
        self._rng = Reseedable()

    def apply(self, seed: int, lights: dict) -> dict:
        """The rig `lights` (today's, jittered) as the light options change it."""
        if not self.recorded:
            return lights
        cfg = self.cfg
        u = stream(seed, "light", self._rng).random(5)  # five draws always
        draw = lambda rng, x: rng[0] + x * (rng[1] - rng[0])  # noqa: E731
        out = {name: dict(lights[name]) for name in RIG}
        drawn: dict = {}
        if self.set & {"light_azimuth", "light_elevation"}:  # the other angle stays the jittered key's
            x, y, z = out["key"]["location"]
            reach = math.sqrt(x * x + y * y + z * z)
            az = draw(cfg.light_azimuth, u[0]) if "light_azimuth" in self.set else math.degrees(math.atan2(x, -y))
            el = (draw(cfg.light_elevation, u[1]) if "light_elevation" in self.set
                  else math.degrees(math.asin(z / reach)))
            a, e = math.radians(az), math.radians(el)
            out["key"]["location"] = [round(reach * math.cos(e) * math.sin(a), 4),
                                      round(-reach * math.cos(e) * math.cos(a), 4), round(reach * math.sin(e), 4)]
            drawn.update(key_azimuth_deg=round(az, 3), key_elevation_deg=round(el, 3))
        if "light_intensity" in self.set:
            k = draw(cfg.light_intensity, u[2])
            for name in RIG:
                out[name]["energy"] = round(out[name]["energy"] * k, 2)
            drawn["intensity"] = round(k, 4)
        if "light_temperature" in self.set:
            kelvin = round(draw(cfg.light_temperature, u[3]))
            for name in RIG:
                out[name]["color"] = kelvin_rgb(kelvin)
            drawn["temperature_k"] = kelvin
        if "light_count" in self.set:
            lo, hi = (int(round(c)) for c in cfg.light_count)
            count = lo + min(int(u[4] * (hi - lo + 1)), hi - lo)
            for name in RIG[count:]:
                del out[name]
            drawn["count"] = count
        return {**out, "world": lights["world"], "drawn": drawn}
