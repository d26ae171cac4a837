"""A realism factor's contact sheet: the same scenes with one factor varied and everything
else fixed, side by side in one run (never a timed test), with seconds per image.

Renders the same planned scenes (same seed: a factor draws from its own stream and moves no
other number of a record) once per column of the factor, Cycles, one worker; prints the
seconds per image of each whole command (planning, Blender start, writing) and its ratio to
the first column, and writes a contact sheet (rows: scenes, columns: the factor's values).
`--factor realism` compares the presets (plain, studio, varied); `--preset draft` times them
in Workbench (whose columns it cannot show are skipped, and said so).

    nice -n 19 .venv/bin/python benchmarks/realism.py --factor floor [--object-set comco] [--scenes 3]
        [--resolution 160] [--samples 16] [--preset cycles] [--out docs/realism/floors-comco.png]
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

# factor -> (sheet name, [(column label, the render options that make it)]); the first is today's look.
COLUMNS = {
    "floor": ("floors", [("plain", []), *((n, ["--floor", n]) for n in ("wood", "tiles", "checker", "noise")),
                         ("none", ["--floor", "none"])]),
    "realism": ("presets", [(n, ["--realism", n]) for n in ("plain", "studio", "varied")]),
}


def render(out: Path, extra: list[str], args) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "comco.cli", "render", "--quiet", "--object-set", args.object_set,
                           "--objects", "2-4", "--n", str(args.scenes), "--seed", str(args.seed),
                           "--preset", args.preset, "--samples", str(args.samples),
                           "--resolution", str(args.resolution), "--workers", "1", *extra, "--out", str(out)],
                          capture_output=True, text=True)
    return time.perf_counter() - t, (done.stderr.strip().splitlines() or [""])[-1] if done.returncode else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factor", choices=sorted(COLUMNS), required=True)
    ap.add_argument("--scenes", type=int, default=3)
    ap.add_argument("--resolution", type=int, default=160)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--preset", default="cycles")
    ap.add_argument("--object-set", default="comco")
    ap.add_argument("--out", type=Path, default=None, help="the sheet (default docs/realism/FACTOR-SET.png)")
    ap.add_argument("--no-sheet", action="store_true", help="only the seconds per image")
    args = ap.parse_args()
    sheet, columns = COLUMNS[args.factor]
    out = args.out or Path(f"docs/realism/{sheet}-{args.object_set}.png")
    seconds, shown = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in columns:
            folder = Path(tmp) / label
            took, refused = render(folder, extra, args)
            if refused:
                print(f"{label}: not rendered ({refused})")
                continue
            seconds[label] = took / args.scenes
            shown.append((label, folder))
        if not args.no_sheet and shown:
            rows = [[Tile(Image.open(f / "images" / f"{i:06d}.png").convert("RGB"), (label,) if i == 0 else ())
                     for label, f in shown] for i in range(args.scenes)]
            out.parent.mkdir(parents=True, exist_ok=True)
            title = (f"{args.object_set}: the same scenes, one {args.factor} per column ({args.preset}, "
                     f"{args.samples} samples, {args.resolution} px, everything else fixed)")
            save_png(draw_grid(rows, title=title, gap=2), out)
            print(f"sheet -> {out}")
    first = next(iter(seconds.values()), None)
    print(f"{args.factor:<10} {'s/image':>8} {'vs ' + next(iter(seconds), '-'):>10}")
    for label, s in seconds.items():
        print(f"{label:<10} {s:8.2f} {s / first:9.2f}x")


if __name__ == "__main__":
    main()
