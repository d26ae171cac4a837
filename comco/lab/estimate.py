"""`comco lab run --dry-run`: the stage graph with an estimate of each stage's time, on one GPU,
or on the CPU for the scales whose `[run] device` is "cpu" (smoke, small, medium).

The model FLOPs are counted by torch on the real scratch modules (one image, one text,
forward; training counts 3x forward). The GPU's throughput is measured (GPU_FLOPS, its
source printed with the table); the rest are named assumptions, printed too:

- STEP_OVERHEAD_S: per optimiser step (kernel launches, the optimiser, the batch copy);
- RENDER_S: seconds per image and preset on one GPU (Cycles with OptiX at 224 px);
- the probes' text counts per test image (orders x templates, swaps, sensitivity, the
  DeBias analyses' variants).

On the CPU the same counts meet rates measured on this project's 2-core machine (README
"Speed on a 2-core CPU"): CPU_FLOPS from the small scale's scratch model training at about
570 samples/s on one core, Workbench (draft) at about 9 images/s per worker and Cycles at
about 2.8 s per 224 px image (growing with the pixel count); each stage on one core.
"""

from __future__ import annotations

import heapq
import os
import tempfile
from pathlib import Path

# Measured on one H200 (README, after "Speed on a 2-core CPU"; benchmarks/device_check.py):
# DeBias fine-tuning of a ViT-B/16-sized model, batch 256, bf16, 830 samples/s. torch counts
# 2.25e10 FLOPs per image forward and 5.8e9 per 77-token text for open_clip's ViT-B-16, about
# 1.87e10 at DeBias's 248 tokens (scaled by length); a step is 3x the forward of the image and
# both texts: 830 x 3 x (2.25e10 + 2 x 1.87e10) = 1.5e14 FLOP/s. The recipe's models are
# smaller and may sustain less of the GPU.
GPU_FLOPS = 1.5e14
MEASURED = ("measured: 1.5e14 FLOP/s on one H200 (DeBias, ViT-B/16, bf16, batch 256: 830 samples/s, "
            "benchmarks/device_check.py, in the README); smaller models may sustain less")
STEP_OVERHEAD_S = 0.01
RENDER_S = {"cycles": 0.3, "draft": 0.05, "eevee": 0.5}
PROBE_TEXTS_PER_IMAGE = 60
ANALYSES_TEXTS_PER_IMAGE = 15
ASSUMPTIONS = (f"assumed: {1000 * STEP_OVERHEAD_S:g} ms per optimiser step, render s/image on one GPU {RENDER_S} "
               "(no Cycles GPU render was measured); model FLOPs counted by torch on the recipe's modules")
CPU_FLOPS = 1.0e11  # one core: the small scratch model's 1.9e8 training FLOPs a sample at ~570 samples/s
CPU_STEP_OVERHEAD_S = 0.005  # the fused AdamW step of the small model (benchmarks/train.py)
# Per image and worker, scaled by the pixel count: Workbench at 128 px (18 images/s on 2 workers;
# the small lab's 4000 at 64 px took 56 s), Cycles at 224 px.
CPU_RENDER_S = {"draft": (0.11, 128), "cycles": (2.8, 224)}
CPU_LABCLIP_STEP_S = 0.06  # the small lab's LABCLIP maps: 500 steps in 29-33 s
CPU_ASSUMPTIONS = (f"assumed (measured on a 2-core CPU): {CPU_FLOPS:.0e} FLOP/s a core, {1000 * CPU_STEP_OVERHEAD_S:g} "
                   f"ms per optimiser step ({1000 * CPU_LABCLIP_STEP_S:g} for LABCLIP's), render s/image and worker "
                   + ", ".join(f"{k} {v:g} at {px} px" for k, (v, px) in CPU_RENDER_S.items())
                   + " (scaled by pixels; a render uses every core); other stages on one core each; model FLOPs "
                   "counted by torch on the recipe's modules")


