"""A realism factor's contact sheet: the same scenes with one factor varied and everything
else fixed, side by side in one run (never a timed test), with seconds per image.

Renders the same planned scenes (same seed: a factor draws from its own stream and moves no
other number of a record) once per column of the factor, Cycles, one worker; prints the
seconds per image of each whole command (planning, Blender start, writing) and its ratio to
the first column, and writes a contact sheet (rows: scenes, columns: the factor's values).
`--factor realism` compares the presets (plain, studio, varied); `--preset draft` times them
in Workbench (whose columns it cannot show are skipped, and said so).

    nice -n 19 .venv/bin/python benchmarks/realism.py --factor floor [--object-set comco] [--scenes 2]
        [--resolution 128] [--samples 8] [--preset cycles] [--out docs/realism/floors-comco.png]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

from comco.sheet import Tile, draw_grid, save_png

# The camera's sheet stands the scenes on one fixed checker floor: on the plain grey floor a
# turn or a dolly of the camera shows nothing but the objects, which it keeps as placed.
CHECKER = ["--floor", "checker", "--floor-hue", "30", "--floor-saturation", "0.25", "--floor-value", "0.75"]
# factor -> (sheet name, options every column shares, [(column label, its own options)]); the
# first column is today's look.
COLUMNS = {
    "floor": ("floors", [], [("plain", []), *((n, ["--floor", n]) for n in ("wood", "tiles", "checker", "noise")),
                             ("none", ["--floor", "none"])]),
    "camera": ("camera", CHECKER, [
        ("today", []), ("elev 30", ["--camera-elevation", "30"]), ("elev 60", ["--camera-elevation", "60"]),
        ("azim 90", ["--camera-azimuth", "90"]), ("azim 180", ["--camera-azimuth", "180"]),
        ("lens 35", ["--camera-lens", "35"]), ("lens 70", ["--camera-lens", "70"]),
        ("dist 10", ["--camera-distance", "10"]), ("dist 28", ["--camera-distance", "28"])]),
    "light": ("light", [], [
        ("today", []), ("key -90", ["--light-azimuth", "-90"]), ("key 90", ["--light-azimuth", "90"]),
        ("key low", ["--light-elevation", "15"]), ("x0.4", ["--light-intensity", "0.4"]),
        ("x1.8", ["--light-intensity", "1.8"]), ("2700 K", ["--light-temperature", "2700"]),
        ("10000 K", ["--light-temperature", "10000"]), ("1 light", ["--light-count", "1"])]),
    # with palette colours, so the sheet shows that a texture keeps the colour's name
    "surface": ("materials", ["--colors"], [
        ("today", []), ("rough 0.05", ["--roughness", "0.05"]), ("rough 1", ["--roughness", "1"]),
        ("metal 1", ["--metallic", "1"]), *((t, ["--texture", t]) for t in ("noise", "stripes", "spots"))]),
    "realism": ("presets", [], [(n, ["--realism", n]) for n in ("plain", "studio", "varied")]),
}


def render(out: Path, extra: list[str], args) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "comco.cli", "render", "--quiet", "--object-set", args.object_set,
                           "--objects", "2-4", "--n", str(args.scenes), "--seed", str(args.seed),
                           "--preset", args.preset, "--samples", str(args.samples),
                           "--resolution", str(args.resolution), "--workers", "1", "--image-timeout", "0",
                           *extra, "--out", str(out)],
                          capture_output=True, text=True)
    return time.perf_counter() - t, (done.stderr.strip().splitlines() or [""])[-1] if done.returncode else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factor", choices=sorted(COLUMNS), required=True)
    ap.add_argument("--scenes", type=int, default=2)
    ap.add_argument("--resolution", type=int, default=128)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--preset", default="cycles")
    ap.add_argument("--object-set", default="comco")
    ap.add_argument("--out", type=Path, default=None, help="the sheet (default docs/realism/FACTOR-SET.png)")
    ap.add_argument("--no-sheet", action="store_true", help="only the seconds per image")
    args = ap.parse_args()
    sheet, common, columns = COLUMNS[args.factor]
    out = args.out or Path(f"docs/realism/{sheet}-{args.object_set}.png")
    seconds, shown = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in columns:
            folder = Path(tmp) / label
            took, refused = render(folder, [*common, *extra], args)
            if refused:
                print(f"{label}: not rendered ({refused})")
                continue
            seconds[label] = took / args.scenes
            shown.append((label, folder))
        if not args.no_sheet and shown:
            rows = [[Tile(Image.open(f / "images" / f"{i:06d}.png").convert("RGB"), (label,) if i == 0 else ())
                     for label, f in shown] for i in range(args.scenes)]
            out.parent.mkdir(parents=True, exist_ok=True)
            fixed = f", all on {' '.join(common)}" if common else ""
            title = (f"{args.object_set}: the same scenes, one {args.factor} per column ({args.preset}, "
                     f"{args.samples} samples, {args.resolution} px, everything else fixed{fixed})")
            save_png(draw_grid(rows, title=title, gap=2), out)
            print(f"sheet -> {out}")
    first = next(iter(seconds.values()), None)
    print(f"{args.factor:<10} {'s/image':>8} {'vs ' + next(iter(seconds), '-'):>10}")
    for label, s in seconds.items():
        print(f"{label:<10} {s:8.2f} {s / first:9.2f}x")


if __name__ == "__main__":
    main()
