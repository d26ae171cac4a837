"""Numbers across seeds: means with Student-t intervals, paired differences, slopes, and
how the report prints them (shares as %, with the value's precision on every bound)."""

from __future__ import annotations

import math

import numpy as np

from comco.probes import MOSTLY, NO_PREFERENCE, mostly_ties
from comco.report import too_few, units

# two-sided 95 % Student t quantiles by degrees of freedom
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}
ORD = ["1st", "2nd", "3rd", "4th", "5th"]


def t95(df: int) -> float:
    if df <= 0:
        return float("nan")
    for k in sorted(_T95):
        if df <= k:
            return _T95[k]
    return 1.96


def _present(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def summarize(values, bounds: tuple[float, float] | None = (0.0, 1.0)) -> dict:
    """Mean and 95 % t-interval across seeds (no interval from a single seed).

    The interval is clipped to `bounds` (shares and accuracies live in [0, 1]); with
    few seeds a t-interval is wide and would otherwise run past them.
    """
    v = np.array([x for x in values if _present(x)], float)
    if v.size == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0, "values": []}
    m = float(v.mean())
    if v.size < 2:
        return {"mean": m, "lo": None, "hi": None, "n": 1, "values": v.tolist()}
    half = t95(v.size - 1) * float(v.std(ddof=1)) / math.sqrt(v.size)
    lo, hi = m - half, m + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return {"mean": m, "lo": lo, "hi": hi, "n": int(v.size), "values": v.tolist()}


SHARE_DIFFERENCE = (-1.0, 1.0)  # the bounds of a difference of two shares


def paired(a_vals: list, b_vals: list, bounds: tuple[float, float] | None = SHARE_DIFFERENCE) -> dict:
    """Across-seed summary of per-seed differences a - b (seeds aligned); the interval is
    clipped to `bounds` (None for differences that are not of shares, such as steps)."""
    return summarize([x - y for x, y in zip(a_vals, b_vals) if _present(x) and _present(y)], bounds)


def slope(xs: list[float], ys: list[float]) -> dict:
    """Least-squares slope with a 95 % t-interval (df = n - 2)."""
    x, y = np.array(xs, float), np.array(ys, float)
    ok = ~np.isnan(y)
    x, y = x[ok], y[ok]
    if x.size < 3 or np.ptp(x) == 0:
        return {"mean": None, "lo": None, "hi": None, "n": int(x.size)}
    xm = x - x.mean()
    b = float((xm * (y - y.mean())).sum() / (xm ** 2).sum())
    resid = y - (y.mean() + b * xm)
    se = math.sqrt(float((resid ** 2).sum()) / (x.size - 2) / float((xm ** 2).sum()))
    half = t95(x.size - 2) * se
    return {"mean": b, "lo": b - half, "hi": b + half, "n": int(x.size)}


def width(s: dict) -> float:
    return float("inf") if s.get("lo") is None else s["hi"] - s["lo"]


def pct(s: dict | None, digits: int = 1, dashes=None, missing: str = "not measured", unit: str = "") -> str:
    """A share as % with its interval: "53.4 [36.3, 70.6]" (then `unit`, " %" in a sentence);
    "12 trials per model: too few to read" when a model's figure came from fewer than MIN_TRIALS
    trials (s["trials"], counted()); with `dashes` (comco.report.Dashes) an empty cell carries
    the mark of `missing`, its reason."""
    text = _interval(s, 100.0, digits, dashes, missing)
    return text if text.startswith("–") or thin(s) is not None else text + unit


def thin(s: dict | None) -> str | None:
    """too_few's text when the summary's models had fewer than MIN_TRIALS trials, else None."""
    return too_few((s or {}).get("trials"), unit="trials per model")


def num(s: dict | None, digits: int = 3, dashes=None, missing: str = "not measured") -> str:
    """A raw figure with its interval: "0.123 [0.101, 0.145]" (the minimum and dashes as pct)."""
    return _interval(s, 1.0, digits, dashes, missing)


def counted(s: dict, trials: list) -> dict:
    """The summary with the fewest trials any of its models' figures came from (s["trials"])."""
    known = [int(t) for t in trials if _present(t)]
    return {**s, "trials": min(known)} if known else s


def no_preference(s: dict | None) -> str | None:
    """"no preference measurable (62 % of the queries near-ties; 2 of 3 model(s) mostly ties)"
    when the summary rests mostly on near-ties (tie_summary), else None."""
    if not s or not s.get("no_preference"):
        return None
    return (f"{NO_PREFERENCE} ({100 * s['tie_share']:.0f} % of the queries near-ties; {s['tied_models']} of "
            f"{s['models']} model(s) mostly ties)")


