"""The untrained prior of each text attention (issue 26): a scratch CLIP's initial weights,
per seed, with the causal tower and the bidirectional one (mean or first-token pooling),
probed on a lab test set (TOR first-mention share, conditional as ComCO reports it, and
presence TOR).

    python benchmarks/priors.py --test RUN/stages/render-test-simco/data [--seeds 0,1,2] \\
        [--resolution 64 --width 128 --layers 2 --tower conv]

Prints one JSON line per (tower, seed) and the mean over seeds per tower.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

TOWERS = {"causal": {"text_attention": "causal"},
          "bidirectional, mean": {"text_attention": "bidirectional", "text_pool": "mean"},
          "bidirectional, first": {"text_attention": "bidirectional", "text_pool": "first"}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--test", type=Path, required=True)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--resolution", type=int, default=64)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--tower", default="conv")
    args = ap.parse_args()

    import numpy as np

    from comco.models import load_model
    from comco.probes import Embedder, development_point, open_dataset
    from comco.train import save_initial

    test = open_dataset(args.test)
    w = args.width
    size = {"resolution": args.resolution, "patch_size": 8, "context_length": 32, "vision_width": w, "text_width": w,
            "embed_dim": w, "vision_layers": args.layers, "text_layers": args.layers, "vision_tower": args.tower}
    with tempfile.TemporaryDirectory() as tmp:
        for name, tower in TOWERS.items():
            rows = []
            for seed in (int(s) for s in args.seeds.split(",")):
                path = save_initial(Path(tmp) / f"{len(rows)}.pt", seed, {**size, **tower})
                emb = Embedder(load_model(f"ckpt:{path}", None, "cpu"), cache_dir=None, batch_size=256)
                point = development_point(test, emb, "and")
                rows.append({k: v for k, v in point.items() if k.startswith("TOR") or k == "presence TOR"})
                print(json.dumps({"tower": name, "seed": seed, **{k: round(v, 3) for k, v in rows[-1].items()}}),
                      flush=True)
            print(json.dumps({"tower": name, "mean over seeds": {k: round(float(np.nanmean([r[k] for r in rows])), 3)
                                                                 for k in rows[0]}}), flush=True)


if __name__ == "__main__":
    main()
