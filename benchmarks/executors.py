"""The lab's four executors on the whole smoke scale, side by side in one run.

    python benchmarks/executors.py [--keep DIR] [--executors local,node,slurm,slurm-local]

Runs `comco lab run recipes/order-bias.toml --scale smoke` (every stage) once through each
executor, one after the other: local (the process pool), node (one process per stage; a
fake list of two GPUs, so the smoke recipe's CPU stages are placed on this machine's cores),
slurm (the stand-in sbatch / srun / sacct / scancel of tests/support/fakeslurm.py on PATH,
jobs as local processes) and slurm-local (submitit's LocalExecutor). Prints each wall time
and its ratio to local's, then whether the stage hashes and results.json are the same
(tests/test_lab_executors_smoke.py asserts it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    from support.labrun import EXECUTORS, RECIPE, executor_runs

    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", type=Path, help="keep the four run folders here (default: a temporary folder)")
    ap.add_argument("--executors", default=",".join(EXECUTORS))
    args = ap.parse_args()
    names = tuple(args.executors.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for line in report(executor_runs(RECIPE, folder, names)):
            print(line)


def report(runs: dict) -> list[str]:
    """{executor: (OUT, wall seconds)} as lines: the wall times side by side, then the verdict."""
    from support.labrun import differences, stage_hashes

    first, (_, base) = next(iter(runs.items()))
    lines = [f"{name:<12} {wall / 60:6.1f} min  {wall / base:4.2f}x {first}  ({len(stage_hashes(out))} stages)"
             for name, (out, wall) in runs.items()]
    found = differences(runs)
    return lines + (found or ["same stage hashes and results.json byte for byte"])


if __name__ == "__main__":
    main()
