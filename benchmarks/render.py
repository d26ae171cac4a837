"""Renderer speed, side by side in one run (machines are noisy: compare the ratios).

    python benchmarks/render.py [--quick]

1. overhead: `comco render` seconds per image (render + ID-render measurement + files)
   over bare bpy.ops.render.render of the same scenes in one process (target <= 1.15;
   draft, 224 px, one worker);
2. against the naive way (factory reset, rebuild stage and objects every image, as
   CLEVR's generator does, then render and measure the same): speed-up at 224 px with
   the comco set (target >= 1.5x);
3. draft images per second at 128 and 224 px with 2 workers (target >= 10 at 128);
4. Cycles seconds per image at 224 and 512 px (default preset);
5. peak RSS of a worker after 100 and after 1,000 images (growth under 10 %).
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable

BARE = r"""
import json, sys, time, os
import bpy
from comco.manifest import load_object_set
from comco.scenes.instancer import Instancer
from comco.scenes.stage import build_stage, reset, set_camera, set_lights, render_to
records = [json.loads(l) for l in open(sys.argv[1])]
mode, out = sys.argv[2], sys.argv[3]
w, h = records[0]["resolution"]
from comco.scenes.measure import build_id_scene, measure
def fresh():
    reset()
    scene = build_stage("draft", w, h)
    coll = bpy.data.collections.new("objects"); scene.collection.children.link(coll)
    return scene, Instancer(load_object_set(records[0]["object_set"]), coll), build_id_scene(scene, coll)
scene, inst, ids = fresh()
t = time.perf_counter()
for r in records:
    if mode == "naive":
        scene, inst, ids = fresh()
    set_camera(scene, r["camera"]); set_lights(scene, r["lights"])
    live = [inst.add(o, i) for i, o in enumerate(r["objects"])]
    render_to(scene, os.path.join(out, r["id"] + ".png"))
    if mode == "naive":  # the naive pipeline does the same job: it measures too
        measure(ids, live, out)
    inst.clear()
print(time.perf_counter() - t)
"""


def comco(*args) -> float:
    t = time.perf_counter()
    subprocess.run([PY, "-m", "comco.cli", "render", "--quiet", *map(str, args)], check=True, capture_output=True)
    return time.perf_counter() - t


def plan(out: Path, n: int, res: int) -> Path:
    subprocess.run([PY, "-m", "comco.cli", "plan", "--quiet", "--n", str(n), "--resolution", str(res),
                    "--out", str(out)], check=True)
    return out / "scenes.jsonl"


def bare(records: Path, mode: str, out: str) -> float:
    r = subprocess.run([PY, "-c", BARE, str(records), mode, out], check=True, capture_output=True, text=True)
    return float(r.stdout.strip().splitlines()[-1])


def worker_memory(out: Path, n: int) -> dict:
    from comco.plan import PlanConfig
    from comco.render import RenderOptions, run_render

    cfg = PlanConfig(n=n, resolution=(64, 64))
    summary = run_render(cfg, RenderOptions(preset="draft", max_per_worker=10 * n), out, quiet=True)
    return summary["rss_mb"]


def main() -> None:
    quick = "--quick" in sys.argv
    n = 12 if quick else 40
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        recs = plan(tmp / "p224", n, 224)
        # 1 + 2: the same scenes three ways (startup excluded from the bare loops, included for comco)
        res["bare_s_per_image"] = bare(recs, "reuse", str(tmp)) / n
        res["naive_s_per_image"] = bare(recs, "naive", str(tmp)) / n
        t_start = comco("--n", 1, "--resolution", 224, "--preset", "draft", "--out", tmp / "warm")
        t = comco("--n", n, "--resolution", 224, "--preset", "draft", "--out", tmp / "c224")
        res["comco_s_per_image"] = (t - t_start) / (n - 1)  # startup (one worker, one image) subtracted
        # 3: draft throughput with 2 workers: the marginal rate between two run lengths
        # (steady state), and the whole-command rate of the longer run (startup included)
        for px in (128, 224):
            t1 = comco("--n", n, "--resolution", px, "--preset", "draft", "--workers", 2, "--out", tmp / f"a{px}")
            t2 = comco("--n", 4 * n, "--resolution", px, "--preset", "draft", "--workers", 2, "--out", tmp / f"b{px}")
            res[f"draft_{px}_images_per_s"] = 3 * n / (t2 - t1)
            res[f"draft_{px}_images_per_s_with_startup"] = 4 * n / t2
        # 4: Cycles
        for px in (224, 512):
            k = 3
            t = comco("--n", k, "--resolution", px, "--preset", "cycles", "--out", tmp / f"cy{px}")
            res[f"cycles_{px}_s_per_image"] = t / k
        # 5: memory of one worker that is never restarted
        res["rss_mb"] = worker_memory(tmp / "mem", 120 if quick else 1000)
    print(f"bare bpy render loop      {res['bare_s_per_image']:.3f} s/image")
    print(f"comco render (1 worker)   {res['comco_s_per_image']:.3f} s/image  -> overhead "
          f"{res['comco_s_per_image'] / res['bare_s_per_image']:.2f}x (target <= 1.15)")
    print(f"naive rebuild per image   {res['naive_s_per_image']:.3f} s/image  -> comco speed-up "
          f"{res['naive_s_per_image'] / res['comco_s_per_image']:.2f}x (target >= 1.5)")
    print(f"draft, 2 workers          {res['draft_128_images_per_s']:.1f} images/s at 128 px (target >= 10), "
          f"{res['draft_224_images_per_s']:.1f} at 224 px; with startup "
          f"{res['draft_128_images_per_s_with_startup']:.1f} and {res['draft_224_images_per_s_with_startup']:.1f}")
    print(f"cycles                    {res['cycles_224_s_per_image']:.2f} s/image at 224 px, "
          f"{res['cycles_512_s_per_image']:.2f} at 512 px (startup included)")
    rss = res["rss_mb"]
    last = max(rss)
    print(f"worker peak RSS           {rss.get(100, float('nan')):.0f} MiB after 100 images, {rss[last]:.0f} MiB after "
          f"{last} -> growth {rss[last] / rss.get(100, rss[last]) - 1:+.1%} (target < 10 %)")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
