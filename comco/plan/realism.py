"""`--realism plain|studio|varied`: presets over the realism factors' options.

plain is today's look (every factor at its default). A preset fills each of its options that
is at its default; an option given with another value wins (so `--realism varied --floor wood`
keeps every varied factor but the floor; giving an option its default value cannot undo the
preset: pick the values you want instead). PlanConfig.from_dict applies it, so dataset.json
holds the preset's name and every value it set, and re-reads to the same configuration.
"""

from __future__ import annotations

PLAIN = "plain"
PRESETS: dict[str, dict[str, str]] = {
    PLAIN: {},
    # a photo studio: the studio HDRI, today's floor, a camera and a key that move a little,
    # warm-to-neutral light, satin surfaces
    "studio": {"world": "studio", "world_rotation": "0..360", "camera_elevation": "35..45",
               "camera_azimuth": "-20..20", "camera_lens": "40..55", "light_azimuth": "20..70",
               "light_elevation": "40..65", "light_intensity": "0.8..1.2", "light_temperature": "4500..6500",
               "light_count": "2..3", "roughness": "0.3..0.8", "metallic": "0..0.2"},
    # everything varies: the plain backdrop or any HDRI, any floor, a camera from any side, any
    # key light, one to three lights, any surface and texture
    "varied": {"world": "plain,hdri", "world_strength": "0.2..0.6", "floor": "plain,patterns",
               "camera_elevation": "30..60", "camera_azimuth": "-180..180", "camera_lens": "35..70",
               "camera_distance": "12..24", "light_azimuth": "-180..180", "light_elevation": "20..80",
               "light_intensity": "0.5..1.5", "light_temperature": "2700..9000", "light_count": "1..3",
               "roughness": "0.05..0.95", "metallic": "0..1", "texture": "none,textures"},
}


def apply_preset(given: dict, options: dict) -> dict:
    """`given` (option name -> stored value) with its preset's values where an option is at its
    default; `options` are the declarations by name."""
    preset = PRESETS[given.get("realism", PLAIN)]
    out = dict(given)
    for name, value in preset.items():
        if out.get(name, options[name].default) == options[name].default:
            out[name] = options[name].read(value)
    return out
