"""Export speed and memory: seconds for 10,000 images per format, and peak memory for
1,000 vs 10,000 images (it must not grow: records stream from scenes.jsonl); and the
validation every export runs first (`comco validate`'s check, every image decoded), alone.

    python benchmarks/export.py [N]        # default 10000; the small run is N/10

The datasets are planned (2-5 objects) and given cheap placeholder PNGs (96 px, a noise
patch so each file is distinct and a few kB), written once by this script. Each export
runs in a fresh process (imports included), so its peak RSS is the export's alone.
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child would report its parent's peak
# fmt "validate": the check every export runs first (comco validate, every image decoded), alone
CHILD = """
import sys, time
from comco.data import export_dataset, validate_dataset
root, fmt, out = sys.argv[1:4]
t = time.perf_counter()
if fmt == "validate":
    problems = validate_dataset(root, images=True)
    assert not problems, problems[:3]
    s = {"images": 0, "texts": 0}
else:
    s = export_dataset(root, fmt, out, quiet=True)
dt = time.perf_counter() - t
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(dt, hwm, s["images"], s["texts"])
"""
FORMATS = ("validate", "clip-benchmark", "open-clip-csv", "open-clip-wds", "hf")
SIZE = 96


def make_dataset(root: Path, n: int, images_from: Path | None = None) -> float:
    """Plan n scenes and give each a placeholder PNG; returns the seconds the images took."""
    import numpy as np
    from PIL import Image

    from comco.data.writer import run_plan
    from comco.io import read_jsonl
    from comco.plan import PlanConfig

    run_plan(PlanConfig(n=n, objects=(2, 3, 4, 5), seed=0, resolution=(SIZE, SIZE)), root, quiet=True)
    (root / "images").mkdir(exist_ok=True)
    t = time.perf_counter()
    rng = np.random.default_rng(0)
    for record in read_jsonl(root / "scenes.jsonl"):
        target = root / record["image"]
        if images_from is not None and (images_from / record["image"]).is_file():
            target.hardlink_to(images_from / record["image"])
            continue
        pixels = np.full((SIZE, SIZE, 3), 128, np.uint8)
        pixels[:24, :24] = rng.integers(0, 256, (24, 24, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(target)
    return time.perf_counter() - t


def export(root: Path, fmt: str, out: Path) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, str(root), fmt, str(out)], capture_output=True, text=True,
                       check=True)
    dt, rss, images, texts = r.stdout.split()
    return {"seconds": float(dt), "peak_mib": int(rss) / 1024, "images": int(images), "texts": int(texts)}


def folder_mib(path: Path, new_only: bool = False) -> float:
    """MiB of the files under path (with new_only, less the hard links into the dataset)."""
    seen, total = set(), 0
    for p in path.rglob("*"):
        st = p.stat()
        if p.is_file() and st.st_ino not in seen and not (new_only and st.st_nlink > 1):
            seen.add(st.st_ino)
            total += st.st_size
    return total / 2**20


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    small = max(100, n // 10)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t = time.perf_counter()
        make_seconds = make_dataset(tmp / "big", n)
        make_dataset(tmp / "small", small, images_from=tmp / "big")
        print(f"made datasets of {n} and {small} images in {time.perf_counter() - t:.1f} s "
              f"({make_seconds:.1f} s writing {n} PNGs, {folder_mib(tmp / 'big' / 'images'):.0f} MiB)")
        rows = []
        for fmt in FORMATS:
            a = export(tmp / "small", fmt, tmp / f"{fmt}-small")
            b = export(tmp / "big", fmt, tmp / f"{fmt}-big")
            rows.append((fmt, a, b, folder_mib(tmp / f"{fmt}-big", new_only=True) if fmt != "validate" else 0.0))
        print(f"{'format':<15} {'images':>7} {'captions':>9} {'seconds':>8} {'images/s':>9} {'written MiB':>11} "
              f"{'peak MiB ' + str(small):>15} {'peak MiB ' + str(n):>15} {'ratio':>6}")
        for fmt, a, b, mib in rows:
            rate = b["images"] / b["seconds"] if b["images"] else 0
            print(f"{fmt:<15} {b['images']:>7} {b['texts']:>9} {b['seconds']:>8.2f} {rate:>9.0f} {mib:>11.1f} "
                  f"{a['peak_mib']:>15.1f} {b['peak_mib']:>15.1f} {b['peak_mib'] / a['peak_mib']:>6.2f}")
        print("peak memory ratio ~1.0 means the export streams (10x the images, the same memory); "
              "hf writes hard links to the dataset's images, not copies; 'validate' is the check every "
              "export runs first, alone (its seconds are part of each format's)")
        print(json.dumps({fmt: {"seconds": b["seconds"], "peak_mib_small": a["peak_mib"],
                                "peak_mib": b["peak_mib"]} for fmt, a, b, _ in rows}))


if __name__ == "__main__":
    main()
