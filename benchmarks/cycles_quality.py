"""Cycles quality per second: PSNR and SSIM of `--preset cycles` images against a reference
render, per sample count with and without OpenImageDenoise, with seconds per image beside,
side by side in one run (never a timed test).

    nice -n 10 .venv/bin/python benchmarks/cycles_quality.py [--samples 4,8,16,24,32,64,128]
        [--resolutions 224,512] [--scenes 3] [--sets simco,comco] [--realism plain,varied]
        [--reference 1024] [--seed 4] [--cache DIR] [--figure docs/cycles-quality.png] [--json FILE]

The defaults are the whole grid; `--resolutions 224:2,512:1` gives a resolution its own number
of scenes (per object set and realism preset), so a run can be cut to what the machine allows.

The scenes are planned by `comco plan` (seeded; `--realism` is the plan's preset) and staged by
the render workers' own code (comco.scenes.worker.stage_record) in one Blender process per
object set and resolution, on the cycles preset's stage (bounces, lights, colour); only the
samples and the denoiser change (comco.scenes.stage.set_sampling). A test image keeps the
preset's adaptive threshold (0.02): it is what `comco render --preset cycles --samples N` renders
(and with the denoiser off, the other column). The reference is the same scene at
`--reference` samples with adaptive sampling off and no denoiser: the converged image, whose own
noise is sqrt(1024 / N) below an N-sample image's (at 1024 against 24, about 16 dB). References
and test images are cached in `--cache` under a hash of the record and the settings, each
with its seconds, so a rerun (or a killed run started again) renders only what is missing.

Seconds per image: the render call alone (the record's objects added anew before each, as a
worker does; Blender's start, planning and the ID-render measurement left out), as wall seconds
and as the CPU seconds of all Blender's threads (the steadier number on a shared machine).
PSNR: on the 8-bit RGB images, peak 255. SSIM: Wang, Bovik, Sheikh & Simoncelli (2004) on
luminance (BT.601 Y from the 8-bit RGB), an 11 x 11 Gaussian window of sigma 1.5, K1 = 0.01,
K2 = 0.03, L = 255, averaged over the window positions that lie wholly inside the image (their
reference implementation's 'valid' filtering). The knee, per resolution: the setting with the
fewest CPU seconds per image at which every scene reaches KNEE_DB against its reference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from comco.record import PRESET_SAMPLES

KNEE_DB = 35.0
SAMPLES = (4, 8, 16, 24, 32, 64, 128)
RENDER_VERSION = 1  # part of a render's cache key: bump when the stage or the reference's settings change
PRESET_THRESHOLD = 0.02  # the cycles preset's adaptive threshold (scenes/stage.py apply_preset)
PRESET_DEFAULT = (PRESET_SAMPLES["cycles"], True)  # the cycles preset's samples and denoiser, marked

# ---- the metrics (numpy only; tests/test_cycles_quality.py checks them) -----------------------


def luminance(rgb: np.ndarray) -> np.ndarray:
    """BT.601 luma of an 8-bit RGB array (H, W, 3), as float64 on the 0..255 scale."""
    rgb = np.asarray(rgb, dtype=np.float64)
    return rgb[..., 0] * 0.299 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114


def psnr(test: np.ndarray, reference: np.ndarray, peak: float = 255.0) -> float:
    """Peak signal-to-noise ratio in dB over every channel; inf for identical images."""
    mse = np.mean((np.asarray(test, dtype=np.float64) - np.asarray(reference, dtype=np.float64)) ** 2)
    return math.inf if mse == 0 else 10.0 * math.log10(peak * peak / mse)


def gaussian_window(size: int = 11, sigma: float = 1.5) -> np.ndarray:
    x = np.arange(size, dtype=np.float64) - (size - 1) / 2
    g = np.exp(-(x * x) / (2 * sigma * sigma))
    return g / g.sum()


def _filter_valid(img: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The separable Gaussian filter at the positions where the window lies inside the image."""
    k = len(g)
    rows = sum(g[i] * img[i:img.shape[0] - k + 1 + i, :] for i in range(k))
    return sum(g[j] * rows[:, j:rows.shape[1] - k + 1 + j] for j in range(k))


