"""Probe speed, measured side by side in one run (never a timed test).

1. probe wall time / a bare open_clip encode loop over the same inputs (target <= 1.1):
   text-only TOR (captions + name gallery) and IOR + I2TOR (scene images, single-object
   renders, name texts), the model loaded once outside both timings;
2. the same probe again with a warm embedding cache (target >= 20x faster);
3. text-only TOR captions per second with ViT-B-32 (random weights) on this machine.

    .venv/bin/python benchmarks/probe.py [--model ViT-B-32] [--tuples 144] [--images 16]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def bare_texts(model, tokenizer, texts, batch):
    import torch

    with torch.inference_mode():
        for i in range(0, len(texts), batch):
            model.encode_text(tokenizer(texts[i:i + batch]))


def bare_images(model, preprocess, paths, batch):
    import torch
    from PIL import Image

    with torch.inference_mode():
        for i in range(0, len(paths), batch):
            x = torch.stack([preprocess(Image.open(p).convert("RGB")) for p in paths[i:i + batch]])
            model.encode_image(x)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="ViT-B-32")
    ap.add_argument("--tuples", type=int, default=144, help="text-only captions per object count (2 counts)")
    ap.add_argument("--images", type=int, default=16, help="scene images for the image-side comparison")
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()

    import torch
    from test_probes_fixtures import make_dataset

    from comco.models import load_model
    from comco.probes import texts
    from comco.probes.embed import Embedder
    from comco.probes.ior import i2tor, ior
    from comco.probes.probe_data import open_dataset
    from comco.probes.tor import gallery_texts, tor_text_only

    loaded = load_model(args.model, "none")
    model, tokenizer = loaded.model, loaded._tokenize
    book = texts.template_book()
    tpl = book.templates["photo"]
    work = Path(tempfile.mkdtemp(prefix="comco-bench-"))
    data = open_dataset(make_dataset(work / "ds", n=args.images, objects=(3, 4), resolution=256))
    names, oset = data.names, data.object_set
    print(f"model {args.model} (random weights), torch threads {torch.get_num_threads()}, "
          f"{args.tuples} tuples x 2 counts, {len(data.records)} scenes + {len(data.singles)} singles")

    # -- text-only TOR: the same captions the probe writes, encoded by a plain loop
    counts = [3, 4]
    import numpy as np

    caps = []
    for n in counts:
        tup = texts.balanced_tuples(len(names), n, args.tuples, np.random.default_rng([0, n]))
        caps += [texts.write(tpl, [names[i] for i in t], oset) for t in tup]
    gallery = gallery_texts(tpl, names, oset)
    bare_t, _ = timed(lambda: bare_texts(model, tokenizer, caps + gallery, args.batch))

    def tor_probe(cache):
        emb = Embedder(loaded, cache_dir=cache, batch_size=args.batch)
        return tor_text_only(names, oset, emb, tpl, counts, tuples=args.tuples, n_boot=1000, seed=0)

    cache = work / "cache"
    probe_t, groups = timed(lambda: tor_probe(cache))
    warm_t, _ = timed(lambda: tor_probe(cache))
    n_caps = sum(g["queries"] for g in groups)

    # -- image side: IOR + I2TOR on the scenes and singles
    paths = [data.image_path(r) for r in data.records] + [data.image_path(s) for s in data.singles]
    name_texts = gallery_texts(tpl, names, oset)
    bare_i, _ = timed(lambda: (bare_images(model, loaded.preprocess, paths, args.batch),
                               bare_texts(model, tokenizer, name_texts, args.batch)))

    def image_probe(c):
        emb = Embedder(loaded, cache_dir=c, batch_size=args.batch)
        ior(data, emb, n_boot=1000, seed=0)
        i2tor(data, emb, tpl, n_boot=1000, seed=0)

    icache = work / "icache"
    probe_i, _ = timed(lambda: image_probe(icache))
    warm_i, _ = timed(lambda: image_probe(icache))

    print()
    print(f"{'measure':44s} {'probe':>9s} {'bare loop':>10s} {'ratio':>7s}  target")
    print(f"{'text-only TOR, cold (s)':44s} {probe_t:9.2f} {bare_t:10.2f} {probe_t / bare_t:7.2f}  <= 1.1")
    print(f"{'IOR + I2TOR, cold (s)':44s} {probe_i:9.2f} {bare_i:10.2f} {probe_i / bare_i:7.2f}  <= 1.1")
    print(f"{'text-only TOR, warm cache speed-up':44s} {warm_t:9.3f} {probe_t:10.2f} {probe_t / warm_t:7.1f}x >= 20x")
    print(f"{'IOR + I2TOR, warm cache speed-up':44s} {warm_i:9.3f} {probe_i:10.2f} {probe_i / warm_i:7.1f}x >= 20x")
    print(f"{'text-only TOR captions/s (cold)':44s} {n_caps / probe_t:9.1f} {len(caps) / bare_t:10.1f}")


if __name__ == "__main__":
    main()
