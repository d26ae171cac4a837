"""`comco lab run --dry-run`: the stage graph with an estimate of each stage's time on one GPU.

The model FLOPs are counted by torch on the real scratch modules (one image, one text,
forward; training counts 3x forward); the rest are named assumptions, printed with the
table, because no GPU was lent when this was written:

- GPU_FLOPS: the throughput a model this small sustains on one H200 (about 10 % of the
  roughly 1e15 dense bf16 peak);
- STEP_OVERHEAD_S: per optimiser step (kernel launches, the optimiser, the batch copy);
- RENDER_S: seconds per image and preset on one GPU (Cycles with OptiX at 224 px);
- the probes' text counts per test image (orders x templates, swaps, sensitivity, the
  DeBias analyses' variants).
"""

from __future__ import annotations

import heapq
import tempfile
from pathlib import Path

GPU_FLOPS = 1.0e14
STEP_OVERHEAD_S = 0.01
RENDER_S = {"cycles": 0.3, "draft": 0.05, "eevee": 0.5}
PROBE_TEXTS_PER_IMAGE = 60
ANALYSES_TEXTS_PER_IMAGE = 15
ASSUMPTIONS = (f"assumed: {GPU_FLOPS:.0e} FLOP/s sustained on one GPU, {1000 * STEP_OVERHEAD_S:g} ms per optimiser "
               f"step, render s/image {RENDER_S}; model FLOPs counted by torch on the recipe's modules")


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
    """{stage id: estimated seconds on one GPU} for the stages of one recipe at one scale."""
    from comco.manifest import load_object_set

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
        if st.kind == "render":
            per = RENDER_S.get(c["preset"], RENDER_S["cycles"])
            singles = len(load_object_set(c["object_set"]).objects) if c.get("singles") else 0  # one per object
            out[st.id] = (c["n"] + singles) * per
        elif st.kind in ("scratch", "finetune"):
            f = long if st.kind == "finetune" else short
            texts = 2 if st.kind == "finetune" else 1  # the long caption and its short one
            per_sample = 3 * (f["image"] + texts * f["text"])
            out[st.id] = c["steps"] * (STEP_OVERHEAD_S + c["batch_size"] * per_sample / GPU_FLOPS)
        elif st.kind == "probe":
            n = by_id[st.deps["test"]].config["n"]
            texts = n * (PROBE_TEXTS_PER_IMAGE + (ANALYSES_TEXTS_PER_IMAGE if c.get("analyses") else 0))
            f = long if c.get("analyses") else short
            out[st.id] = (n * f["image"] + texts * f["text"]) / GPU_FLOPS + 5.0  # + loading the model
        elif st.kind == "labclip":
            out[st.id] = c["steps"] * STEP_OVERHEAD_S + 10.0  # a linear map on cached embeddings
        else:  # captions, report: pure Python, seconds
            out[st.id] = 5.0
    return out


def schedule(stages: list, seconds: dict[str, float], jobs: int) -> float:
    """Wall seconds with `jobs` stages side by side, each starting once its inputs are done."""
    done_at: dict[str, float] = {}
    free = [0.0] * max(1, jobs)
    for st in stages:  # graph order: deps come first
        ready = max([done_at[d] for d in st.deps.values()], default=0.0)
        start = max(ready, heapq.heappop(free))
        done_at[st.id] = start + seconds[st.id]
        heapq.heappush(free, done_at[st.id])
    return max(done_at.values(), default=0.0)


def dry_run_lines(recipe, jobs: int | None = None) -> list[str]:
    """The table `comco lab run --dry-run` prints: one line per stage, then the totals."""
    from comco.lab.graph import build_stages

    stages = build_stages(recipe)
    seconds = estimate_seconds(stages, recipe.settings)
    jobs = jobs or recipe.settings["run"]["jobs"] or 1
    width = max(len(st.id) for st in stages)
    lines = [f"{'stage':<{width}}  {'kind':<9}  {'inputs':<6}  est. on one GPU"]
    for st in stages:
        lines.append(f"{st.id:<{width}}  {st.kind:<9}  {len(st.deps):<6}  {_clock(seconds[st.id])}")
    total = sum(seconds.values())
    lines.append(f"{len(stages)} stages of recipe '{recipe.name}' at scale '{recipe.scale}': {_clock(total)} one "
                 f"after the other, {_clock(schedule(stages, seconds, jobs))} with {jobs} side by side on one GPU")
    lines.append(ASSUMPTIONS)
    return lines


def _clock(s: float) -> str:
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"