def ssim(test: np.ndarray, reference: np.ndarray, peak: float = 255.0, size: int = 11, sigma: float = 1.5) -> float:
    """Mean SSIM (Wang et al. 2004) of two luminance images (H, W) on the 0..peak scale."""
    x, y = np.asarray(test, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 2 or min(x.shape) < size:
        raise ValueError(f"ssim needs two equal 2-D images of at least {size} px a side, not {x.shape} and {y.shape}")
    g = gaussian_window(size, sigma)
    c1, c2 = (0.01 * peak) ** 2, (0.03 * peak) ** 2
    mx, my = _filter_valid(x, g), _filter_valid(y, g)
    sxx = _filter_valid(x * x, g) - mx * mx
    syy = _filter_valid(y * y, g) - my * my
    sxy = _filter_valid(x * y, g) - mx * my
    s = ((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx * mx + my * my + c1) * (sxx + syy + c2))
    return float(s.mean())


def compare(test_png: Path, reference_png: Path) -> dict:
    a = np.asarray(Image.open(test_png).convert("RGB"))
    b = np.asarray(Image.open(reference_png).convert("RGB"))
    return {"psnr": psnr(a, b), "ssim": ssim(luminance(a), luminance(b))}


# ---- the renders --------------------------------------------------------------------------------

# One Blender process: the cycles preset's stage, then each job (record, samples, denoiser,
# adaptive threshold, PNG) staged as a worker stages it and timed around the render call.
RENDER = r"""
import json, os, resource, sys, time
import bpy
from comco.io import atomic_path
from comco.manifest import load_object_set
from comco.scenes.instancer import Instancer
from comco.scenes.stage import build_stage, render_to, reset, set_sampling
from comco.scenes.worker import stage_record
spec = json.load(open(sys.argv[1]))
reset()
w, h = spec["resolution"]
scene = build_stage("cycles", w, h, threads=spec["threads"])
coll = bpy.data.collections.new("objects"); scene.collection.children.link(coll)
inst = Instancer(load_object_set(spec["object_set"]), coll)
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
# an untimed first render: the kernels and OpenImageDenoise load once per process, not in a job
stage_record(scene, inst, spec["jobs"][0]["record"])
set_sampling(scene, 1, True, 0.02)
render_to(scene, os.path.join(os.path.dirname(sys.argv[1]), "warm-up.png"))
inst.clear()
for job in spec["jobs"]:
    stage_record(scene, inst, job["record"])
    set_sampling(scene, job["samples"], job["denoise"], job["threshold"])
    with atomic_path(job["png"]) as tmp:
        c, t = cpu(), time.perf_counter()
        render_to(scene, str(tmp))
        took = {"wall_s": time.perf_counter() - t, "cpu_s": cpu() - c}
    inst.clear()
    with atomic_path(job["seconds"]) as tmp:
        open(tmp, "w").write(json.dumps(took))
"""


def plan(object_set: str, realism: str, n: int, seed: int, resolution: int, tmp: Path) -> list[dict]:
    out = tmp / f"plan-{object_set}-{realism}-{resolution}"
    subprocess.run([sys.executable, "-m", "comco.cli", "plan", "--quiet", "--object-set", object_set,
                    "--realism", realism, "--objects", "2-4", "--n", str(n), "--seed", str(seed),
                    "--resolution", str(resolution), "--out", str(out)], check=True, capture_output=True)
    return [json.loads(line) for line in (out / "scenes.jsonl").read_text().splitlines()]


def render_key(record: dict, samples: int, denoise: bool = False, threshold: float | None = None) -> str:
    """The cache name of one render: its record and settings (a reference's, no denoiser and no
    adaptive threshold, hash without those two keys)."""
    what = {"record": record, "samples": samples, "version": RENDER_VERSION}
    if denoise or threshold is not None:
        what.update(denoise=denoise, threshold=threshold)
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:20]


def cached(cache: Path, record: dict, samples: int, denoise: bool, threshold: float | None) -> dict:
    """A render's job: its PNG and seconds in the cache (done once both are there)."""
    png = cache / f"{render_key(record, samples, denoise, threshold)}.png"
    return {"record": record, "samples": samples, "denoise": denoise, "threshold": threshold,
            "png": str(png), "seconds": str(png.with_suffix(".json"))}


def is_done(job: dict) -> bool:
    return Path(job["png"]).exists() and Path(job["seconds"]).exists()


