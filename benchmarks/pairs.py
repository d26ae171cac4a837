"""Counterfactual pairs: what a pair set costs, side by side in one run (never a timed test).

1. rendering: `comco render --pairs` (every factor) against `comco render` of the same number
   of independent scenes, same object set, preset, resolution and one worker; seconds per
   image of each whole command (planning, Blender start and writing included) and the ratio
   (target <= 1: a pair costs no more than its two images);
2. the pair probe (`pairs_probe`, cold: no embedding cache, 1000 bootstrap resamples) against
   encoding the same unique images and texts once with the same loaded model (its own
   encode_image / encode_text, which cut padding tokens) in a plain loop of 64 at a time, in
   the probe's order; the model is loaded and run once on one batch outside both timings.

    nice -n 19 .venv/bin/python benchmarks/pairs.py [--scenes 12] [--resolution 128] [--model ViT-S-32]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FACTORS = "swap-size,swap-slots,swap-colors,remove,add,count"


def render(out: Path, object_set: str, n: int, res: int, *extra: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "comco.cli", "render", "--quiet", "--object-set", object_set,
                    "--objects", "2-3", "--n", str(n), "--colors", "--preset", "draft", "--resolution", str(res),
                    "--workers", "1", *extra, "--out", str(out)], check=True, capture_output=True)
    return time.perf_counter() - t


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def encode_once(loaded, paths: list[Path], texts: list[str], batch: int = 64) -> None:
    import torch
    from PIL import Image

    with torch.inference_mode():
        for i in range(0, len(paths), batch):
            loaded.encode_image(torch.stack([loaded.preprocess(Image.open(p).convert("RGB"))
                                             for p in paths[i:i + batch]]))
        for i in range(0, len(texts), batch):
            loaded.encode_text(loaded.tokenize(texts[i:i + batch]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=int, default=12, help="base scenes of each pair set (x7 images)")
    ap.add_argument("--resolution", type=int, default=128)
    ap.add_argument("--model", default="ViT-S-32")
    args = ap.parse_args()
    images = args.scenes * (1 + len(FACTORS.split(",")))
    work = Path(tempfile.mkdtemp(prefix="comco-bench-pairs-"))
    print(f"draft, {args.resolution} px, 1 worker, 2-3 objects with colours; {args.scenes} scenes x 7 = "
          f"{images} pair images against {images} independent scenes")
    print(f"{'object set':12s} {'pairs s/image':>14s} {'independent':>12s} {'ratio':>7s}  target <= 1")
    for object_set in ("simco", "comco"):
        t_pairs = render(work / f"pairs-{object_set}", object_set, args.scenes, args.resolution, "--pairs", FACTORS)
        t_plain = render(work / f"plain-{object_set}", object_set, images, args.resolution)
        print(f"{object_set:12s} {t_pairs / images:14.4f} {t_plain / images:12.4f} {t_pairs / t_plain:7.2f}")

    import torch

    from comco.models import load_model
    from comco.probes.embed import Embedder
    from comco.probes.pairs import pair_trials, pairs_probe
    from comco.probes.probe_data import open_dataset

    torch.set_num_threads(1)
    loaded = load_model(args.model, "none")
    data = open_dataset(work / "pairs-comco")
    trials, _ = pair_trials(data)
    paths = list(dict.fromkeys(data.image_path(r) for t in trials for r in (t["pair"].base, t["pair"].variant)))
    texts = list(dict.fromkeys(c for t in trials for c in t["captions"]))
    encode_once(loaded, paths[:8], texts[:8])  # first-call set-up, outside both timings
    bare_t, _ = timed(lambda: encode_once(loaded, paths, texts))
    emb = Embedder(loaded, cache_dir=None, batch_size=64, workers=1)
    probe_t, groups = timed(lambda: pairs_probe(data, emb, n_boot=1000, seed=0))
    print()
    print(f"pair probe on the comco pair set: {args.model} (random weights), 1 torch thread, {len(trials)} trials, "
          f"{len(paths)} images, {len(texts)} texts, {len(groups)} groups")
    print(f"{'measure':36s} {'probe':>8s} {'encode once':>12s} {'ratio':>7s}")
    print(f"{'pair probe, cold (s)':36s} {probe_t:8.2f} {bare_t:12.2f} {probe_t / bare_t:7.2f}")


if __name__ == "__main__":
    main()
