"""Why the lab runs independent trainings side by side with one thread each.

    python benchmarks/lab.py [--steps 60]

Two `comco train scratch` runs of the same size, on a small rendered simco set:
(a) one after the other, each with 2 torch threads; (b) both at once, 1 thread each.
Prints both wall times and their ratio, measured in one run. For the whole lab's
wall time per stage, see the "What was run" section of a report (docs/lab-small/).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable


def train(data: Path, out: Path, steps: int, threads: int, seed: int) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return subprocess.Popen([PY, "-m", "comco.cli", "train", "scratch", "--data", str(data), "--steps", str(steps),
                             "--seed", str(seed), "--device", "cpu", "--workers", "0", "--quiet", "--out", str(out)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_all(procs) -> None:
    for p in procs:
        _, err = p.communicate()
        if p.returncode:
            raise SystemExit(err[-2000:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = tmp / "data"
        subprocess.run([PY, "-m", "comco.cli", "render", "--object-set", "simco", "--objects", "1-4", "--n", "400",
                        "--preset", "draft", "--resolution", "64", "--workers", "2", "--quiet", "--out", str(data)],
                       check=True, capture_output=True)
        t = time.perf_counter()
        for seed in (0, 1):
            wait_all([train(data, tmp / f"seq{seed}", args.steps, 2, seed)])
        sequential = time.perf_counter() - t
        t = time.perf_counter()
        wait_all([train(data, tmp / f"par{seed}", args.steps, 1, seed) for seed in (0, 1)])
        parallel = time.perf_counter() - t
    print(f"two trainings of {args.steps} steps: one after the other with 2 threads {sequential:.1f} s, "
          f"side by side with 1 thread each {parallel:.1f} s -> {sequential / parallel:.2f}x")


if __name__ == "__main__":
    main()
