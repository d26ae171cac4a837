"""Two measurements behind the lab's small scale.

    python benchmarks/lab.py [--steps 60]
    python benchmarks/lab.py --gates --train TRAIN --test TEST [--steps 1500 --every 250 ...]
    python benchmarks/lab.py --run OUT

(1) Why the lab runs independent trainings side by side with one thread each: two
`comco train scratch` runs of the same size, on a small rendered simco set, (a) one
after the other, each with 2 torch threads; (b) both at once, 1 thread each. Prints both
wall times and their ratio, measured in one run.

(2) `--gates`: how long a model kind needs to pass the competence gates. Trains one
scratch model on TRAIN (a lab captions stage's data, e.g. OUT/stages/captions-simco-p1/data
of `comco lab run ... --scale small`), stops every `--every` steps, measures the gates
(comco.probes.gates, thresholds from the recipe's [gates] at --scale) on TEST (the held-out
images captioned at the same p, as the lab gates them: OUT/stages/captions-test-simco-p1/data)
and prints per evaluation the steps,
the training seconds so far, samples per second and each gate figure; at the end, the
seconds to pass every gate (training time only, evaluation excluded) and, from the
measured seconds per step, the scratch-training share of the small scale's 40 minutes.
For the whole lab's wall time per stage, see the "What was run" section of a report.

(3) `--run OUT`: a finished `comco lab run` folder read back, per model kind (scratch at each
p, each fine-tune variant, the LABCLIP colour bases, the LABCLIP maps): how many models
passed their gates, the training seconds and samples per second of those that passed (the
seconds a kind needs to pass: its whole training, since the lab trains a fixed budget), the
seconds per kind of stage, and the wall time against the recipe's budget at that scale
(order-bias: 40 min small, 2 h medium; origins: 30 min small). A resumed run says so and
prints each invocation: only a run that did every stage in one go times the scale.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"


def gate_thresholds(scale: str) -> dict[str, float]:
    """The scratch models' gates of the recipe at one scale (Keep gates fine-tunes only)."""
    from comco.lab.recipe import FINETUNE_GATES, GATE_KEYS, load_recipe

    gates = load_recipe(RECIPE, scale).settings["gates"]
    return {GATE_KEYS[k]: gates[k] for k in GATE_KEYS if GATE_KEYS[k] not in FINETUNE_GATES}


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


