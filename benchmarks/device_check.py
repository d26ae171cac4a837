"""GPU checks for a lent GPU machine, as one short prepared run.

    python3 benchmarks/device_check.py [--images 1024] [--steps 12]

Prints: the GPU, whether bpy can run there (it needs Python 3.11), and fine-tuning
throughput of a ViT-B/16-sized model (random weights) for the `longclip` and `debias`
trainers at the paper's global batch of 256 in bf16, side by side in one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def gpu() -> str:
    exe = shutil.which("nvidia-smi")
    return subprocess.run([exe, "-L"], capture_output=True, text=True).stdout.strip() if exe else "none"


def finetune(kind: str, data: Path, out: Path, steps: int, batch: int) -> dict:
    cmd = [sys.executable, "-m", "comco.cli", "train", kind, "--data", str(data), "--init", "ViT-B-16",
           "--pretrained", "none", "--batch-size", str(batch), "--steps", str(steps), "--warmup", "2",
           "--device", "cuda", "--quiet", "--out", str(out)]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-3:]}
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    steady = rows[3:] or rows
    return {"samples_per_s": round(statistics.median(x["samples_per_s"] for x in steady), 1),
            "data_share": round(statistics.mean(x.get("data_share", 0.0) for x in steady), 3),
            "wall_s": round(time.perf_counter() - t, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()
    report = {"gpu": gpu(), "python": sys.version.split()[0],
              "python3.11_present": bool(shutil.which("python3.11")),
              "bpy_importable": importlib.util.find_spec("bpy") is not None}
    from test_train_fixtures import make_dataset

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t = time.perf_counter()
        data = make_dataset(tmp / "data", n=args.images, resolution=224)
        report["dataset_s"] = round(time.perf_counter() - t, 1)
        for kind in ("longclip", "debias"):
            report[kind] = finetune(kind, data, tmp / kind, args.steps, args.batch)
            print(kind, report[kind], flush=True)
    if "samples_per_s" in report["longclip"] and "samples_per_s" in report["debias"]:
        report["debias_over_longclip_time"] = round(report["longclip"]["samples_per_s"]
                                                    / report["debias"]["samples_per_s"], 3)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
