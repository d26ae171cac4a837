"""A caption corpus's p placed on a finished lab run's dose-response.

The run's results.json holds, per object set and caption length n, the TOR first-mention
share of every gated model at each p (`dose_response.tor_<n>.first_share.<p>.values`).
A least-squares line through those points predicts the share a model trained at the
corpus's p would show; its interval is the 95 % t-interval of the fitted mean at that p,
widened to cover the fitted means' intervals at both ends of p's own interval.
"""

from __future__ import annotations

import math
from pathlib import Path

from comco.errors import UserError
from comco.io import read_json
from comco.lab.report.stats import t95


def _line(points: list[tuple[float, float]]):
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    n = len(xs)
    xm = sum(xs) / n
    ym = sum(ys) / n
    sxx = sum((x - xm) ** 2 for x in xs)
    b = sum((x - xm) * (y - ym) for x, y in points) / sxx
    s = math.sqrt(sum((y - (ym + b * (x - xm))) ** 2 for x, y in points) / (n - 2))

    def at(x: float) -> tuple[float, float, float]:
        fit = ym + b * (x - xm)
        half = t95(n - 2) * s * math.sqrt(1 / n + (x - xm) ** 2 / sxx)
        return fit, fit - half, fit + half

    return at


def dose_lines(run: Path) -> list[dict]:
    """Each TOR dose-response of a finished run as a fitted line (checked before any work)."""
    path = Path(run) / "results.json"
    if not path.is_file():
        raise UserError(f"--lab {run} holds no results.json; give the --out folder of a finished `comco lab run`")
    data = read_json(path, "lab results")
    sets = data.get("object_sets") if isinstance(data, dict) else None
    if not isinstance(sets, dict):
        raise UserError(f"--lab {path} is not a lab run's results.json (no 'object_sets')")
    lines = []
    for oset, numbers in sets.items():
        for key, entry in sorted(((numbers or {}).get("dose_response") or {}).items()):
            if not key.startswith("tor_") or not isinstance(entry, dict):
                continue
            points = [(float(q), float(v)) for q, s in (entry.get("first_share") or {}).items()
                      for v in (s or {}).get("values") or [] if v is not None]
            ps = sorted({x for x, _ in points})
            if len(points) >= 3 and len(ps) >= 2:
                lines.append({"object_set": oset, "n": int(key[4:]), "at": _line(points), "models": len(points),
                              "ps": ps})
    if not lines:
        raise UserError(f"--lab {run}: its results.json has no TOR dose-response with 3 or more gated models "
                        f"at 2 or more p (run the lab's dose-response stages)")
    return lines


def predict_first_share(lines: list[dict], p: dict) -> list[dict]:
    """One prediction per line of `dose_lines`; `p` is {"mean", "lo", "hi"} (a corpus's p)."""
    out = []
    for line in lines:
        ends = [line["at"](x) for x in (p["mean"], p["lo"], p["hi"])]
        ps = line["ps"]
        inside = min(ps) <= p["mean"] <= max(ps)
        out.append({"object_set": line["object_set"], "n": line["n"], "mean": ends[0][0],
                    "lo": min(e[1] for e in ends), "hi": max(e[2] for e in ends), "models": line["models"],
                    "ps": ps, "note": "" if inside else f"p outside the run's {min(ps):g}-{max(ps):g}: extrapolated"})
    return out
