"""Training speed on this machine, side by side in one run.

    .venv/bin/python benchmarks/train.py [--data DATASET] [--steps 30] [--threads 2] [--precision-only]
                                         [--table-only]

1. `scratch` at its default size: samples per second, and the share of each step spent
   waiting for data (target <= 10 %).
2. DeBias-CLIP's caption sampler against Long-CLIP's: the text side of a batch (sample,
   tokenise at 248, move padding), and whole fine-tuning steps of a tiny model
   (target <= 1.05x for the step).
3. Forward + backward of the lab's small scratch model (conv tower, 2 layers, context 32)
   on a batch of 64 three-object captions: the text cut after the batch's longest caption
   (what comco trains with) against the full-context forward(), interleaved.
4. The optimiser step of the scratch model (its 49408-row token table dominates): torch's
   per-tensor Adam(W) loop against the fused kernel comco uses, interleaved.
5. A whole step (forward, backward, fused AdamW) of the lab's conv scratch model on an NCHW
   batch (what a fine-tune's preprocess gives) with its image tower in the default layout
   against channels-last (what comco trains with, comco.train.loop.channels_last_convs),
   interleaved. Scratch training's cached batches are channels-last views (an NHWC array
   permuted), so there the convolutions took the channels-last kernels already.
6. A whole step of the lab's small conv scratch model (batch 64, 64 px, context 32) in fp32
   against bf16 autocast (what `--precision auto` trains with on a CPU that multiplies bf16
   natively: AVX512_BF16 or AMX_BF16; comco.train.precision), interleaved, with the same
   model and batch. On a CPU without native bf16 the bf16 line shows what emulation costs.
7. Long-CLIP and DeBias fine-tuning steps (batch 32) of the same conv model in fp32 against
   bf16 autocast, the precisions alternated twice: where bf16 does not pay, `auto` keeps
   the fine-tunes in fp32.
8. A whole step of the lab's small conv scratch model (batch 64, bf16 autocast where the CPU
   has it) with dense AdamW on the 49408-row token table against the table trained row by
   row (comco.train.sparse_table: sparse gradient, fused AdamW on the rows with moments,
   the decay alone on the rest; the same weights bit for bit), interleaved.
Without --data, a synthetic comco dataset (planner records, PIL-drawn 64 px images) is made.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def scratch_speed(data: Path, out: Path, steps: int, device: str) -> dict:
    from comco.train.run import make_config, run_training

    cfg = make_config("scratch", data=str(data), out=str(out), steps=steps, quiet=True, device=device)
    started = time.perf_counter()
    run_training(cfg)
    wall = time.perf_counter() - started
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()][3:]  # skip warm-up
    return {"samples_per_s": statistics.median(r["samples_per_s"] for r in rows),
            "data_share": statistics.mean(r["data_share"] for r in rows),
            "batch": cfg.batch_size, "wall_s": wall, "steps": steps}


def text_side(task, batches: list[list[int]], repeats: int = 3) -> float:
    """Seconds per batch to draw captions, tokenise both and (debias) move padding."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for indices in batches:
            task.texts(0, indices)
        best = min(best, (time.perf_counter() - started) / len(batches))
    return best


def sampler_costs(data: Path, out: Path, steps: int, device: str, init: Path | None = None,
                  precision: str = "auto") -> dict:
    """Both kinds built side by side and their steps interleaved, so load on a shared
    machine hits both alike (from a tiny checkpoint, or `init`)."""
    from support.train import make_tiny_checkpoint

    from comco.train.loop import Trainer, plan_micro_batches
    from comco.train.run import build_task, make_config

    init = init or make_tiny_checkpoint(out / "tiny.pt")
    options = {"keep": 8, "pca_rank": 8} if init.name != "tiny.pt" else {}
    runs = {}
    for kind in ("longclip", "debias"):
        cfg = make_config(kind, data=str(data), out=str(out / kind), init=f"ckpt:{init}", batch_size=32,
                          steps=steps, warmup=1, quiet=True, device=device, workers=0, precision=precision,
                          options=options)
        task = build_task(cfg)
        n = task.num_samples()
        plan = [mb for s in range(steps) for mb in plan_micro_batches(cfg, s, n)]
        runs[kind] = (task, Trainer(task, cfg), iter(task.batches(plan)))
    batches = [list(range(i, i + 32)) for i in range(0, n - 31, 32)] * 2
    result = {kind: {"text": [], "step": []} for kind in runs}
    for _ in range(steps):
        for kind, (task, trainer, iterator) in runs.items():
            result[kind]["text"].append(text_side(task, batches, repeats=1))
            result[kind]["step"].append(trainer.train_step(iterator)["step_s"])
    return {
        kind: {"text_ms": 1000 * statistics.median(r["text"][2:]), "step_ms": 1000 * statistics.median(r["step"][2:])}
        for kind, r in result.items()
    }