def run_blender(object_set: str, resolution: int, jobs: list[dict], threads: int, tmp: Path) -> None:
    """Render the jobs in one Blender process (each PNG and its seconds into the cache)."""
    if not jobs:
        return
    spec = tmp / f"spec-{object_set}-{resolution}.json"
    spec.write_text(json.dumps({"object_set": object_set, "resolution": [resolution, resolution],
                                "threads": threads, "jobs": jobs}))
    done = subprocess.run([sys.executable, "-c", RENDER, str(spec)], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"Blender failed ({object_set}, {resolution} px):\n{done.stderr[-3000:]}")


def measure(args, tmp: Path) -> list[dict]:
    """One row per (resolution, set, realism, scene, samples, denoiser): PSNR, SSIM, seconds.
    Every render is taken from the cache where it is there already (a killed run goes on)."""
    rows = []
    for resolution, n_scenes in args.resolutions:
        for object_set in args.sets:
            scenes = [(realism, i, rec) for realism in args.realism
                      for i, rec in enumerate(plan(object_set, realism, n_scenes, args.seed, resolution, tmp))]
            todo = {}
            for realism, i, rec in scenes:
                ref = cached(args.cache, rec, args.reference, False, None)
                tests = [cached(args.cache, rec, samples, denoise, PRESET_THRESHOLD)
                         for samples in args.samples for denoise in (True, False)]
                todo[(realism, i)] = (ref, tests)
            run_blender(object_set, resolution, [j for ref, tests in todo.values() for j in (ref, *tests)
                                                 if not is_done(j)], args.threads, tmp)
            for (realism, i), (ref, tests) in todo.items():
                ref_s = json.loads(Path(ref["seconds"]).read_text())
                for job in tests:
                    took = json.loads(Path(job["seconds"]).read_text())
                    rows.append({"resolution": resolution, "set": object_set, "realism": realism, "scene": i,
                                 "samples": job["samples"], "denoise": job["denoise"],
                                 **compare(Path(job["png"]), Path(ref["png"])), **took,
                                 "reference_cpu_s": ref_s["cpu_s"], "reference_wall_s": ref_s["wall_s"]})
    return rows


# ---- the summary: table, knee, figure -----------------------------------------------------------


def summarise(rows: list[dict]) -> list[dict]:
    """Per (resolution, denoiser, samples): mean seconds, mean and worst PSNR, mean SSIM, and
    the mean PSNR of each set x realism group."""
    out = []
    for key in sorted({(r["resolution"], r["denoise"], r["samples"]) for r in rows}, key=lambda k: (k[0], -k[1], k[2])):
        cell = [r for r in rows if (r["resolution"], r["denoise"], r["samples"]) == key]
        groups = {}
        for r in cell:
            groups.setdefault(f"{r['set']} {r['realism']}", []).append(r["psnr"])
        out.append({"resolution": key[0], "denoise": key[1], "samples": key[2], "images": len(cell),
                    "cpu_s": float(np.mean([r["cpu_s"] for r in cell])),
                    "wall_s": float(np.mean([r["wall_s"] for r in cell])),
                    "psnr": float(np.mean([r["psnr"] for r in cell])), "psnr_min": min(r["psnr"] for r in cell),
                    "ssim": float(np.mean([r["ssim"] for r in cell])), "ssim_min": min(r["ssim"] for r in cell),
                    "groups": {g: float(np.mean(v)) for g, v in groups.items()}})
    return out


def knees(summary: list[dict], threshold: float = KNEE_DB) -> dict[int, dict | None]:
    """Per resolution, the cheapest setting (CPU seconds) whose worst scene reaches `threshold` dB."""
    out = {}
    for res in sorted({s["resolution"] for s in summary}):
        ok = [s for s in summary if s["resolution"] == res and s["psnr_min"] >= threshold]
        out[res] = min(ok, key=lambda s: s["cpu_s"]) if ok else None
    return out


def label(s: dict) -> str:
    return f"{s['samples']} spp {'+ OIDN' if s['denoise'] else 'no denoiser'}"


