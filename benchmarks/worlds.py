"""The world factor: the same scenes under the plain backdrop and under each of bpy's HDRI
worlds, side by side in one run (never a timed test).

Renders the same planned scenes (same seed: a world moves no other number of a record) once
per world, Cycles, one worker, the HDRI unturned so the worlds differ only by themselves;
prints the seconds per image of each whole command (planning, Blender start, writing) and
its ratio to plain, and writes a contact sheet (rows: scenes, columns: worlds).

    nice -n 19 .venv/bin/python benchmarks/worlds.py [--scenes 3] [--resolution 192] [--samples 16]
        [--object-set comco] [--worlds plain,forest] [--out docs/realism/worlds-comco.png]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

from comco.plan.worlds import PLAIN, WORLDS, parse_worlds
from comco.sheet import Tile, draw_grid, save_png


def render(out: Path, world: str, args) -> float:
    t = time.perf_counter()
    extra = [] if world == PLAIN else ["--world", world, "--world-rotation", "0"]
    subprocess.run([sys.executable, "-m", "comco.cli", "render", "--quiet", "--object-set", args.object_set,
                    "--objects", "2-4", "--n", str(args.scenes), "--seed", str(args.seed), "--preset", "cycles",
                    "--samples", str(args.samples), "--resolution", str(args.resolution), "--workers", "1",
                    *extra, "--out", str(out)], check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=int, default=3)
    ap.add_argument("--resolution", type=int, default=192)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--object-set", default="comco")
    ap.add_argument("--worlds", default=",".join(WORLDS), help="the worlds to render (plain always first)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    chosen = (PLAIN, *(w for w in parse_worlds(args.worlds) if w != PLAIN))
    out = args.out or Path(f"docs/realism/worlds-{args.object_set}.png")
    seconds, folders = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for world in chosen:
            folders[world] = Path(tmp) / world
            seconds[world] = render(folders[world], world, args) / args.scenes
        rows = [[Tile(Image.open(folders[w] / "images" / f"{i:06d}.png").convert("RGB"), (w,) if i == 0 else ())
                 for w in chosen] for i in range(args.scenes)]
        out.parent.mkdir(parents=True, exist_ok=True)
        title = (f"{args.object_set}: the same scenes under each --world (Cycles, {args.samples} samples, "
                 f"{args.resolution} px, strength 0.35, unturned)")
        save_png(draw_grid(rows, title=title, gap=2), out)
    print(f"{'world':<10} {'s/image':>8} {'vs plain':>9}")
    for w in chosen:
        print(f"{w:<10} {seconds[w]:8.2f} {seconds[w] / seconds[PLAIN]:8.2f}x")
    print(f"sheet -> {out}")


if __name__ == "__main__":
    main()
