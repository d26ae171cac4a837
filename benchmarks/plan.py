"""Planner speed and memory: scenes per second for five-object scenes, and peak memory
against n (it must not grow: records stream to disk).

    python benchmarks/plan.py [N]        # default 100000, as the foundation issue asks

Each run is a fresh process (imports, planner set-up and the write to disk included).
Printed side by side from one run: 1 worker vs 2 workers on the same n/5 scenes (the
parallel speed-up), n/2 vs n with 2 workers (memory must stay flat), and the CPU time
of the writer (parent) and the planning workers.
"""

import json
import subprocess
import sys
import tempfile

CHILD = """
import resource, sys, time, pathlib
from comco.data.writer import run_plan
from comco.plan import PlanConfig
n, workers, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
t = time.perf_counter()
run_plan(PlanConfig(n=n, objects=(5,), seed=0), pathlib.Path(out), quiet=True, workers=workers)
dt = time.perf_counter() - t
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
rss = max(me.ru_maxrss, kids.ru_maxrss)
print(dt, rss, me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime)
"""


def run(n: int, workers: int) -> dict:
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([sys.executable, "-c", CHILD, str(n), str(workers), out], capture_output=True, text=True,
                           check=True)
        dt, rss, cpu_parent, cpu_workers = map(float, r.stdout.split())
        return {"n": n, "seconds": dt, "peak_mib": rss / 1024, "cpu_parent": cpu_parent, "cpu_workers": cpu_workers}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rows = {
        "1 worker, n/5": run(max(1000, n // 5), 1),
        "2 workers, n/5": run(max(1000, n // 5), 2),
        "2 workers, n/2": run(n // 2, 2),
        "2 workers, n": run(n, 2),
    }
    print(f"{'run':<16} {'scenes':>8} {'seconds':>8} {'scenes/s':>9} {'peak MiB':>9} {'cpu writer':>10} "
          f"{'cpu workers':>11}")
    for label, r in rows.items():
        print(f"{label:<16} {r['n']:>8} {r['seconds']:>8.2f} {r['n'] / r['seconds']:>9.0f} {r['peak_mib']:>9.1f} "
              f"{r['cpu_parent']:>10.2f} {r['cpu_workers']:>11.2f}")
    one, two = rows["1 worker, n/5"], rows["2 workers, n/5"]
    half, full = rows["2 workers, n/2"], rows["2 workers, n"]
    print(f"parallel speed-up, same scenes: {one['seconds'] / two['seconds']:.2f}x")
    print(f"peak memory n / (n/2): {full['peak_mib'] / half['peak_mib']:.2f}x (flat means streaming works)")
    print(f"planning CPU per scene: {1e6 * (full['cpu_workers'] or full['cpu_parent']) / full['n']:.0f} us")
    print(f"{full['n']} five-object scenes: {full['seconds']:.1f} s (target < 10 s)")
    print(json.dumps({"n": full["n"], "seconds": full["seconds"], "peak_mib": full["peak_mib"]}))


if __name__ == "__main__":
    main()