def gpu_here() -> bool:
    """Whether this machine shows torch an NVIDIA GPU, told without importing torch: a device node
    /dev/nvidiaN, and CUDA_VISIBLE_DEVICES not hiding every device."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return any(Path("/dev").glob("nvidia[0-9]*"))


def on_cpu(settings: dict) -> bool:
    """The scale runs on the CPU: its [run] device says cpu, or auto on a machine without a GPU
    (what `auto` then picks): estimate at the CPU's rates."""
    device = settings["run"]["device"]
    return device == "cpu" or (device == "auto" and not gpu_here())


def _render_seconds(preset: str, resolution: int, cpu: bool) -> float:
    if not cpu:
        return RENDER_S.get(preset, RENDER_S["cycles"])
    per, px = CPU_RENDER_S.get(preset, CPU_RENDER_S["cycles"])
    return per * (resolution / px) ** 2 / (os.cpu_count() or 1)  # the render's workers: one per core


def _flops(options: dict) -> dict[str, float]:
    """Forward FLOPs of one image and one text of the scratch model these options describe."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from comco.models import load_model
    from comco.train import save_initial

    with tempfile.TemporaryDirectory() as tmp:
        loaded = load_model(f"ckpt:{save_initial(Path(tmp) / 'm.pt', 0, options)}", None, "cpu")
    model = loaded.model.eval()
    res, ctx = options["resolution"], options["context_length"]
    out = {}
    with torch.no_grad():
        for name, run in (("image", lambda: model.encode_image(torch.zeros(1, 3, res, res))),
                          ("text", lambda: model.encode_text(torch.zeros(1, ctx, dtype=torch.long)))):
            counter = FlopCounterMode(display=False)
            with counter:
                run()
            out[name] = float(counter.get_total_flops())
    return out


def _options(size: dict, context_length: int | None = None) -> dict:
    w, layers = size["width"], size["layers"]
    return {"resolution": size["resolution"], "patch_size": size["patch_size"],
            "context_length": context_length or size["context_length"], "vision_width": w, "text_width": w,
            "embed_dim": w, "vision_layers": layers, "text_layers": layers, "vision_tower": size["tower"]}


def estimate_seconds(stages: list, settings: dict) -> dict[str, float]:
    """{stage id: estimated seconds} for the stages of one recipe at one scale: on one GPU, or on
    one CPU core where the scale runs on the CPU."""
    from comco.manifest import load_object_set

    cpu = on_cpu(settings)
    flops, overhead = (CPU_FLOPS, CPU_STEP_OVERHEAD_S) if cpu else (GPU_FLOPS, STEP_OVERHEAD_S)
    labclip_step = CPU_LABCLIP_STEP_S if cpu else STEP_OVERHEAD_S

    scratch, ft, render = (settings[k] for k in ("scratch", "finetune", "render"))
    size = {"tower": scratch["tower"], "width": scratch["width"], "layers": scratch["layers"],
            "patch_size": scratch["patch_size"], "context_length": scratch["context_length"],
            "resolution": render["resolution"]}
    short = _flops(_options(size))
    stretched = ft["keep"] + 4 * (scratch["context_length"] - ft["keep"])  # Long-CLIP's 77 -> 248 rule
    long = _flops(_options(size, stretched))
    by_id = {st.id: st for st in stages}
    out = {}
    for st in stages:
        c = st.config
        if st.kind == "render" and c.get("shards"):
            out[st.id] = 5.0  # the merge of a sharded render: links and one records file
        elif st.kind == "render":
            per = _render_seconds(c["preset"], settings["render"]["resolution"], cpu)
            i, k = c.get("shard", (0, 1))  # shard i of k: every k-th image from i, the singles in shard 0
            singles = len(load_object_set(c["object_set"]).objects) if c.get("singles") and i == 0 else 0
            out[st.id] = (len(range(i, c["n"], k)) + singles) * per
        elif st.kind in ("scratch", "finetune"):
            f = long if st.kind == "finetune" else short
            texts = 2 if st.kind == "finetune" else 1  # the long caption and its short one
            per_sample = 3 * (f["image"] + texts * f["text"])
            out[st.id] = c["steps"] * (overhead + c["batch_size"] * per_sample / flops)
        elif st.kind == "probe":
            n = by_id[st.deps["test"]].config["n"]
            texts = n * (PROBE_TEXTS_PER_IMAGE + (ANALYSES_TEXTS_PER_IMAGE if c.get("analyses") else 0))
            f = long if c.get("analyses") else short
            out[st.id] = (n * f["image"] + texts * f["text"]) / flops + 5.0  # + loading the model
        elif st.kind == "labclip":
            out[st.id] = c["steps"] * labclip_step + 10.0  # a linear map on cached embeddings
        else:  # captions, report: pure Python, seconds
            out[st.id] = 5.0
    return out


def schedule(stages: list, seconds: dict[str, float], jobs: int) -> float:
    """Wall seconds with `jobs` stages side by side: whenever one ends, the ready stage with the
    deepest chain of dependants starts (ties in graph order), as the lab's executor does."""
    from comco.lab.run import chain_depths

    depth = chain_depths(stages)
    done_at: dict[str, float] = {}
    running, now = [], 0.0
    pending = sorted(stages, key=lambda st: -depth[st.id])  # stable: ties keep graph order
    while pending or running:
        ready = [st for st in pending if all(d in done_at for d in st.deps.values())]
        for st in ready[:max(1, jobs) - len(running)]:
            pending.remove(st)
            heapq.heappush(running, (now + seconds[st.id], st.id))
        if not running:
            raise ValueError("stages wait on inputs that never run")
        now, done = heapq.heappop(running)
        done_at[done] = now
    return max(done_at.values(), default=0.0)


