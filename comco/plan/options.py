"""Every planning option, declared once.

A declaration says the option's name, the type PlanConfig stores, its default, its bounds
(or choices, or a check), its help, whether it enters the configuration hash and its lab
recipe key. PlanConfig's fields, `comco plan` / `comco render`'s options, dataset.json's
`config`, the recipe keys and the per-option checks are all built from OPTIONS; to add an
option, add one `PlanOption` here (docs/dev/plan-options.md).

Light on purpose: the command line reads this module to build its options, so it imports
nothing heavy (no numpy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Optional

from comco.errors import UserError
from comco.plan import floors, holdout, parse, realism, surfaces, worlds
from comco.plan.orders import POLICIES
from comco.record import LAYOUTS, MAX_OBJECTS, SLOTS

MAX_IMAGES = 10_000_000  # per dataset: counting and the journal are linear in --n; more is --shard's job
ALWAYS, WHEN_SET = "always", "when-set"  # PlanOption.in_hash
_SAME = object()  # cli_default: the stored default


@dataclass(frozen=True)
class Range:
    """Closed bounds unless `open_lo` / `open_hi`; None is unbounded."""

    lo: float | None = None
    hi: float | None = None
    open_lo: bool = False
    open_hi: bool = False

    def holds(self, v) -> bool:
        above = self.lo is None or (v > self.lo if self.open_lo else v >= self.lo)
        below = self.hi is None or (v < self.hi if self.open_hi else v <= self.hi)
        return above and below

    def __str__(self) -> str:
        if self.hi is None:
            return f"{'above' if self.open_lo else 'at least'} {self.lo:g}"
        if self.lo is None:
            return f"{'below' if self.open_hi else 'at most'} {self.hi:g}"
        if self.open_lo or self.open_hi:
            return f"in {'(' if self.open_lo else '['}{self.lo:g}, {self.hi:g}{')' if self.open_hi else ']'}"
        return f"use {self.lo:g}..{self.hi:g}"


@dataclass(frozen=True)
class PlanOption:
    """One planning option.

    name: PlanConfig's field and dataset.json's key (the flag is --name-with-dashes).
    type, default: what PlanConfig stores, and its value when the option is not given.
    help: the command line's help; None keeps it off the command line (set by comco or a file).
    cli_type, cli_default: what the command line reads when that is not `type` (ranges as text).
    flags: typer's flag declarations when not the plain --name ("--colors/--no-colors").
    parse: reads the command line's, a recipe's or dataset.json's form into `type`.
    bounds, choices, say: the values allowed, and how an error says them ("a probability in 0..1").
    check: a check of the stored value beyond bounds and choices (raises UserError, one line).
    in_hash: ALWAYS (in dataset.json and the hash at any value) or WHEN_SET (only when it is not
        the default: adding such an option keeps the hash of every existing dataset).
    recipe: "section.key" of the lab recipe key every render stage plans with, or None (the lab
        sets it per stage, or leaves the default). A WHEN_SET option's key may be left out of a recipe.
    """

    name: str
    type: Any
    default: Any
    help: str | None = None
    cli_type: Any = None
    cli_default: Any = _SAME
    flags: tuple[str, ...] = ()
    parse: Callable[[Any], Any] | None = None
    bounds: Range | None = None
    choices: tuple | None = None
    say: str | None = None
    check: Callable[[Any], None] | None = None
    in_hash: str = ALWAYS
    recipe: str | None = None

    @property
    def flag(self) -> str:
        """How errors name the option: its command-line flag, or its name when it has none."""
        if self.help is None:
            return self.name
        return self.flags[0].split("/")[0] if self.flags else "--" + self.name.replace("_", "-")

    @property
    def on_cli(self) -> bool:
        return self.help is not None

    def cli(self) -> tuple[Any, Any]:
        """(type, default) of the command-line option."""
        return (self.cli_type or self.type), (self.default if self.cli_default is _SAME else self.cli_default)

    def read(self, value):
        """A given value (any accepted form) as PlanConfig stores it."""
        if self.parse is None or (value is None and self.default is None):
            return value
        return self.parse(value)


_TYPE_NAMES = {int: "a whole number", float: "a number", bool: "true or false", str: "text"}


def check_option(option: PlanOption, value, flag: str | None = None) -> None:
    """Refuse (UserError, one line naming the option) a stored value outside the declaration.

    Args:
        flag: how the error names the option and its value when not by its flag (a recipe key)."""
    flag = flag or option.flag
    kind = option.type
    if kind in _TYPE_NAMES:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        fits = {bool: isinstance(value, bool), int: number and isinstance(value, int),
                float: number and math.isfinite(value), str: isinstance(value, str)}[kind]
        if not fits:
            raise UserError(f"{flag} {value!r}: expected {_TYPE_NAMES[kind]}")
    if option.choices is not None and value not in option.choices:
        raise UserError(f"{flag} {value}: use one of {', '.join(option.choices)}")
    if option.bounds is not None and not option.bounds.holds(value):
        raise UserError(f"{flag} {value}: {option.say or option.bounds}")
    if option.check is not None:
        option.check(value)


# ---------------------------------------------------------------- checks beyond bounds

def _check_n(n: int) -> None:
    if n <= 0:
        raise UserError(f"--n {n}: ask for at least one image")
    if n > MAX_IMAGES:
        raise UserError(f"--n {n}: at most {MAX_IMAGES:,} images per dataset; make several (other --seed) "
                        "and probe or train on each")


def _check_seed(seed: int) -> None:
    from comco.plan.rng import check_seed  # numpy: only when a configuration is checked

    check_seed(seed)


def _check_counts(counts: tuple[int, ...]) -> None:
    if not counts or not all(1 <= c <= MAX_OBJECTS for c in counts):
        raise UserError(f"--objects {list(counts)}: counts of 1..{MAX_OBJECTS} objects")


def _check_slots(slots: tuple[str, ...]) -> None:
    if not slots or any(s not in SLOTS for s in slots):
        raise UserError(f"--large-slot {','.join(slots)}: use M, UL, UR, BL, BR, a comma list of them, or random")


def _check_resolution(size: tuple[int, int]) -> None:
    w, h = size
    if not (0 < w <= 8192 and 0 < h <= 8192):
        raise UserError(f"--resolution {w}x{h}: use 1..8192 pixels")


def _check_small_fraction(pair: tuple[float, float]) -> None:
    lo, hi = pair
    if lo > hi:
        raise UserError(f"--small-fraction {lo:g}-{hi:g}: the range is backwards; write {hi:g}-{lo:g}")
    if not 0 < lo <= hi < 1:
        raise UserError(f"--small-fraction {lo:g}-{hi:g}: image shares in (0, 1)")


def _check_range(flag: str, lo: float, hi: float):
    """A check of a (low, high) range within [lo, hi] (one line naming `flag`)."""
    def check(pair: tuple[float, float]) -> None:
        a, b = pair
        if not (math.isfinite(a) and math.isfinite(b)):
            raise UserError(f"{flag} {a:g}-{b:g}: give finite numbers")
        if a > b:
            raise UserError(f"{flag} {a:g}..{b:g}: the range is backwards; write {b:g}..{a:g}")
        if a < lo or b > hi:
            raise UserError(f"{flag} {a:g}..{b:g}: use a range within {lo:g}..{hi:g}")
    return check


def _check_optional_range(flag: str):
    """A (low, high) range within 0..1, or None (not given)."""
    check = _check_range(flag, 0.0, 1.0)
    return lambda pair: None if pair is None else check(pair)


def _range_option(name: str, default: tuple[float, float], within: tuple[float, float], help: str,
                  recipe: str | None = None) -> PlanOption:
    """A WHEN_SET (low, high) option drawn per image, written "a..b", "a-b" or one value."""
    flag = "--" + name.replace("_", "-")
    lo, hi = default
    return PlanOption(name, tuple[float, float], (float(lo), float(hi)), cli_type=str,
                      cli_default=f"{lo:g}" if lo == hi else f"{lo:g}..{hi:g}",
                      parse=partial(parse.number_range, flag=flag), check=_check_range(flag, *within),
                      in_hash=WHEN_SET, recipe=recipe or f"data.{name}", help=help)


def _color_ranges(factor: str, what: str, hue, saturation, value) -> tuple[PlanOption, ...]:
    """--FACTOR-hue, --FACTOR-saturation, --FACTOR-value: the HSV ranges a colour is drawn from."""
    return (
        _range_option(f"{factor}_hue", hue, (-360.0, 720.0), f"Hue of {what}, degrees: a range drawn per image "
                                                              f"(default {hue[0]:g}..{hue[1]:g})."),
        _range_option(f"{factor}_saturation", saturation, (0.0, 1.0),
                      f"Saturation of {what}, 0..1 (default {saturation[0]:g}..{saturation[1]:g})."),
        _range_option(f"{factor}_value", value, (0.0, 1.0),
                      f"Brightness (HSV value) of {what}, 0..1 (default {value[0]:g}..{value[1]:g})."),
    )


SHARE = Range(0.0, 1.0, open_lo=True, open_hi=True)

# The command line shows them in this order; PlanConfig's fields follow it too.
OPTIONS: tuple[PlanOption, ...] = (
    PlanOption("objects", tuple[int, ...], (2, 3, 4, 5), cli_type=str, cli_default="2-5", parse=parse.counts,
               check=_check_counts,
               help="Objects per image: a count (3), a range (2-5) or a list (2,4)."),
    PlanOption("n", int, 100, check=_check_n, help="Number of images."),
    PlanOption("object_set", str, "comco",
               help="Built-in set (comco, simco) or a folder with objects.toml."),
    PlanOption("layout", str, "one-large", choices=LAYOUTS, recipe="data.layout",
               help="one-large (ComCO), equal, graded or realistic."),
    PlanOption("large_slot", tuple[str, ...], SLOTS, cli_type=str, cli_default="random", parse=parse.slots,
               check=_check_slots, recipe="data.large_slot",
               help="Slot of the largest object: M, UL, UR, BL, BR, a list (M,UL,BR) or random."),
    PlanOption("seed", int, 0, check=_check_seed, help="Dataset seed; each image derives its own from it."),
    PlanOption("resolution", tuple[int, int], (512, 512), cli_type=str, cli_default="512",
               parse=parse.parse_resolution, check=_check_resolution, recipe="render.resolution",
               help="Image size in pixels: 512 or 640x480."),
    PlanOption("colors", bool, False, flags=("--colors/--no-colors",),
               help="Give objects palette colours (and write attribute captions)."),
    PlanOption("orders", int, 4, bounds=Range(1), recipe="data.orders",
               help="Mention orders per image for 4+ objects (all permutations for 3 or fewer)."),
    PlanOption("order_policy", str, "random", choices=POLICIES,
               help="random, size-desc, size-asc or left-to-right."),
    PlanOption("order_bias", float, 0.0, bounds=Range(0.0, 1.0), say="a probability in 0..1",
               help="Probability that the largest object is mentioned first (lab variable)."),
    PlanOption("large_fraction", float, 0.07, bounds=SHARE, say="an image share in (0, 1)",
               recipe="data.large_fraction", help="Image share of the large object (one-large)."),
    PlanOption("small_fraction", tuple[float, float], (0.005, 0.01), cli_type=str, cli_default="0.005-0.01",
               parse=parse.fraction_range, check=_check_small_fraction, recipe="data.small_fraction",
               help="Image share range of small objects, e.g. 0.005-0.01."),
    PlanOption("equal_fraction", float, 0.025, bounds=SHARE, say="an image share in (0, 1)"),
    PlanOption("captions", tuple[str, ...], (), cli_type=str, cli_default="", parse=parse.names,
               flags=("--templates",), help="Caption templates to write, comma-separated (default: all that apply)."),
    PlanOption("templates", Optional[str], None, cli_type=Optional[Path], parse=parse.path_text,
               flags=("--templates-file",), help="A TOML file of extra caption templates."),
    # The --templates-file file's content: part of the configuration, so editing the file makes
    # another configuration (a resume is refused) and a dataset re-plans without the file.
    # PlanConfig reads it from the file.
    PlanOption("templates_text", Optional[str], None, in_hash=WHEN_SET),
    # Counterfactual variants of every scene (comco/plan/pairs.py), in PAIR_FACTORS order.
    PlanOption("pairs", tuple[str, ...], (), cli_type=Optional[str], cli_default=None, parse=parse.parse_pairs,
               in_hash=WHEN_SET,
               help="Counterfactual minimal pairs: per scene, one variant per factor (swap-size, swap-slots, "
                    "swap-colors, remove, add, count), comma-separated."),
    # Realism factors (issue 23): each WHEN_SET, its default today's look.
    PlanOption("world", tuple[str, ...], (worlds.PLAIN,), cli_type=str, cli_default=worlds.PLAIN,
               parse=worlds.parse_worlds, check=worlds.check_worlds, in_hash=WHEN_SET, recipe="data.world",
               help="The world each image draws from: plain (the grey backdrop), one of bpy's HDRIs "
                    f"({', '.join(worlds.HDRIS)}), a list of them, or {worlds.ALL_HDRIS} (all eight)."),
    PlanOption("world_rotation", tuple[float, float], (0.0, 360.0), cli_type=str, cli_default="0..360",
               parse=partial(parse.number_range, flag="--world-rotation"),
               check=_check_range("--world-rotation", -360.0, 720.0), in_hash=WHEN_SET,
               recipe="data.world_rotation", help="Turn of an HDRI world about the vertical axis, degrees: "
                                                  "a range drawn per image, e.g. 0..360 or -30..30."),
    # 0.35: the plain backdrop's own strength, so a world changes the light's colour and
    # direction more than the exposure (at 1 the area lights and the HDRI wash the floor out)
    PlanOption("world_strength", tuple[float, float], (0.35, 0.35), cli_type=str, cli_default="0.35",
               parse=partial(parse.number_range, flag="--world-strength"),
               check=_check_range("--world-strength", 0.0, 100.0), in_hash=WHEN_SET,
               recipe="data.world_strength", help="Strength of an HDRI world's light: a value or a range "
                                                  "drawn per image, e.g. 0.2-0.7."),
    # Held-out compositions (issue 23 item 4; comco/plan/holdout.py): each WHEN_SET, off by default.
    # The names are checked against the object set in check_config (holdout.resolve_holdout).
    PlanOption("holdout", Optional[str], None, cli_type=Optional[str], parse=holdout.parse_holdout,
               in_hash=WHEN_SET, recipe="data.holdout",
               help="Combinations a training set never shows and its test set always shows: "
                    "pairs:cup+bowl,mug+fork (objects together), slot:cup=M, color:cube=red, size:cup=0 "
                    "(0 = largest), or KIND:auto:SHARE[:SEED] (a seeded share of the kind's combinations)."),
    # The lab sets it per stage (its training and probe sets), so no recipe key.
    PlanOption("holdout_split", str, holdout.TRAIN, choices=holdout.SPLITS, in_hash=WHEN_SET,
               help="Which side of --holdout this plan is: train (no image shows a held-out combination), "
                    "test (every image shows one) or mixed (half each, every object count on both sides)."),
    # Outputs beside each image (issue 23 item 3): each WHEN_SET, off by default (the records,
    # images and hashes of a dataset without them are today's). The preset's passes are checked
    # by `comco render` (comco.record.PASSES).
    PlanOption("depth", bool, False, in_hash=WHEN_SET, recipe="render.depth",
               help="Write a depth PNG per image (depth/<id>.png: 16-bit, millimetres from the camera plane, "
                    "0 = no surface); draft and cycles presets."),
    PlanOption("normals", bool, False, in_hash=WHEN_SET, recipe="render.normals",
               help="Write a surface-normal PNG per image (normals/<id>.png: camera-space, RGB = (n + 1) / 2); "
                    "cycles and high presets."),
    PlanOption("relations", bool, False, in_hash=WHEN_SET, recipe="render.relations",
               help="Record a relations graph per image (left of, right of, above, below, in front of, behind; "
                    "from the planned 3-D positions and the camera) and the measured occlusion order."),
    # ---- realism factors beyond the world (issue 23 item 2; branch realism): each WHEN_SET,
    # its default today's look, its draws from its own stream.
    PlanOption("floor", tuple[str, ...], (floors.PLAIN,), cli_type=str, cli_default=floors.PLAIN,
               parse=floors.parse_floors, check=floors.check_floors, in_hash=WHEN_SET, recipe="data.floor",
               help="The floor each image draws from: plain (the grey floor), a procedural floor "
                    f"({', '.join(floors.PATTERNS)}), none (no floor), a list of them, or "
                    f"{floors.ALL_PATTERNS} (the four procedural ones)."),
    *_color_ranges("floor", "a procedural floor's colour", (0.0, 360.0), (0.2, 0.6), (0.35, 0.8)),
    # The camera (comco/plan/cameras.py): objects are placed in each image's own camera, so they
    # stay in view and in their slots; the defaults are ComCO's camera (comco/plan/camera.py).
    _range_option("camera_elevation", (40.0, 40.0), (10.0, 80.0),
                  "Camera elevation above the floor, degrees: a value or a range drawn per image on a grid "
                  "of 5 degrees from the low end (default 40, ComCO's), e.g. 30..60."),
    _range_option("camera_azimuth", (0.0, 0.0), (-360.0, 360.0),
                  "Camera azimuth about the scene, degrees (0: from the front; the objects turn with it, "
                  "so the floor, the lights and the world are seen from elsewhere), e.g. -180..180."),
    _range_option("camera_lens", (45.0, 45.0), (15.0, 200.0),
                  "Focal length, mm (36 mm sensor): a value or a range drawn per image on a grid of 5 mm "
                  "from the low end (default 45), e.g. 35..70."),
    _range_option("camera_distance", (16.0, 16.0), (2.0, 200.0),
                  "Camera distance from the scene's centre, scene units (default 16); the objects scale "
                  "with it, so their image shares hold, e.g. 12..24."),
    # The light (comco/plan/lights.py): each option changes only its part of today's rig.
    _range_option("light_azimuth", (45.0, 45.0), (-360.0, 360.0),
                  "Direction the key light comes from about the scene, degrees (0: from the front, 90: from the "
                  "right); default: today's jittered key (about 45), e.g. -90..90."),
    _range_option("light_elevation", (50.0, 50.0), (5.0, 90.0),
                  "Height of the key light above the floor, degrees; default: today's jittered key (about 50), "
                  "e.g. 20..80."),
    _range_option("light_intensity", (1.0, 1.0), (0.05, 20.0),
                  "The lights' energy times this: a value or a range drawn per image (default 1), e.g. 0.5-1.5."),
    _range_option("light_temperature", (6500.0, 6500.0), (1000.0, 20000.0),
                  "Colour temperature of the lights, kelvin (6500: white, today's; 2700: warm; 9000: cool), "
                  "e.g. 3000..8000."),
    _range_option("light_count", (3.0, 3.0), (1.0, 3.0),
                  "How many of the key, fill and back lights shine: a count or a range drawn per image "
                  "(default 3), e.g. 1-3."),
    # Object materials (comco/plan/surfaces.py): per object; the default is each look's own.
    PlanOption("roughness", Optional[tuple[float, float]], None, cli_type=Optional[str], cli_default=None,
               parse=partial(parse.number_range, flag="--roughness"), check=_check_optional_range("--roughness"),
               in_hash=WHEN_SET, recipe="data.roughness",
               help="Objects' roughness, 0 (mirror) .. 1 (matte): a range drawn per object on a grid of 0.05, "
                    "e.g. 0.2..0.9 (default: each look's own: rubber 0.75, plastic 0.45, metal 0.25, glossy 0.15)."),
    PlanOption("metallic", Optional[tuple[float, float]], None, cli_type=Optional[str], cli_default=None,
               parse=partial(parse.number_range, flag="--metallic"), check=_check_optional_range("--metallic"),
               in_hash=WHEN_SET, recipe="data.metallic",
               help="Objects' metallic, 0..1: a range drawn per object on a grid of 0.05, e.g. 0..0.5 "
                    "(default: each look's own: metal 1, the others 0)."),
    PlanOption("texture", tuple[str, ...], (surfaces.NONE,), cli_type=str, cli_default=surfaces.NONE,
               parse=surfaces.parse_textures, check=surfaces.check_textures, in_hash=WHEN_SET,
               recipe="data.texture",
               help="Procedural texture each object draws: none, one of "
                    f"{', '.join(surfaces.TEXTURES)} (two tones of the object's own colour, so its colour name "
                    f"holds), a list, or {surfaces.ALL_TEXTURES} (all three)."),
    PlanOption("realism", str, realism.PLAIN, choices=tuple(realism.PRESETS), in_hash=WHEN_SET,
               recipe="data.realism",
               help="A preset over the realism options: plain (today's look), studio (the studio HDRI, a camera "
                    "and key light that move a little, satin surfaces) or varied (every factor varies); "
                    "an option given with another value wins."),
)


def plan_options() -> tuple[PlanOption, ...]:
    """The declarations, read when called (so an option a test adds to OPTIONS is seen)."""
    return OPTIONS


def by_name() -> dict[str, PlanOption]:
    """The declarations by name."""
    return {o.name: o for o in OPTIONS}
