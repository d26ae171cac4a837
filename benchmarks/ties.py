"""Near-ties of an untrained tower: does the tie rule catch every top-1 that rounding decides?

    .venv/bin/python benchmarks/ties.py [--recipe recipes/order-bias.toml] [--scale medium] [--out DIR]

Renders the recipe's held-out test set and probes each seed's untrained prior with the lab's own
stage functions (comco.lab.stages.execute; no training), then embeds the test images and the
single renders twice with the same weights: in float32, as comco embeds, and in float64, the
reference path. The IOR top-1 of an image that differs between the two paths is decided by
rounding. Side by side per seed, the script prints the images whose top-1 flips, how many of them
the rule (comco.probes.retrieval.near_ties, TIE_ULPS units in the last place) flags as ties, the
largest gap of a flipped image in float32 ulps, and what the IOR prior groups counted as ties.
An image whose top-1 flips but is not flagged would be rounding read as a preference.

The figures behind docs/lab-medium's findings 6 and 8 (recomputed for issue 39) came from this
script at --scale medium.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def prior_stages(recipe_path: Path, scale: str, out: Path) -> tuple[Path, dict[int, Path]]:
    """The test render and each seed's prior probe, run (or reused) under `out`."""
    from comco.lab.graph import build_stages
    from comco.lab.recipe import load_recipe
    from comco.lab.stages import execute

    stages = {s.id: s for s in build_stages(load_recipe(recipe_path, scale))}
    priors = [s for s in stages.values() if s.kind == "probe" and s.config.get("prior")]
    render = stages[priors[0].deps["test"]]
    done = out / render.id / "done.json"
    if not done.exists():
        done.parent.mkdir(parents=True, exist_ok=True)
        done.write_text(json.dumps(execute("render", render.config, {}, str(out / render.id)), default=str))
    folders = {}
    for st in priors:
        marker = out / st.id / "done.json"
        if not marker.exists():
            summary = execute("probe", st.config, {"test": str(out / render.id)}, str(out / st.id))
            marker.write_text(json.dumps(summary, default=str))
        folders[st.config["prior"]["seed"]] = out / st.id
    return out / render.id / "data", folders


def flips(data_dir: Path, weights: Path) -> dict:
    """IOR top-1 in float32 against float64 for one model, and what the tie rule flags."""
    import numpy as np

    from comco.models import load_model
    from comco.probes import Embedder, open_dataset
    from comco.probes.retrieval import cosine, near_ties

    data = open_dataset(data_dir)
    sims = {}
    for path in ("fp32", "fp64"):
        m = load_model(f"ckpt:{weights}", None, "cpu")
        if path == "fp64":
            m.model.double()
            m._encode_image = lambda b, enc=m.model.encode_image: enc(b.double())
        e = Embedder(m, cache_dir=None, batch_size=128)
        sims[path] = cosine(e.images([data.image_path(r) for r in data.records]),
                            e.images([data.image_path(s) for s in data.singles]))
    a, b = sims["fp32"], sims["fp64"]
    flip = a.argmax(1) != b.argmax(1)
    tied = near_ties(a)
    top2 = -np.sort(-a, axis=1)[:, :2]
    gap = (top2[:, 0] - top2[:, 1]) / np.spacing(top2[:, 0].astype(np.float32)).astype(np.float64)
    return {"images": int(len(a)), "flips": int(flip.sum()), "flagged": int((flip & tied).sum()),
            "max_flip_gap_ulps": float(gap[flip].max()) if flip.any() else None,
            "cosines": [float(a.min()), float(a.max())]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", type=Path, default=ROOT / "recipes" / "order-bias.toml")
    parser.add_argument("--scale", default="medium")
    parser.add_argument("--out", type=Path, default=Path("/tmp/comco-bench-ties"))
    args = parser.parse_args()
    from comco.probes.retrieval import TIE_ULPS

    data_dir, folders = prior_stages(args.recipe, args.scale, args.out)
    print(f"tie rule: {TIE_ULPS} float32 ulps; test render {data_dir}")
    print(f"{'seed':>4s} {'images':>6s} {'fp32/fp64 flips':>15s} {'flagged ties':>12s} {'max flip gap':>12s} "
          f"{'IOR ties (3 obj)':>16s} {'IOR ties (4 obj)':>16s}")
    for seed, folder in sorted(folders.items()):
        f = flips(data_dir, next(folder.rglob("*.pt")))
        ior = json.loads((folder / "results.json").read_text())["ior"]
        counts = [f"{ior[n]['ties']} of {ior[n]['queries']}" if n in ior else "-" for n in ("3", "4")]
        gap = "-" if f["max_flip_gap_ulps"] is None else f"{f['max_flip_gap_ulps']:.2f} ulp"
        print(f"{seed:>4d} {f['images']:>6d} {f['flips']:>15d} {f['flagged']:>12d} {gap:>12s} "
              f"{counts[0]:>16s} {counts[1]:>16s}")


if __name__ == "__main__":
    main()