def dry_run_lines(recipe, jobs: int | None = None) -> list[str]:
    """The table `comco lab run --dry-run` prints: one line per stage, then the totals."""
    from comco.lab.graph import build_stages

    stages = build_stages(recipe)
    seconds = estimate_seconds(stages, recipe.settings)
    cpu = on_cpu(recipe.settings)
    # 0 jobs: one stage per core on the CPU (the lab's own rule); one at a time on the GPU
    jobs = jobs or recipe.settings["run"]["jobs"] or ((os.cpu_count() or 1) if cpu else 1)
    device = recipe.settings["run"]["device"]
    why = f" (run.device {device}: {'no GPU here' if cpu else 'a GPU here'})" if device == "auto" else ""
    where = (f"on this machine's CPU ({os.cpu_count() or 1} cores)" if cpu else "on one GPU") + why
    width = max(len(st.id) for st in stages)
    lines = [f"{'stage':<{width}}  {'kind':<9}  {'inputs':<6}  est. {'on one CPU core' if cpu else 'on one GPU'}"]
    for st in stages:
        lines.append(f"{st.id:<{width}}  {st.kind:<9}  {len(st.deps):<6}  {_clock(seconds[st.id])}")
    total = sum(seconds.values())
    lines.append(f"{len(stages)} stages of recipe '{recipe.name}' at scale '{recipe.scale}': {_clock(total)} one "
                 f"after the other, {_clock(schedule(stages, seconds, jobs))} with {jobs} side by side {where}")
    if not cpu:
        lines.append(MEASURED)
    lines.append(CPU_ASSUMPTIONS if cpu else ASSUMPTIONS)
    return lines


def schedule_gpus(stages: list, seconds: dict[str, float], gpus: int, need: dict[str, int]) -> float:
    """Wall seconds as the driver runs the graph on `gpus` GPUs, one stage per GPU at a time:
    whenever GPUs are free, the ready stages start, longest chain of dependants first
    (comco.lab.run.chain_depths, ties in graph order); CPU stages start when ready. A stage that
    needs k GPUs (a DDP group: `need`) is placed as the node executor places it (its Placement,
    reservations included: a waiting group holds back the GPUs it waits for) and takes 1/k of
    its one-GPU seconds (ideal scaling, assumed)."""
    from comco.lab.executors.node import Device, Placement, Request
    from comco.lab.run import chain_depths

    depth = chain_depths(stages)
    order = {st.id: i for i, st in enumerate(stages)}
    waiting = {st.id: set(st.deps.values()) for st in stages}
    users: dict[str, list[str]] = {st.id: [] for st in stages}
    for st in stages:
        for d in st.deps.values():
            users[d].append(st.id)
    ready = [sid for sid, deps in waiting.items() if not deps]
    running: list[tuple[float, int, str]] = []  # (end, graph order, id)
    # every GPU stage takes whole GPUs here (the estimate's one stage per GPU); cores are not counted
    placement = Placement([Device(i, 0.0) for i in range(max(1, gpus))], cores=0)
    now, end = 0.0, 0.0
    while ready or running:
        ready.sort(key=lambda sid: (-depth[sid], order[sid]))
        for sid in list(ready):
            k = need[sid]
            if placement.place(sid, Request(k, k > 0, 0.0, 0)) is None:
                continue
            ready.remove(sid)
            heapq.heappush(running, (now + seconds[sid] / max(1, k), order[sid], sid))
        if not running:
            raise ValueError("a stage needs more GPUs than the plan has")
        now, _, sid = heapq.heappop(running)
        end = max(end, now)
        placement.release(sid)
        for user in users[sid]:
            waiting[user].discard(sid)
            if not waiting[user]:
                ready.append(user)
    return end