def optimizer_costs(repeats: int) -> dict:
    """Milliseconds per AdamW step on the scratch model's parameters: loop vs fused."""
    import torch

    from comco.train.scratch import initial_module
    from comco.train.task import decay_groups

    _, module = initial_module(0, {})
    for p in module.parameters():
        p.grad = torch.randn_like(p)
    optimisers = {name: torch.optim.AdamW(decay_groups(module, 0.1), lr=1e-4, fused=fused)
                  for name, fused in (("loop", False), ("fused", True))}
    times = {name: [] for name in optimisers}
    with torch.no_grad():
        for _ in range(repeats):
            for name, opt in optimisers.items():
                started = time.perf_counter()
                opt.step()
                times[name].append(time.perf_counter() - started)
    return {name: 1000 * statistics.median(t[2:]) for name, t in times.items()}


def trimmed_costs(repeats: int) -> dict:
    """Milliseconds per forward + backward: text cut after its longest caption vs full."""
    import open_clip
    import torch

    from comco.train.clip_forward import clip_features
    from comco.train.losses import contrastive_loss
    from comco.train.scratch import initial_module

    _, model = initial_module(0, {"vision_tower": "conv", "vision_layers": 2, "text_layers": 2})
    text = open_clip.SimpleTokenizer(context_length=32)(["a torus and a cube and a cone"] * 64)
    image = torch.randn(64, 3, 64, 64)
    runs = {"cut": lambda: clip_features(model, image, text), "full": lambda: model(image, text)[:3]}
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            started = time.perf_counter()
            contrastive_loss(*run()).backward()
            times[name].append(time.perf_counter() - started)
            model.zero_grad(set_to_none=True)
    return {name: 1000 * statistics.median(t[2:]) for name, t in times.items()}


def layout_costs(repeats: int) -> dict:
    """Milliseconds per training step of the conv scratch model: NCHW vs channels-last tower."""
    import copy

    import open_clip
    import torch

    from comco.train.clip_forward import clip_features
    from comco.train.loop import channels_last_convs
    from comco.train.losses import contrastive_loss
    from comco.train.scratch import initial_module

    _, nchw = initial_module(0, {"vision_tower": "conv", "vision_layers": 2, "text_layers": 2})
    last = copy.deepcopy(nchw)
    channels_last_convs(last)
    text = open_clip.SimpleTokenizer(context_length=32)(["a torus and a cube and a cone"] * 64)
    image = torch.randn(64, 3, 64, 64)
    runs = {name: (model, torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True))
            for name, model in (("nchw", nchw), ("channels_last", last))}
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (model, opt) in runs.items():
            started = time.perf_counter()
            contrastive_loss(*clip_features(model, image, text)).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            times[name].append(time.perf_counter() - started)
    return {name: 1000 * statistics.median(t[2:]) for name, t in times.items()}


def precision_costs(repeats: int) -> dict:
    """Milliseconds per training step of the lab's small conv scratch model: fp32 vs bf16 autocast
    (the Trainer's own autocast and channels-last tower), interleaved on one model and batch."""
    import copy

    import open_clip
    import torch

    from comco.train.clip_forward import clip_features
    from comco.train.loop import channels_last_convs
    from comco.train.losses import contrastive_loss
    from comco.train.scratch import initial_module

    size = {"vision_tower": "conv", "vision_layers": 2, "text_layers": 2, "vision_width": 128, "text_width": 128,
            "embed_dim": 128, "context_length": 32, "resolution": 64}
    _, fp32 = initial_module(0, size)
    channels_last_convs(fp32)
    bf16 = copy.deepcopy(fp32)
    text = open_clip.SimpleTokenizer(context_length=32)(["a torus and a cube and a cone"] * 64)
    image = torch.randn(64, 3, 64, 64).contiguous(memory_format=torch.channels_last)
    runs = {name: (model, torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True))
            for name, model in (("fp32", fp32), ("bf16", bf16))}
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (model, opt) in runs.items():
            started = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=name == "bf16"):
                loss = contrastive_loss(*clip_features(model, image, text))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            times[name].append(time.perf_counter() - started)
    return {name: 1000 * statistics.median(t[2:]) for name, t in times.items()}