def threads_benchmark(steps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = tmp / "data"
        subprocess.run([PY, "-m", "comco.cli", "render", "--object-set", "simco", "--objects", "1-4", "--n", "400",
                        "--preset", "draft", "--resolution", "64", "--workers", "2", "--quiet", "--out", str(data)],
                       check=True, capture_output=True)
        t = time.perf_counter()
        for seed in (0, 1):
            wait_all([train(data, tmp / f"seq{seed}", steps, 2, seed)])
        sequential = time.perf_counter() - t
        t = time.perf_counter()
        wait_all([train(data, tmp / f"par{seed}", steps, 1, seed) for seed in (0, 1)])
        parallel = time.perf_counter() - t
    print(f"two trainings of {steps} steps: one after the other with 2 threads {sequential:.1f} s, "
          f"side by side with 1 thread each {parallel:.1f} s -> {sequential / parallel:.2f}x")


def measure_gates(test: Path, checkpoint: Path, template: str, batch_size: int) -> dict:
    from comco.models import load_model
    from comco.probes import Embedder, gate_figures, open_dataset

    emb = Embedder(load_model(f"ckpt:{checkpoint}", None, "cpu"), cache_dir=None, batch_size=batch_size)
    return gate_figures(open_dataset(test), emb, template, n_boot=0, seed=0)


def gates_benchmark(args) -> None:
    import torch

    from comco.probes import gate_passes
    from comco.train import make_config, run_training

    torch.set_num_threads(args.threads)
    gates = gate_thresholds(args.scale)
    w = args.width
    options = {"captions": ["and"], "resolution": args.resolution, "patch_size": args.patch_size,
               "context_length": args.context_length, "vision_width": w, "text_width": w, "embed_dim": w,
               "vision_layers": args.layers, "text_layers": args.layers, "vision_tower": args.tower}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        ckpt, train_s, passed_at, rows = out / "checkpoint.pt", 0.0, None, []
        step = 0
        while step < args.steps:
            cfg = make_config("scratch", data=str(args.train), out=str(out), seed=args.seed, steps=args.steps,
                              batch_size=args.batch_size, lr=args.lr, warmup=args.warmup,
                              weight_decay=args.weight_decay, device="cpu", workers=0, quiet=True,
                              checkpoint_every=args.every, stop_after=args.every, options=options,
                              resume=str(ckpt) if ckpt.is_file() else None)
            t = time.perf_counter()
            summary = run_training(cfg)
            train_s += time.perf_counter() - t
            step = summary["step"]
            model = out / "model.pt" if step >= args.steps else ckpt
            t = time.perf_counter()
            figs = measure_gates(args.test, model, "and", 256)
            eval_s = time.perf_counter() - t
            ok, failed = gate_passes(figs, gates)
            row = {"step": step, "train_s": round(train_s, 1), "eval_s": round(eval_s, 1),
                   "samples_per_s": round(step * args.batch_size / train_s, 1),
                   **{k: round(v["acc"], 3) for k, v in figs.items()}, "passed": ok}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if ok and passed_at is None:
                passed_at = row
                if args.stop_at_pass:
                    break
    kind = (f"scratch {args.tower} w{w} l{args.layers} p{args.patch_size} {args.resolution}px "
            f"b{args.batch_size} lr{args.lr:g}")
    per_step = rows[-1]["train_s"] / rows[-1]["step"]
    if passed_at:
        print(f"{kind}: passes every gate at step {passed_at['step']} after {passed_at['train_s']:.0f} s of training "
              f"({passed_at['samples_per_s']:.0f} samples/s)")
    else:
        worst = {k: rows[-1][k] for k in gates}
        print(f"{kind}: no pass within {rows[-1]['step']} steps ({rows[-1]['train_s']:.0f} s, "
              f"{rows[-1]['samples_per_s']:.0f} samples/s); last figures {worst}")
    # the small scale trains 5 p x 3 seeds side by side, `jobs` at a time on 1 thread each
    steps = passed_at["step"] if passed_at else args.steps
    trainings = args.models * steps * per_step / args.jobs
    print(f"small scale estimate: {args.models} scratch trainings of {steps} steps, {args.jobs} at a time: "
          f"{trainings / 60:.1f} min of the {BUDGET_MIN[('order-bias', 'small')]} min budget "
          "for scratch training alone")


# minutes of wall time on 2 CPU cores per (recipe, scale): issue 26 item 8
BUDGET_MIN = {("order-bias", "small"): 40, ("order-bias", "medium"): 120, ("origins", "small"): 30}


def _median(values: list[float]) -> float | None:
    import statistics

    return statistics.median(values) if values else None


def run_benchmark(out: Path) -> None:
    """Per model kind of a finished lab run: passed / trained, seconds and samples/s."""
    import re
    import statistics

    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
    results = json.loads((out / "results.json").read_text())
    scale = results["scale"]
    first = next((r for r in runs if r.get("state") == "new"), runs[0])
    colour_gate = load_recipe_gate(out, scale)
    kinds: dict[str, list[dict]] = {}
    for stage_json in sorted((out / "stages").glob("*/stage.json")):
        stage = json.loads(stage_json.read_text())
        sid = stage["id"]
        if stage["kind"] not in ("scratch", "finetune", "labclip"):
            continue
        oset = next(iter(results["object_sets"]))
        gates = results["object_sets"][oset]["gates"]["models"]
        if stage["kind"] == "labclip":
            kind, passed = "LABCLIP map (no gate)", True  # its base is gated; the map's binding is the result
        elif sid.startswith(f"scratch-colors-{oset}"):
            seed = sid.rsplit("-s", 1)[1]
            probe = json.loads((out / "stages" / f"labclip-{oset}-s{seed}" / "stage.json").read_text())
            before = probe["summary"]["binding_probe"]["before"]
            kind = "LABCLIP colour base"
            passed = all(before[role]["value"] >= colour_gate for role in ("image probe", "text probe"))
        else:
            m = re.match(rf"(scratch|finetune)-{oset}-(.+)-s\d+$", sid)
            kind = f"scratch {m.group(2)}" if m.group(1) == "scratch" else f"fine-tune {m.group(2)}"
            passed = gates.get(f"probe-{sid}", {}).get("passed", False)
        metrics = stage_json.parent / "metrics.jsonl"
        rates = [json.loads(line)["samples_per_s"] for line in metrics.read_text().splitlines()[3:]] \
            if metrics.is_file() else []
        kinds.setdefault(kind, []).append({"passed": passed, "seconds": stage["seconds"],
                                           "samples_per_s": statistics.median(rates) if rates else None})
    print(f"lab run {out} ({results['recipe']}, scale {scale})")
    print(f"{'model kind':32s} {'passed':>8s} {'stage s (passed)':>18s} {'samples/s':>10s}")
    for kind, rows in kinds.items():
        ok = [r for r in rows if r["passed"]]
        secs = _median([r["seconds"] for r in ok])
        rate = _median([r["samples_per_s"] for r in ok if r["samples_per_s"] is not None])
        print(f"{kind:32s} {len(ok):>4d} of {len(rows):<2d}"
              f"{'-' if secs is None else f'{secs:.0f}':>17s} {'-' if rate is None else f'{rate:.0f}':>10s}")
    budget = BUDGET_MIN.get((results["recipe"], scale))
    print_kind_seconds(out, budget)
    total = sum(len(r.get("ran", [])) for r in runs)
    walls = ", ".join(f"{r['wall_seconds'] / 60:.1f} min" for r in runs)
    if runs[0].get("state") != "new" or len([r for r in runs if r.get("ran")]) > 1:
        # an interrupted invocation writes no line: its stages are missing from `ran`
        print(f"a resumed run: {len(runs)} invocation(s) logged, ran {total} of "
              f"{len(list((out / 'stages').glob('*/stage.json')))} stages; their wall times "
              f"({walls}) do not time the scale: "
              "time a run that does every stage in one go")
        return
    wall = first["wall_seconds"]
    against = f" against {budget} min ({wall / 60 / budget:.2f} of it)" if budget else ""
    print(f"wall time: {wall / 60:.1f} min{against}; sum of stage seconds "
          f"{sum(first['seconds'].values()) / 60:.1f} min")


def kind_seconds(out: Path) -> dict[str, dict]:
    """Per kind of stage of a run folder: stages, seconds summed, and the elapsed span from
    the first one's start to the last one's end (stages of a kind run side by side)."""
    kinds: dict[str, dict] = {}
    for stage_json in sorted((out / "stages").glob("*/stage.json")):
        stage = json.loads(stage_json.read_text())
        k = kinds.setdefault(stage["kind"], {"stages": 0, "seconds": 0.0, "start": None, "end": None})
        k["stages"] += 1
        k["seconds"] += stage["seconds"]
        start, end = stage["finished"] - stage["seconds"], stage["finished"]
        k["start"] = start if k["start"] is None else min(k["start"], start)
        k["end"] = end if k["end"] is None else max(k["end"], end)
    return kinds


def print_kind_seconds(out: Path, budget_min: float | None) -> None:
    """The per-kind seconds against the scale's budget (issue 26 item 8)."""
    kinds = kind_seconds(out)
    budget = 60 * budget_min if budget_min else None
    print(f"{'stage kind':12s} {'stages':>6s} {'seconds (sum)':>14s} {'elapsed span s':>15s}"
          + (f" {'span / budget':>14s}" if budget else ""))
    for kind, k in kinds.items():
        span = k["end"] - k["start"]
        print(f"{kind:12s} {k['stages']:>6d} {k['seconds']:>14.0f} {span:>15.0f}"
              + (f" {span / budget:>14.2f}" if budget else ""))


def load_recipe_gate(out: Path, scale: str) -> float:
    from comco.lab.recipe import load_recipe

    return load_recipe(out / "recipe.toml", scale).settings["gates"]["colour_probe"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=None, help="training steps (threads: 60; gates: 1500)")
    ap.add_argument("--gates", action="store_true", help="seconds to pass the competence gates")
    ap.add_argument("--train", type=Path)
    ap.add_argument("--test", type=Path)
    ap.add_argument("--out", type=Path, default=None, help="keep the run here (default: a temporary folder)")
    ap.add_argument("--every", type=int, default=250)
    ap.add_argument("--scale", default="small", help="the recipe scale whose [gates] thresholds apply")
    ap.add_argument("--stop-at-pass", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--patch-size", type=int, default=8)
    ap.add_argument("--tower", choices=("vit", "conv"), default="vit", help="the image tower")
    ap.add_argument("--resolution", type=int, default=64)
    ap.add_argument("--context-length", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--models", type=int, default=15, help="scratch trainings in the scale (p values x seeds)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--run", type=Path, help="a finished `comco lab run` folder: per model kind, read back")
    args = ap.parse_args()
    if args.run:
        missing = [name for name in ("runs.jsonl", "results.json", "recipe.toml") if not (args.run / name).is_file()]
        if missing:  # e.g. a committed docs/lab-* folder, which keeps the report but not the run log
            print(f"lab.py: --run {args.run}: no {', '.join(missing)}; pass the folder `comco lab run --out` wrote",
                  file=sys.stderr)
            sys.exit(2)
        run_benchmark(args.run)
    elif args.gates:
        if not (args.train and args.test):
            ap.error("--gates needs --train and --test dataset folders")
        args.steps = args.steps or 1500
        gates_benchmark(args)
    else:
        threads_benchmark(args.steps or 60)


if __name__ == "__main__":
    main()