def _interval(s: dict | None, scale: float, digits: int, dashes=None, missing: str = "not measured") -> str:
    if no_preference(s):
        return no_preference(s)
    if not s or s.get("mean") is None:
        return dashes.dash(missing) if dashes is not None else "–"
    few = thin(s)
    if few:
        return few
    if s.get("lo") is None:
        return f"{scale * s['mean']:.{digits}f} (1 seed)"
    return f"{scale * s['mean']:.{digits}f} [{scale * s['lo']:.{digits}f}, {scale * s['hi']:.{digits}f}]"


def signed(d: dict, unit: str = " points") -> str:
    """A difference in points with its interval ("+5.9 points [+2.4, +9.3]")."""
    if d.get("mean") is None:
        return "not measured"
    if d.get("lo") is None:
        return f"{100 * d['mean']:+.1f}{unit}, one seed"
    return f"{100 * d['mean']:+.1f}{unit} [{100 * d['lo']:+.1f}, {100 * d['hi']:+.1f}]"


def cell(f: dict | None, dashes=None, missing: str = "not measured") -> str:
    """A gate figure with its bootstrap interval, the bounds at the value's precision
    (99.8 [99.4, 100.0], never 99.8 [100, 100]); its count when it came from fewer than
    MIN_TRIALS trials ("12 trials: too few to read"); with `dashes` an empty cell is marked."""
    if not f or f.get("value") is None or (isinstance(f["value"], float) and math.isnan(f["value"])):
        return dashes.dash(missing) if dashes is not None else "–"
    few = too_few(f.get("n"))
    if few:
        return few
    if f.get("lo") is None:
        return f"{100 * f['value']:.1f}"
    return f"{100 * f['value']:.1f} [{100 * f['lo']:.1f}, {100 * f['hi']:.1f}]"


def shares(stats: list[dict]) -> list[float | None]:
    """Per-role share of the hits: value_k / sum of values (None when nothing was hit)."""
    vals = [s["value"] if s["value"] is not None else float("nan") for s in stats]
    total = float(np.nansum(vals))
    return [None if total <= 0 or math.isnan(v) else v / total for v in vals]


def metric(res: dict, family: str, n: str, template: str | None = None) -> dict | None:
    """Per-role shares and raw values of one probe result for n objects."""
    if family == "tor":
        block = res.get("tor", {}).get(template, {}).get(n)
        stats = block["unconditional"] if block else None
    elif family == "ior":
        block = res.get("ior", {}).get(n)
        stats = block["unconditional"] if block else None
    elif family == "ior_present":
        stats = res.get("ior_present", {}).get(n)
    else:
        stats = res.get("sensitivity", {}).get(n)
    if not stats:
        return None
    out = {"share": shares(stats), "raw": [s["value"] for s in stats], "roles": [s["role"] for s in stats],
           "chance": [s.get("chance") for s in stats], "n": [units(s) for s in stats]}
    ties, counted_ = int(stats[0].get("ties") or 0), int(stats[0].get("n") or 0)
    out["tie_share"] = ties / (ties + counted_) if ties + counted_ else 0.0
    if mostly_ties(ties, counted_):  # this model shows no preference: none of its shares is a number
        out.update(share=[None] * len(stats), raw=[None] * len(stats), no_preference=True)
    return out


def tie_summary(s: dict, models: list[dict | None]) -> dict:
    """The across-seed summary `s` with the near-ties of its models (comco.probes.retrieval):
    tied_models (those whose figure rests mostly on ties: they give no number), models, and
    tie_share (the mean share of tied queries). The summary itself rests mostly on ties, and
    reads "no preference measurable", when most of its models do or most of its queries are ties."""
    got = [m for m in models if m is not None]
    if not got:
        return s
    tied = sum(bool(m.get("no_preference")) for m in got)
    share = float(np.mean([m.get("tie_share", 0.0) for m in got]))
    return {**s, "tied_models": tied, "models": len(got), "tie_share": share,
            "no_preference": 2 * tied > len(got) or share > MOSTLY}


def tie_note(s: dict | None) -> str:
    """" (45 % of the queries near-ties, left out; 1 of 3 models mostly ties)" where a summary has ties."""
    if not s or not s.get("tie_share"):
        return ""
    models = f"; {s['tied_models']} of {s['models']} model(s) mostly ties" if s.get("tied_models") else ""
    return f" ({100 * s['tie_share']:.0f} % of the queries near-ties, left out{models})"