def table_costs(repeats: int) -> dict:
    """Milliseconds per training step of the lab's small conv scratch model with the token table
    under dense AdamW against row-by-row AdamW (comco.train.sparse_table), interleaved on two
    copies of one model and one batch (bf16 autocast where `auto` uses it)."""
    import copy

    import open_clip
    import torch

    from comco.train.clip_forward import clip_features
    from comco.train.loop import channels_last_convs
    from comco.train.losses import contrastive_loss
    from comco.train.precision import cpu_precision
    from comco.train.scratch import initial_module
    from comco.train.sparse_table import RowwiseAdamW, sparse_token_table
    from comco.train.task import decay_groups

    size = {"vision_tower": "conv", "vision_layers": 2, "text_layers": 2, "vision_width": 128, "text_width": 128,
            "embed_dim": 128, "context_length": 32, "resolution": 64}
    _, dense = initial_module(0, size)
    channels_last_convs(dense)
    rows = copy.deepcopy(dense)
    sparse_token_table(rows)
    text = open_clip.SimpleTokenizer(context_length=32)(["a torus and a cube and a cone"] * 64)
    image = torch.randn(64, 3, 64, 64).contiguous(memory_format=torch.channels_last)
    kw = {"lr": 1e-4, "fused": True}
    runs = {"dense": (dense, torch.optim.AdamW(decay_groups(dense, 0.1), **kw)),
            "rows": (rows, RowwiseAdamW(decay_groups(rows, 0.1), **kw))}
    bf16 = cpu_precision("auto") == "bf16"
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (model, opt) in runs.items():
            started = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = contrastive_loss(*clip_features(model, image, text))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            times[name].append(time.perf_counter() - started)
    same = all(torch.equal(a, b) for a, b in zip(dense.parameters(), rows.parameters()))
    return {**{name: 1000 * statistics.median(t[2:]) for name, t in times.items()}, "same": same,
            "precision": "bf16" if bf16 else "fp32"}


def print_table(table: dict) -> None:
    print(f"{'small conv scratch step (%s), dense table ms' % table['precision']:44s} {table['dense']:12.1f}")
    print(f"{'small conv scratch step, table by rows ms':44s} {table['rows']:12.1f}")
    print(f"{'  dense / rows':44s} {table['dense'] / table['rows']:11.2f}x "
          f"{'weights bit-identical' if table['same'] else 'WEIGHTS DIFFER'}")