def print_table(summary: list[dict], rows: list[dict], found: dict) -> None:
    groups = list(summary[0]["groups"]) if summary else []
    head = (f"{'px':>4} {'denoiser':>8} {'spp':>4} {'cpu s/img':>9} {'wall s/img':>10} {'PSNR dB':>8} "
            f"{'worst':>6} {'SSIM':>7} {'worst':>7}" + "".join(f"{g:>16}" for g in groups))
    print(head)
    for s in summary:
        mark = "  <- knee" if found.get(s["resolution"]) is s else ""
        print(f"{s['resolution']:>4} {'OIDN' if s['denoise'] else 'none':>8} {s['samples']:>4} {s['cpu_s']:9.2f} "
              f"{s['wall_s']:10.2f} {s['psnr']:8.2f} {s['psnr_min']:6.2f} {s['ssim']:7.4f} {s['ssim_min']:7.4f}"
              + "".join(f"{s['groups'].get(g, float('nan')):16.2f}" for g in groups) + mark)
    for res in sorted(found):
        ref = [r for r in rows if r["resolution"] == res]
        ref_cpu = {(r["set"], r["realism"], r["scene"]): r["reference_cpu_s"] for r in ref}
        k = found[res]
        now = next((s for s in summary if s["resolution"] == res and (s["samples"], s["denoise"]) == PRESET_DEFAULT),
                   None)
        print(f"{res} px: reference {np.mean(list(ref_cpu.values())):.1f} CPU s/image over {len(ref_cpu)} scenes; "
              + (f"knee ({KNEE_DB:.0f} dB in every scene) {label(k)}: {k['cpu_s']:.2f} CPU s/image, "
                 f"{k['psnr']:.1f} dB mean" if k else f"no setting reaches {KNEE_DB:.0f} dB in every scene")
              + (f"; the cycles preset ({label(now)}) {now['cpu_s']:.2f} CPU s/image, {now['psnr']:.1f} dB mean, "
                 f"worst {now['psnr_min']:.1f}" if now else ""))


def markdown_table(summary: list[dict], found: dict) -> str:
    """The summary as a Markdown table for the README (the knee and the preset marked)."""
    lines = ["| px | denoiser | samples | CPU s/image | wall s/image | PSNR dB (worst) | SSIM (worst) |",
             "|---|---|---|---|---|---|---|"]
    for s in summary:
        mark = " (knee)" if found.get(s["resolution"]) is s else ""
        mark += " (cycles preset)" if (s["samples"], s["denoise"]) == PRESET_DEFAULT else ""
        lines.append(f"| {s['resolution']} | {'OIDN' if s['denoise'] else 'none'} | {s['samples']}{mark} | "
                     f"{s['cpu_s']:.2f} | {s['wall_s']:.1f} | {s['psnr']:.2f} ({s['psnr_min']:.2f}) | "
                     f"{s['ssim']:.4f} ({s['ssim_min']:.4f}) |")
    return "\n".join(lines)


def figure(summary: list[dict], found: dict, path: Path, title: str) -> Path:
    from matplotlib.ticker import FuncFormatter

    from comco.report.plots import legend_beside, legend_entry, pyplot, save

    plt = pyplot()
    summary = [{**s, "dssim": 1.0 - s["ssim"]} for s in summary]  # SSIM's last digits, on a log axis
    found = {res: next(s for s in summary if (s["resolution"], s["samples"], s["denoise"]) ==
                       (k["resolution"], k["samples"], k["denoise"])) if k else None for res, k in found.items()}
    resolutions = sorted({s["resolution"] for s in summary})
    fig, axes = plt.subplots(len(resolutions), 2, figsize=(12, 4.2 * len(resolutions)), squeeze=False)
    colours = {True: "tab:blue", False: "tab:orange"}
    groups = list(summary[0]["groups"])
    styles = dict(zip(groups, (":", "--", "-.", (0, (6, 1.5, 1, 1.5, 1, 1.5)), (0, (8, 2)))))  # dash-dot-dot 4th
    for row, res in enumerate(resolutions):
        panels = (("psnr", "PSNR (dB)"), ("dssim", "1 - SSIM (luminance; log, up is better)"))
        for col, (metric, name) in enumerate(panels):
            ax = axes[row][col]
            for denoise in (True, False):
                line = [s for s in summary if s["resolution"] == res and s["denoise"] == denoise]
                x = [s["cpu_s"] for s in line]
                ax.plot(x, [s[metric] for s in line], "-o", color=colours[denoise], lw=2.2, ms=5)
                if metric == "psnr":
                    for g in groups:
                        ax.plot(x, [s["groups"][g] for s in line], linestyle=styles[g], color=colours[denoise],
                                lw=1, alpha=0.7)
                for s in line:
                    ax.annotate(str(s["samples"]), (s["cpu_s"], s[metric]), textcoords="offset points",
                                xytext=(4, -11 if denoise else 5), fontsize=8, color=colours[denoise])
            k = found.get(res)
            if metric == "psnr":
                ax.axhline(KNEE_DB, color="grey", lw=0.8)
            if k:
                ax.plot([k["cpu_s"]], [k[metric]], marker="*", ms=16, color="crimson", ls="none", zorder=5)
            for s in summary:
                if s["resolution"] == res and (s["samples"], s["denoise"]) == PRESET_DEFAULT:
                    ax.plot([s["cpu_s"]], [s[metric]], marker="s", ms=12, mfc="none", mec="black", ls="none", zorder=4)
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(v)[0] in "25" else ""))
            ax.set_xlabel("CPU seconds per image (log)")
            ax.set_ylabel(name)
            if metric == "dssim":
                ax.set_yscale("log")
                ax.invert_yaxis()
            ax.set_title(f"{res} px: {'PSNR' if metric == 'psnr' else 'SSIM'} against the reference")
            ax.grid(True, which="both", alpha=0.3)
            if col == 1:
                handles = [legend_entry(color=colours[True], marker="o", lw=2.2),
                           legend_entry(color=colours[False], marker="o", lw=2.2),
                           *(legend_entry(color="grey", linestyle=styles[g], lw=1) for g in groups),
                           legend_entry(color="grey", lw=0.8),
                           legend_entry(color="crimson", marker="*", ms=12, ls="none"),
                           legend_entry(marker="s", ms=10, mfc="none", mec="black", ls="none")]
                labels = ["OpenImageDenoise (mean of scenes)", "no denoiser (mean of scenes)",
                          *(f"{g} (PSNR, mean)" for g in groups), f"{KNEE_DB:.0f} dB",
                          f"knee: {label(k)}" if k else "no knee",
                          f"the cycles preset: {PRESET_DEFAULT[0]} spp + OIDN"]
                legend_beside(ax, handles, labels)
    fig.suptitle(title)
    return save(fig, path)


