"""A plan's configuration: every option that decides the scenes, its checks, and the one
way to build it from what a user or a file gives (`PlanConfig.from_dict`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from comco.errors import UserError
from comco.manifest import ObjectSet
from comco.plan import captions as cap
from comco.plan.orders import POLICIES
from comco.record import LAYOUTS, MAX_OBJECTS, PAIR_FACTORS, SLOTS

MAX_IMAGES = 10_000_000  # per dataset: counting and the journal are linear in --n; more is --shard's job


@dataclass(frozen=True)
class PlanConfig:
    """Everything that decides the scenes of a dataset (with the object set and PLAN_VERSION)."""

    object_set: str = "comco"
    objects: tuple[int, ...] = (2, 3, 4, 5)
    n: int = 100
    seed: int = 0
    layout: str = "one-large"
    large_slot: tuple[str, ...] = SLOTS
    resolution: tuple[int, int] = (512, 512)
    colors: bool = False
    orders: int = 4
    order_policy: str = "random"
    order_bias: float = 0.0
    large_fraction: float = 0.07
    small_fraction: tuple[float, float] = (0.005, 0.01)
    equal_fraction: float = 0.025
    captions: tuple[str, ...] = ()
    templates: str | None = None
    # The --templates file's content: part of the configuration, so editing the file makes
    # another configuration (a resume is refused) and a dataset re-plans without the file.
    templates_text: str | None = None
    # Counterfactual variants of every scene (comco/plan/pairs.py), in PAIR_FACTORS order.
    pairs: tuple[str, ...] = ()

    def __post_init__(self):
        if self.templates is not None and self.templates_text is None:
            object.__setattr__(self, "templates_text", cap.read_template_file(self.templates))

    @classmethod
    def from_dict(cls, d: dict) -> "PlanConfig":
        """The configuration from `to_dict`'s form (dataset.json's `config`), a recipe's or the
        command line's: counts as "2-5" or a list, slots as "M,UL", "random" or a list, the
        resolution as 512, "640x480" or [w, h], small shares as "0.005-0.01" or [lo, hi],
        captions as "and,long" or a list. Keys that are not plan options are refused, except
        dataset.json's `render` (the render options stored beside the plan's).

        Args:
            d: option name -> value; missing options take their defaults.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known - {"render"})
        if unknown:
            raise UserError(f"unknown plan option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        given = {k: v for k, v in d.items() if k in known}
        if "objects" in given:
            given["objects"] = _counts(given["objects"])
        if "large_slot" in given:
            v = given["large_slot"]
            given["large_slot"] = parse_slots(v) if isinstance(v, str) else tuple(v)
        if "resolution" in given:
            given["resolution"] = parse_resolution(given["resolution"])
        if "small_fraction" in given:
            v = given["small_fraction"]
            given["small_fraction"] = parse_fraction_range(v) if isinstance(v, str) else tuple(float(x) for x in v)
        if "captions" in given:
            v = given["captions"]
            given["captions"] = tuple(c.strip() for c in (v.split(",") if isinstance(v, str) else v) if c.strip())
        if "pairs" in given:
            given["pairs"] = parse_pairs(given["pairs"])
        if given.get("templates") is not None:
            given["templates"] = str(given["templates"])
        return cls(**given)

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["templates_text"] is None:
            del d["templates_text"]  # configurations without --templates keep their hash
        if not d["pairs"]:
            del d["pairs"]  # nor do those without --pairs change theirs
        for k, v in d.items():
            if isinstance(v, tuple):
                d[k] = list(v)
        return d


def parse_pairs(value, flag: str = "--pairs") -> tuple[str, ...]:
    """"swap-size,remove" or a list -> the factors, each once, in PAIR_FACTORS order (`flag` names
    the option in the error). A text that names no factor ('' or ',') is refused: it was given as
    an option, and would silently plan a dataset without pairs."""
    names = [t.strip() for t in (value.split(",") if isinstance(value, str) else value) if str(t).strip()]
    if isinstance(value, str) and not names:
        raise UserError(f"{flag} {value!r} names no factor; give one or more of {', '.join(PAIR_FACTORS)} "
                        f"(comma-separated), or leave {flag} out")
    bad = [t for t in names if t not in PAIR_FACTORS]
    if bad:
        raise UserError(f"{flag}: unknown factor '{bad[0]}'; known: {', '.join(PAIR_FACTORS)}")
    return tuple(f for f in PAIR_FACTORS if f in names)


def parse_counts(text: str) -> tuple[int, ...]:
    """`3`, `2-5` or `2,4` -> object counts; errors say how to write it."""
    text = str(text).strip()
    try:
        if "-" in text:
            lo_s, hi_s = text.split("-", 1)
            lo, hi = int(lo_s), int(hi_s)
            if lo > hi:
                raise UserError(f"--objects {text}: the range is backwards; write {hi}-{lo}")
            counts = tuple(range(lo, hi + 1))
        else:
            counts = tuple(sorted({int(t) for t in text.split(",") if t.strip()}))
    except ValueError:
        raise UserError(f"--objects {text!r}: give a count (3), a range (2-5) or a list (2,4)") from None
    if not counts or min(counts) < 1:
        raise UserError(f"--objects {text}: counts start at 1")
    if max(counts) > MAX_OBJECTS:
        raise UserError(f"--objects {text}: at most {MAX_OBJECTS} objects fit the {MAX_OBJECTS} slots")
    return counts


def _counts(value) -> tuple[int, ...]:
    if isinstance(value, (str, int)):
        return parse_counts(str(value))
    return tuple(int(v) for v in value)


def parse_resolution(value) -> tuple[int, int]:
    """512, "512", "640x480" or [640, 480] -> (width, height)."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        w, h = (int(v) for v in value)
    else:
        text = str(value)
        try:
            if "x" in text.lower():
                w, h = (int(t) for t in text.lower().split("x", 1))
            else:
                w = h = int(text)
        except ValueError:
            raise UserError(f"--resolution {text!r}: give pixels, 512 or 640x480") from None
    if not (0 < w <= 8192 and 0 < h <= 8192):
        raise UserError(f"--resolution {value}: use 1..8192 pixels")
    return w, h


def parse_fraction_range(text: str) -> tuple[float, float]:
    """"0.005-0.01" or "0.01" -> (low, high) image shares."""
    try:
        lo, _, hi = text.partition("-")
        return float(lo), float(hi or lo)
    except ValueError:
        raise UserError(f"--small-fraction {text!r}: give a share or a range, e.g. 0.005-0.01") from None


def parse_slots(text: str) -> tuple[str, ...]:
    """"M,UL", "random" -> the slots the large object may take."""
    if text == "random":
        return SLOTS
    slots = tuple(s.strip().upper() for s in text.split(",") if s.strip())
    bad = [s for s in slots if s not in SLOTS]
    if bad or not slots:
        raise UserError(f"--large-slot {text}: use M, UL, UR, BL, BR, a comma list of them, or random")
    return slots


def check_config(cfg: PlanConfig, object_set: ObjectSet) -> None:
    """Refuse (UserError, one line) a configuration the planner cannot honour with this set."""
    from comco.plan.rng import check_seed

    if cfg.n <= 0:
        raise UserError(f"--n {cfg.n}: ask for at least one image")
    if cfg.n > MAX_IMAGES:
        raise UserError(f"--n {cfg.n}: at most {MAX_IMAGES:,} images per dataset; make several (other --seed) "
                        "and probe or train on each")
    check_seed(cfg.seed)
    if max(cfg.objects) > len(object_set.objects):
        raise UserError(f"--objects: {max(cfg.objects)} objects asked but set '{object_set.name}' "
                        f"has {len(object_set.objects)}")
    if "add" in cfg.pairs and max(cfg.objects) >= len(object_set.objects):
        raise UserError(f"--pairs add: set '{object_set.name}' has no object left to add to {max(cfg.objects)}; "
                        f"use fewer --objects")
    w, h = cfg.resolution
    if not (0 < w <= 8192 and 0 < h <= 8192):
        raise UserError(f"--resolution {w}x{h}: use 1..8192 pixels")
    if cfg.layout not in LAYOUTS:
        raise UserError(f"--layout {cfg.layout}: use one of {', '.join(LAYOUTS)}")
    if cfg.order_policy not in POLICIES:
        raise UserError(f"--order-policy {cfg.order_policy}: use one of {', '.join(POLICIES)}")
    if not 0.0 <= cfg.order_bias <= 1.0:
        raise UserError(f"--order-bias {cfg.order_bias}: a probability in 0..1")
    if cfg.orders < 1:
        raise UserError(f"--orders {cfg.orders}: at least 1")
    # Orders past the distinct permutations only repeat them (and bloat every record).
    most = max(cfg.objects) if max(cfg.objects) >= 4 else MAX_OBJECTS
    if cfg.orders > math.factorial(most):
        raise UserError(f"--orders {cfg.orders}: {most} objects have only {math.factorial(most)} different "
                        f"mention orders; use 1..{math.factorial(most)}")
    check_pairs(cfg)
    lo, hi = cfg.small_fraction
    if lo > hi:
        raise UserError(f"--small-fraction {lo:g}-{hi:g}: the range is backwards; write {hi:g}-{lo:g}")
    if not (0 < lo <= hi < 1) or not (0 < cfg.large_fraction < 1):
        raise UserError("--large-fraction and --small-fraction are image shares in (0, 1)")




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