def finetune_precision_costs(data: Path, out: Path, steps: int) -> dict:
    """Milliseconds per Long-CLIP and DeBias fine-tuning step (batch 32) of the lab's small conv
    scratch model, in fp32 and in bf16 autocast, the two precisions alternated twice."""
    from comco.train import save_initial

    size = {"vision_tower": "conv", "vision_layers": 2, "text_layers": 2, "vision_width": 128, "text_width": 128,
            "embed_dim": 128, "context_length": 32, "resolution": 64, "patch_size": 8}
    init = save_initial(out / "conv.pt", 0, size)
    times: dict[str, dict[str, list]] = {p: {"longclip": [], "debias": []} for p in ("fp32", "bf16")}
    for i, p in enumerate(("fp32", "bf16", "fp32", "bf16")):
        for kind, c in sampler_costs(data, out / f"{p}{i}", steps, "cpu", init=init, precision=p).items():
            times[p][kind].append(c["step_ms"])
    return {p: {kind: statistics.mean(v) for kind, v in k.items()} for p, k in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="a rendered comco dataset (default: a synthetic one)")
    parser.add_argument("--n", type=int, default=512, help="images in the synthetic dataset")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (AMP bf16 there)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--precision-only", action="store_true", help="only section 6: fp32 against bf16 autocast")
    parser.add_argument("--table-only", action="store_true", help="only section 8: the token table dense or by rows")
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.table_only:
        print_table(table_costs(max(12, args.steps)))
        return
    if args.precision_only:
        work = Path(tempfile.mkdtemp(prefix="comco-bench-train-"))
        from support.train import make_dataset

        data = args.data or make_dataset(work / "data", n=args.n, resolution=64, objects=(2, 3, 4))
        tune = finetune_precision_costs(data, work, max(8, args.steps // 3))
        print_precision(precision_costs(max(12, args.steps)), tune, torch)
        return
    work = Path(tempfile.mkdtemp(prefix="comco-bench-train-"))
    data = args.data
    if data is None:
        from support.train import make_dataset

        data = make_dataset(work / "data", n=args.n, resolution=64, objects=(2, 3, 4))
    scratch = scratch_speed(data, work / "scratch", args.steps, args.device)
    costs = sampler_costs(data, work / "sampler", max(8, args.steps // 3), args.device)
    lc, db = costs["longclip"], costs["debias"]
    opt = optimizer_costs(max(12, args.steps))
    cut = trimmed_costs(max(12, args.steps))
    layout = layout_costs(max(12, args.steps))
    prec = precision_costs(max(12, args.steps))
    tune = finetune_precision_costs(data, work / "precision", max(8, args.steps // 3))
    where = torch.cuda.get_device_name() if args.device.startswith("cuda") else f"{torch.get_num_threads()} CPU threads"
    print(f"torch {torch.__version__}, {where}, data {data}")
    print(f"{'measure':44s} {'value':>12s} {'target':>10s}")
    print(f"{'scratch samples/s (64 px, batch %d)' % scratch['batch']:44s} {scratch['samples_per_s']:12.1f}")
    print(f"{'scratch data loading share of step':44s} {100 * scratch['data_share']:11.1f}% {'<= 10%':>10s}")
    print(f"{'text side per batch of 32: longclip ms':44s} {lc['text_ms']:12.2f}")
    print(f"{'text side per batch of 32: debias ms':44s} {db['text_ms']:12.2f}")
    print(f"{'  debias / longclip (text side only)':44s} {db['text_ms'] / lc['text_ms']:11.3f}x")
    print(f"{'tiny fine-tune step: longclip ms':44s} {lc['step_ms']:12.1f}")
    print(f"{'tiny fine-tune step: debias ms':44s} {db['step_ms']:12.1f}")
    print(f"{'  debias / longclip (whole step)':44s} {db['step_ms'] / lc['step_ms']:11.3f}x {'<= 1.05x':>10s}")
    print(f"{'small scratch fwd+bwd, full context ms':44s} {cut['full']:12.1f}")
    print(f"{'small scratch fwd+bwd, text cut (comco) ms':44s} {cut['cut']:12.1f}")
    print(f"{'  full / cut':44s} {cut['full'] / cut['cut']:11.2f}x")
    print(f"{'scratch AdamW step, per-tensor loop ms':44s} {opt['loop']:12.1f}")
    print(f"{'scratch AdamW step, fused (comco) ms':44s} {opt['fused']:12.1f}")
    print(f"{'  loop / fused':44s} {opt['loop'] / opt['fused']:11.2f}x")
    print(f"{'conv scratch step, NCHW tower ms':44s} {layout['nchw']:12.1f}")
    print(f"{'conv scratch step, channels-last (comco) ms':44s} {layout['channels_last']:12.1f}")
    print(f"{'  NCHW / channels-last':44s} {layout['nchw'] / layout['channels_last']:11.2f}x")
    print_precision(prec, tune, torch)
    print_table(table_costs(max(12, args.steps)))


def print_precision(prec: dict, tune: dict, torch) -> None:
    from comco.lab.stages import _cpu_name
    from comco.train.precision import BF16_FLAGS, cpu_flags, cpu_precision

    native = [f for f in BF16_FLAGS if f in cpu_flags()]
    print(f"{_cpu_name()}, torch {torch.__version__}, {torch.get_num_threads()} thread(s); native bf16 flags: "
          f"{', '.join(native) or 'none'}; --precision auto trains a scratch CLIP in {cpu_precision('auto')} here "
          f"(fine-tunes and LABCLIP in {cpu_precision('auto', kind='debias')})")
    print(f"{'small conv scratch step, fp32 ms':44s} {prec['fp32']:12.1f}")
    print(f"{'small conv scratch step, bf16 autocast ms':44s} {prec['bf16']:12.1f}")
    print(f"{'  fp32 / bf16':44s} {prec['fp32'] / prec['bf16']:11.2f}x")
    for kind in ("longclip", "debias"):
        print(f"{f'conv {kind} fine-tune step, fp32 ms':44s} {tune['fp32'][kind]:12.1f}")
        print(f"{f'conv {kind} fine-tune step, bf16 autocast ms':44s} {tune['bf16'][kind]:12.1f}")
        print(f"{'  fp32 / bf16':44s} {tune['fp32'][kind] / tune['bf16'][kind]:11.2f}x")


if __name__ == "__main__":
    main()
