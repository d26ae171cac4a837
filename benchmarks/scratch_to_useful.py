"""Time from nothing to a `comco train scratch` model whose TOR and IOR differ from chance,
and to one that has learnt to match images with text (I2TOR above chance).

    .venv/bin/python benchmarks/scratch_to_useful.py [--n 3000] [--epochs 10] [--at 25,50,100,200,300]
        [--threads 1] [--workers 2] [--probe-n 240] [--out DIR]

Everything runs through the command line, as a user would run it:

1. `comco render` a SimCO training set (draft, 64 px, 1-4 objects per image, singles) and a
   separate probe set (another seed, 2-4 objects, singles);
2. `comco train scratch` on the training set in segments (`--stop-after`, `--resume`), so
   one cosine schedule runs to the end while the model is probed between segments;
3. `comco probe --model ckpt:PATH --probes tor,ior,i2tor` after each segment, and on the
   initial (random, seeded) weights as step 0.

It prints, per checkpoint, the training wall time so far, the samples seen, the loss and
TOR (1st mention), IOR and I2TOR (largest object) with 95 % intervals against chance
(1 / 18 names), for 2, 3 and 4 objects, then the first checkpoint where every TOR and
IOR interval lies above chance, and the first where every I2TOR one does. TOR (text vs
text) and IOR (image vs image) are uni-modal, so even random towers can beat chance
(shared tokens, shared pixels: step 0 shows how far); I2TOR (image vs name texts) needs
the two towers aligned, which only training does. Wall times are of the training processes only
(rendering and probing are
reported apart); each segment's process start is included, so "steps only" is also shown.
Torch runs with --threads threads (OMP_NUM_THREADS) in every process: on a shared
2-core machine, 2 spinning threads next to another job are many times slower than 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMCO = [sys.executable, "-m", "comco.cli"]
COUNTS = (2, 3, 4)
PROBES = (("tor", "1st"), ("ior", "largest"), ("i2tor", "largest"))


def comco(env: dict, *args) -> float:
    """Run one comco command; its wall time in seconds. Stops the benchmark on failure."""
    started = time.perf_counter()
    r = subprocess.run([*COMCO, *map(str, args)], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"comco {args[0]} failed ({r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}")
    return time.perf_counter() - started


def render(env, out: Path, objects: str, n: int, seed: int, workers: int) -> float:
    return comco(env, "render", "--object-set", "simco", "--objects", objects, "--n", n, "--seed", seed,
                 "--singles", "--preset", "draft", "--resolution", 64, "--workers", workers, "--quiet",
                 "--out", out)


def initial_checkpoint(data: Path, train_dir: Path, steps: int, threads: int) -> Path:
    """The seeded initial weights of the run, saved as a checkpoint (step 0).

    Built by the same task the CLI builds, with the same configuration, so the weights
    are exactly those training starts from (this also fills the run's image cache).
    """
    import torch

    torch.set_num_threads(threads)
    from comco.models import save_checkpoint
    from comco.train.run import build_task, make_config

    task = build_task(make_config("scratch", data=str(data), out=str(train_dir), steps=steps, quiet=True))
    p = task.checkpoint_payload()
    return save_checkpoint(train_dir / "step0.pt", kind=p["kind"], model=p["model"], model_spec=p["model_spec"])


def probe(env, probe_data: Path, ckpt: Path, out: Path) -> tuple[float, dict]:
    seconds = comco(env, "probe", probe_data, "--model", f"ckpt:{ckpt}", "--probes", "tor,ior,i2tor",
                    "--templates", "photo", "--bootstrap", 1000, "--no-cache", "--no-plots", "--quiet",
                    "--out", out)
    res = json.loads((out / "results.json").read_text())
    (label,) = res["probes"]["tor"]
    pick = {}
    for probe_name, role in PROBES:
        for g in res["probes"][probe_name][label]:
            (s,) = [s for s in g["metrics"]["unconditional"] if s["role"] == role]
            pick[(probe_name, g["n_objects"])] = s
    return seconds, pick


def verdict(s: dict) -> str:
    if s["lo"] > s["chance"]:
        return "+"  # the interval lies above chance
    if s["hi"] < s["chance"]:
        return "-"  # below chance: a degenerate model retrieving the same few items
    return " "


def cell(s: dict) -> str:
    return f"{100 * s['acc']:3.0f} [{100 * s['lo']:3.0f},{100 * s['hi']:3.0f}]{verdict(s)}"


def metrics_rows(train_dir: Path) -> list[dict]:
    path = train_dir / "metrics.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3000, help="training images (1-4 objects, spread evenly)")
    ap.add_argument("--epochs", type=float, default=10.0, help="length of the run (scratch's default: 10)")
    ap.add_argument("--at", default="25,50,100,200,300", help="steps to probe at (and at step 0 and the end)")
    ap.add_argument("--probe-n", type=int, default=240, help="probe images (2-4 objects, another seed)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads in every process")
    ap.add_argument("--workers", type=int, default=2, help="render processes")
    ap.add_argument("--out", type=Path, help="keep everything here (default: a temporary folder, removed)")
    args = ap.parse_args()

    work = args.out or Path(tempfile.mkdtemp(prefix="comco-scratch-to-useful-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    data, probe_data, train_dir = work / "train-data", work / "probe-data", work / "train"
    batch = 64  # scratch's default batch
    steps = max(1, round(args.epochs * (args.n // batch)))
    marks = sorted({s for s in (int(x) for x in args.at.split(",") if x.strip()) if 0 < s < steps} | {steps})
    load0 = os.getloadavg()

    t_render = render(env, data, "1-4", args.n, 0, args.workers)
    t_probe_render = render(env, probe_data, "2-4", args.probe_n, 1, args.workers)
    started = time.perf_counter()
    step0 = initial_checkpoint(data, train_dir, steps, args.threads)
    t_init = time.perf_counter() - started

    import torch

    print(f"torch {torch.__version__}, {args.threads} thread(s), {os.cpu_count()} cores, "
          f"load average {load0[0]:.1f} at start; work folder {work}")
    print(f"render: {args.n} training images in {t_render:.0f} s ({args.n / t_render:.1f} images/s, "
          f"{args.workers} workers, draft 64 px, +18 singles); {args.probe_n} probe images in {t_probe_render:.0f} s")
    print(f"train: comco train scratch, batch {batch}, {steps} steps = {args.epochs:g} epochs; "
          f"probe: TOR (photo captions, 1st mention), IOR and I2TOR (largest object) on the probe set, "
          f"unconditional, chance 1/18 = 5.6 %")
    print("cells: % [95 % interval]; + interval above chance, - below chance")
    head = " ".join(f"{p.upper()} n={n}".ljust(14) for p, _ in PROBES for n in COUNTS)
    print(f"{'step':>5} {'train s':>8} {'steps s':>8} {'samples':>8} {'smp/s':>6} {'loss':>6}  {head}")

    rows, wall, done, resume = [], 0.0, 0, None
    for mark in [0, *marks]:
        if mark:
            cmd = ["train", "scratch", "--data", data, "--out", train_dir, "--steps", steps,
                   "--stop-after", mark - done, "--quiet"]
            wall += comco(env, *cmd, *(["--resume-from", resume] if resume else []))
            done = mark
            resume = train_dir / "checkpoint.pt"
        ckpt = step0 if mark == 0 else (train_dir / ("model.pt" if mark == steps else "checkpoint.pt"))
        t_probe, pick = probe(env, probe_data, ckpt, work / "probes" / f"step{mark}")
        m = [r for r in metrics_rows(train_dir) if r["step"] <= mark]
        steps_s = sum(r["step_s"] for r in m)
        rate = statistics.median(r["samples_per_s"] for r in m[-50:]) if m else float("nan")
        loss = m[-1]["loss"] if m else float("nan")
        useful = all(verdict(pick[(p, n)]) == "+" for p in ("tor", "ior") for n in COUNTS)
        aligned = all(verdict(pick[("i2tor", n)]) == "+" for n in COUNTS)
        row = {"step": mark, "train_wall_s": wall + (t_init if mark else 0), "steps_s": steps_s,
               "samples": mark * batch, "samples_per_s": rate, "loss": loss, "probe_s": t_probe,
               "useful": useful, "aligned": aligned,
               "cells": {f"{p}_{n}": pick[(p, n)] for p, _ in PROBES for n in COUNTS}}
        rows.append(row)
        cells = " ".join(cell(pick[(p, n)]) for p, _ in PROBES for n in COUNTS)
        print(f"{mark:5d} {row['train_wall_s']:8.0f} {steps_s:8.0f} {row['samples']:8d} {rate:6.0f} {loss:6.3f}  "
              f"{cells}", flush=True)

    first = next((r for r in rows if r["useful"]), None)
    aligned = next((r for r in rows if r["aligned"]), None)
    all_rows = metrics_rows(train_dir)
    print(f"scratch samples/s: median {statistics.median(r['samples_per_s'] for r in all_rows):.0f} over "
          f"{len(all_rows)} steps (data loading {100 * statistics.mean(r['data_share'] for r in all_rows):.1f} % "
          f"of step time); probing took {statistics.mean(r['probe_s'] for r in rows):.0f} s per checkpoint")
    tor0 = [rows[0]["cells"][f"tor_{n}"] for n in COUNTS]
    if all(verdict(s) == "+" for s in tor0):
        print("note: TOR 1st is above chance already at step 0: the random text tower matches shared tokens")
    # random towers can start above chance and training can pass through chance before it learns:
    # also the first trained checkpoint from which every later one keeps TOR and IOR above chance
    kept = next((r for i, r in enumerate(rows) if r["step"] and all(x["useful"] for x in rows[i:])), None)
    for what, r in (("TOR and IOR above chance (n = 2, 3, 4)", first),
                    ("TOR and IOR above chance at this and every later checkpoint", kept),
                    ("I2TOR above chance (n = 2, 3, 4): image and text towers aligned", aligned)):
        if r is None:
            print(f"{what}: not reached by step {steps}")
        else:
            print(f"{what}: step {r['step']} ({r['samples']} samples), {r['train_wall_s']:.0f} s of training "
                  f"processes ({r['steps_s']:.0f} s in steps), + {t_render:.0f} s to render the data")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    (work / "summary.json").write_text(json.dumps(
        {"args": {k: str(v) for k, v in vars(args).items()}, "render_s": t_render, "steps": steps,
         "rows": rows, "first_tor_ior_step": first and first["step"], "kept_tor_ior_step": kept and kept["step"],
         "first_i2tor_step": aligned and aligned["step"]}, indent=1))
    if args.out is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
