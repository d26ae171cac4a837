"""`comco eval retrieval` wall time over a bare encode loop on the same images and captions.

    .venv/bin/python benchmarks/eval.py                      # CPU: ViT-S-32, 192 images x 5 captions
    .venv/bin/python benchmarks/eval.py --device cuda --model ViT-B-16 --images 2000

Writes a Flickr30k-layout fixture (token file + JPEGs of natural-image size), then times
in one process, alternating, best of --repeats:
- bare: load the model, decode + preprocess + encode every image in batches, tokenize +
  encode every caption in batches (the same autocast as the eval on CUDA);
- eval: run_natural_eval (load split, check headers, hash, embed, store to a cold cache,
  recall with bootstrap intervals, results.json, tables and a plot);
- eval, warm: the same with the cache filled (information only).
Target: eval / bare <= 1.1.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

WORDS = ("a man woman dog cat red blue green small large street park table chair holding sitting "
         "standing next to near under over with two three people child ball car bike tree").split()


def write_fixture(root: Path, n_images: int, size: int, seed: int = 0) -> Path:
    """Flickr30k layout: results_20130124.token and flickr30k-images/*.jpg, five captions each."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    (root / "flickr30k-images").mkdir(parents=True)
    lines = []
    for i in range(n_images):
        # smooth colour fields plus noise: JPEGs of realistic size and decode cost
        base = rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)
        img = Image.fromarray(base).resize((size, size * 3 // 4), Image.BICUBIC)
        noisy = np.clip(np.asarray(img, dtype=np.int16) + rng.integers(-20, 20, (size * 3 // 4, size, 3)), 0, 255)
        Image.fromarray(noisy.astype(np.uint8)).save(root / "flickr30k-images" / f"{i}.jpg", quality=90)
        for j in range(5):
            caption = " ".join(rng.choice(WORDS, size=int(rng.integers(8, 20))))
            lines.append(f"{i}.jpg#{j}\t{caption} .")
    (root / "results_20130124.token").write_text("\n".join(lines) + "\n")
    return root


def bare_encode(model: str, pretrained: str, device: str, root: Path, batch_size: int) -> float:
    import torch
    from PIL import Image

    from comco.models import load_model

    start = time.perf_counter()
    loaded = load_model(model, pretrained, device)
    pairs = [line.split("\t") for line in (root / "results_20130124.token").read_text().splitlines()]
    texts = [caption for _, caption in pairs]
    images = list(dict.fromkeys(root / "flickr30k-images" / key.split("#")[0] for key, _ in pairs))
    autocast = torch.autocast("cuda", dtype=torch.float16) if device.startswith("cuda") else nullcontext()
    with torch.inference_mode(), autocast:
        for i in range(0, len(images), batch_size):
            x = torch.stack([loaded.preprocess(Image.open(p).convert("RGB")) for p in images[i:i + batch_size]])
            loaded.encode_image(x).float().cpu()
        for i in range(0, len(texts), batch_size):
            loaded.encode_text(loaded.tokenize(texts[i:i + batch_size])).float().cpu()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - start


def full_eval(model: str, pretrained: str, device: str, root: Path, batch_size: int, cache: Path,
              out: Path) -> float:
    from comco.models import ModelRef
    from comco.probes.natural import run_natural_eval

    start = time.perf_counter()
    run_natural_eval("retrieval", "flickr30k", root, [ModelRef(model, pretrained)], "all", out,
                     device=device, batch_size=batch_size, cache_dir=cache)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="ViT-S-32")
    parser.add_argument("--pretrained", default="none")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--images", type=int, default=192)
    parser.add_argument("--size", type=int, default=400, help="image width in pixels")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="comco-bench-eval-"))
    try:
        root = write_fixture(work / "flickr", args.images, args.size)
        common = (args.model, args.pretrained, args.device, root, args.batch_size)
        bare_encode(*common)  # warm-up: imports, kernels, the file cache
        bare, cold, warm = [], [], []
        for r in range(args.repeats):
            bare.append(bare_encode(*common))
            cache = work / f"cache{r}"
            cold.append(full_eval(*common, cache, work / "out"))
            warm.append(full_eval(*common, cache, work / "out"))
        b, c, w = min(bare), min(cold), min(warm)
        print(f"{args.images} images, {5 * args.images} captions, {args.model} ({args.pretrained}) on {args.device}, "
              f"batch {args.batch_size}, best of {args.repeats}")
        print(f"bare encode loop         {b:7.2f} s")
        print(f"comco eval, cold cache   {c:7.2f} s   ratio {c / b:.3f}  (target <= 1.1)")
        print(f"comco eval, warm cache   {w:7.2f} s   ratio {w / b:.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
