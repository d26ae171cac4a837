"""Planner speed and memory: scenes per second for five-object scenes, and peak memory
against n (it must not grow: records stream to disk).

    python benchmarks/plan.py [N]        # default 100000, as the foundation issue asks
"""

import json
import subprocess
import sys
import tempfile

CHILD = """
import resource, sys, time, pathlib
from comco.plan_run import run_plan
from comco.planner import PlanConfig
n, workers, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
t = time.perf_counter()
run_plan(PlanConfig(n=n, objects=(5,), seed=0), pathlib.Path(out), quiet=True, workers=workers)
dt = time.perf_counter() - t
rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(dt, rss)
"""


def run(n: int, workers: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([sys.executable, "-c", CHILD, str(n), str(workers), out], capture_output=True, text=True,
                           check=True)
        dt, rss = r.stdout.split()
        return float(dt), float(rss) / 1024


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rows = {}
    for label, count, workers in (("serial, n/10", max(1000, n // 10), 1), ("2 workers, n/2", n // 2, 2),
                                  ("2 workers, n", n, 2)):
        rows[label] = run(count, workers) + (count,)
    print(f"{'run':<18} {'scenes':>8} {'seconds':>8} {'scenes/s':>9} {'peak MiB':>9}")
    for label, (dt, mib, count) in rows.items():
        print(f"{label:<18} {count:>8} {dt:>8.2f} {count / dt:>9.0f} {mib:>9.1f}")
    dt_s, _, c_s = rows["serial, n/10"]
    dt_h, mem_h, c_h = rows["2 workers, n/2"]
    dt_n, mem_n, c_n = rows["2 workers, n"]
    print(f"parallel speed-up (rates): {(c_n / dt_n) / (c_s / dt_s):.2f}x")
    print(f"peak memory n / (n/2): {mem_n / mem_h:.2f}x (flat means streaming works)")
    print(f"{c_n} five-object scenes: {dt_n:.1f} s (target < 10 s)")
    print(json.dumps({"n": c_n, "seconds": dt_n, "peak_mib": mem_n}))


if __name__ == "__main__":
    main()