def plan_lines(recipe, executor: str, gpus: int | None) -> list[str]:
    """`--dry-run --executor slurm|node [--gpus N]`: each stage's request, then the critical
    path: the wall time on N GPUs against one (one stage per GPU at a time; under node a
    training of [run.node] train_gpus = k on k GPUs)."""
    from comco.lab.executors.node import check_train_gpus, stage_request
    from comco.lab.executors.slurm_request import describe, request
    from comco.lab.graph import build_stages

    node = executor not in ("slurm", "slurm-local")
    group = recipe.settings["run"]["node"].get("train_gpus", 1) if node else 1
    if gpus is None:
        gpus = group
    if node:
        check_train_gpus(recipe.settings, gpus, f"--gpus {gpus}")
    stages = build_stages(recipe)
    seconds = estimate_seconds(stages, recipe.settings)
    asks, need = {}, {}
    for st in stages:
        in_driver = st.kind in ("captions", "report") or bool(st.config.get("shards"))  # Executor.runs_inline
        if not node:
            req = request(recipe.settings, st.kind)
            need[st.id] = int(not in_driver and req["gpus"] > 0)
            asks[st.id] = "driver (in process)" if in_driver else describe(req)
        else:
            from comco.lab.executors.base import StageCall

            if in_driver:
                need[st.id], asks[st.id] = 0, "driver (in process)"
                continue
            r = stage_request(StageCall(st.id, st.kind, st.config, {}, "", 1, st.hash), True, group)
            need[st.id] = r.gpus
            if r.gpus > 1:
                asks[st.id] = f"{r.gpus} whole GPUs (DDP under torchrun), ~{r.memory_gib:.1f} GiB each"
            elif r.gpu:
                asks[st.id] = "a whole GPU" if r.exclusive else f"a GPU share, ~{r.memory_gib:.1f} GiB"
            else:
                asks[st.id] = f"CPU, {r.cores} core(s)"
    width = max(len(st.id) for st in stages)
    lines = [f"{'stage':<{width}}  {'kind':<9}  {'est. on one GPU':<15}  request ({executor})"]
    for st in stages:
        lines.append(f"{st.id:<{width}}  {st.kind:<9}  {_clock(seconds[st.id]):<15}  {asks[st.id]}")
    one = schedule_gpus(stages, seconds, 1, {sid: min(1, k) for sid, k in need.items()})  # a group of one
    many = schedule_gpus(stages, seconds, gpus, need)
    path = schedule_gpus(stages, seconds, len(stages) * max(1, group), need)
    lines.append(f"{len(stages)} stages of recipe '{recipe.name}' at scale '{recipe.scale}': "
                 f"{_clock(many)} on {gpus} GPU(s) against {_clock(one)} on one ({one / max(many, 1e-9):.1f}x); "
                 f"critical path {_clock(path)} (as many GPUs as stages)")
    lines.append(MEASURED)
    lines.append(ASSUMPTIONS)
    if group > 1:
        lines.append(f"assumed: a training on {group} GPUs (run.node.train_gpus) takes 1/{group} of its one-GPU time "
                     "(ideal DDP scaling, not measured)")
    return lines


def _clock(s: float) -> str:
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"
