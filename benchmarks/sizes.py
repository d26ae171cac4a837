"""How well planned sizes come out in renders: per-object fill against one typical fill.

    python benchmarks/sizes.py [--set comco] [--n 240] [--resolution 192] [--realism plain|studio|varied]
        [--fills both|measured]

Renders the same configuration (draft preset) twice in one run, from two copies of the
object set: one whose manifest carries the measured fills (`comco objects calibrate
--write`), one with them removed (the planner's typical fill of 0.7 for every object).
Prints, side by side, the large object's planned and measured share of the image (10th,
50th and 90th percentile; the one-large layout asks for 7 %, less for an object held at
the height cap or shrunk to the span limit), the spread p90 / p10, and how far the
objects' measured shares stray from the planned ones (the fill's job).

With `--realism studio|varied` the scenes are the preset's (its cameras in particular: each
image is placed in its own); they render with Cycles at one sample, since the shares are
measured on the ID render, not on the image. `--fills measured` renders only the calibrated
copy (half the time; the question "do the calibrated sizes hold under this preset" needs no more).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from comco.manifest import MANIFEST_NAME, resolve_set_dir


def render(set_dir: Path, out: Path, n: int, resolution: int, realism: str = "plain") -> float:
    t = time.perf_counter()
    look = [] if realism == "plain" else ["--realism", realism, "--samples", "1", "--image-timeout", "0"]
    subprocess.run([sys.executable, "-m", "comco.cli", "render", "--object-set", str(set_dir), "--objects", "2-5",
                    "--n", str(n), "--preset", "draft" if realism == "plain" else "cycles",
                    "--resolution", str(resolution), "--workers", "2", *look,
                    "--quiet", "--out", str(out)], check=False, capture_output=True)
    return time.perf_counter() - t


def summary(out: Path) -> dict:
    large, planned, ratios = [], [], []
    for line in (out / "scenes.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for o in rec["objects"]:
            m = o.get("measured")
            if not m:
                continue
            ratios.append(m["fraction"] / o["planned_fraction"])
            if o["size_rank"] == 0:
                large.append(m["fraction"])
                planned.append(o["planned_fraction"])
    large.sort()
    planned.sort()
    ratios.sort()

    def q(v, p):
        return v[min(len(v) - 1, int(p * len(v)))]

    return {"large planned p10": q(planned, 0.1), "large planned p50": q(planned, 0.5),
            "large p10": q(large, 0.1), "large p50": q(large, 0.5), "large p90": q(large, 0.9),
            "spread p90/p10": q(large, 0.9) / q(large, 0.1),
            "measured/planned p10": q(ratios, 0.1), "measured/planned p90": q(ratios, 0.9),
            "median |log ratio|": statistics.median(abs(__import__("math").log(r)) for r in ratios if r > 0)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="comco")
    ap.add_argument("--n", type=int, default=240)
    ap.add_argument("--resolution", type=int, default=192)
    ap.add_argument("--realism", default="plain", choices=("plain", "studio", "varied"))
    ap.add_argument("--fills", default="both", choices=("both", "measured"))
    args = ap.parse_args()
    src = resolve_set_dir(args.set)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows = {}
        runs = (("one fill (0.7)", False), ("measured fills", True))
        for label, keep in runs[1:] if args.fills == "measured" else runs:
            set_dir = tmp / f"set-{keep}"
            shutil.copytree(src, set_dir)
            text = (set_dir / MANIFEST_NAME).read_text(encoding="utf-8")
            if not keep:
                text = re.sub(r"(?m)^fill\s*=.*\n", "", text)
            elif not re.search(r"(?m)^fill\s*=", text):
                sys.exit(f"{src / MANIFEST_NAME} has no fills: run `comco objects calibrate {args.set} --write` first")
            (set_dir / MANIFEST_NAME).write_text(text, encoding="utf-8")
            seconds = render(set_dir, tmp / f"out-{keep}", args.n, args.resolution, args.realism)
            rows[label] = {**summary(tmp / f"out-{keep}"), "seconds": seconds}
    keys = list(next(iter(rows.values())))
    print(f"{'':<22}" + "".join(f"{k:>18}" for k in rows))
    for k in keys:
        print(f"{k:<22}" + "".join(f"{r[k]:>18.3f}" for r in rows.values()))
    print(f"{args.set}, --realism {args.realism}, n {args.n}, {args.resolution} px")
    if args.fills == "measured":
        return
    a, b = rows["one fill (0.7)"], rows["measured fills"]
    print(f"measured / planned share, median |log ratio|: {a['median |log ratio|']:.3f} -> "
          f"{b['median |log ratio|']:.3f} ({a['median |log ratio|'] / b['median |log ratio|']:.1f}x closer)")


if __name__ == "__main__":
    main()