def parse_resolutions(text: str, scenes: int) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        px, _, n = part.partition(":")
        out.append((int(px), int(n) if n else scenes))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", default=",".join(map(str, SAMPLES)), help="the test sample counts")
    ap.add_argument("--reference", type=int, default=1024, help="the reference's samples")
    ap.add_argument("--resolutions", default="224,512", help="PX or PX:SCENES, comma-separated")
    ap.add_argument("--scenes", type=int, default=3, help="scenes per set and realism (unless PX:SCENES)")
    ap.add_argument("--sets", default="simco,comco")
    ap.add_argument("--realism", default="plain,varied")
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--threads", type=int, default=0, help="Blender's render threads (0: all)")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "comco" / "cycles-quality",
                    help="where the reference renders are kept between runs")
    ap.add_argument("--figure", type=Path, default=Path("docs/cycles-quality.png"))
    ap.add_argument("--json", type=Path, default=None, help="also write every row and the summary here")
    ap.add_argument("--markdown", action="store_true", help="also print the summary as a Markdown table")
    ap.add_argument("--from-json", type=Path, default=None,
                    help="render nothing: print and draw the rows a --json of an earlier run holds")
    args = ap.parse_args(argv)
    try:
        args.samples = [int(s) for s in args.samples.split(",")]
        args.resolutions = parse_resolutions(args.resolutions, args.scenes)
    except ValueError:
        ap.error("--samples and --resolutions take whole numbers (--resolutions 224:2,512:1)")
    args.sets = args.sets.split(",")
    args.realism = args.realism.split(",")
    if args.from_json:
        rows = json.loads(args.from_json.read_text())["rows"]
        args.resolutions = sorted({(r["resolution"], 1 + max(q["scene"] for q in rows
                                                             if q["resolution"] == r["resolution"])) for r in rows})
        args.sets = list(dict.fromkeys(r["set"] for r in rows))
        args.realism = list(dict.fromkeys(r["realism"] for r in rows))
    else:
        args.cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            rows = measure(args, Path(tmp))
    summary = summarise(rows)
    found = knees(summary)
    print_table(summary, rows, found)
    if args.markdown:
        print(markdown_table(summary, found))
    cells = ", ".join(f"{px} px x {n}" for px, n in args.resolutions)
    title = (f"Cycles (cycles preset) against a {args.reference}-sample reference: "
             f"{'/'.join(args.sets)} x {'/'.join(args.realism)}, scenes per set and realism: {cells}")
    print(f"figure -> {figure(summary, found, args.figure, title)}")
    if args.json:
        from comco.io import write_json

        write_json(args.json, {"rows": rows, "summary": summary,
                               "knees": {str(k): v for k, v in found.items()}})


if __name__ == "__main__":
    main()
