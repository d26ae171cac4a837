"""The forms a user, a recipe or dataset.json gives a plan option in, read into the value
PlanConfig stores: counts as "2-5", slots as "M,UL", a resolution as "640x480", ...
Each error is one line that names the option and how to write it."""

from __future__ import annotations

import re

from comco.errors import UserError
from comco.record import MAX_OBJECTS, PAIR_FACTORS, SLOTS


def parse_pairs(value, flag: str = "--pairs") -> tuple[str, ...]:
    """"swap-size,remove" or a list -> the factors, each once, in PAIR_FACTORS order (`flag` names
    the option in the error); None (not given) -> none. A text that names no factor ('' or ',') is
    refused: it was given as an option, and would silently plan a dataset without pairs."""
    if value is None:
        return ()
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


def counts(value) -> tuple[int, ...]:
    """--objects in any form: the command line's text, a recipe's number or a list."""
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


def fraction_range(value) -> tuple[float, float]:
    """--small-fraction as text or as [low, high]."""
    return parse_fraction_range(value) if isinstance(value, str) else tuple(float(x) for x in value)


def parse_slots(text: str) -> tuple[str, ...]:
    """"M,UL", "random" -> the slots the large object may take."""
    if text == "random":
        return SLOTS
    slots = tuple(s.strip().upper() for s in text.split(",") if s.strip())
    bad = [s for s in slots if s not in SLOTS]
    if bad or not slots:
        raise UserError(f"--large-slot {text}: use M, UL, UR, BL, BR, a comma list of them, or random")
    return slots


def slots(value) -> tuple[str, ...]:
    """--large-slot as text or as a list."""
    return parse_slots(value) if isinstance(value, str) else tuple(value)


def names(value) -> tuple[str, ...]:
    """A comma list ("and,long") or a list -> the names, blanks dropped."""
    return tuple(c.strip() for c in (value.split(",") if isinstance(value, str) else value) if c.strip())


def path_text(value) -> str | None:
    """A file option (a Path from the command line, text from a file) as text."""
    return None if value is None else str(value)


def number_range(value, flag: str) -> tuple[float, float]:
    """"0.5-2", "1", "-30..30" or [lo, hi] -> (low, high); `flag` names the option in the error."""
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise UserError(f"{flag} {list(value)}: give [low, high]")
        return float(value[0]), float(value[1])
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value), float(value)
    text = str(value).strip()
    number = r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
    m = re.fullmatch(rf"({number})\s*(?:(?:-|\.\.)\s*({number}))?", text)
    if m is None:
        raise UserError(f"{flag} {text!r}: give a number or a range, e.g. 0.5-2 (or -30..30)")
    return float(m.group(1)), float(m.group(2) or m.group(1))
