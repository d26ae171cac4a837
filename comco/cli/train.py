"""`comco train scratch|longclip|debias|labclip`: change a model.

    comco train scratch  --data runs/data/bias0.8 --out runs/scratch
    comco train debias   --data runs/data/long --init ViT-B-16 --pretrained openai --out runs/debias
    comco train longclip --data share-captioner_coco_lcs_sam_1246k_1107.json --image-root /data \
        --init ViT-B-16 --pretrained openai --accum 8 --out runs/longclip
    comco train labclip  --data runs/data/colors --init ViT-B-32 --pretrained openai --out runs/labclip

Every kind shares one training loop: seeded data order, --accum, AMP on GPUs,
checkpoints every --checkpoint-every steps and at the end (`model.pt`, loadable as
ckpt:PATH), --resume-from, metrics.jsonl; multi-GPU by starting it with torchrun.
Only typer is imported here; torch loads when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(help="Train or fine-tune models: scratch, longclip, debias, labclip.", no_args_is_help=True)

Data = Annotated[Path, typer.Option("--data", help="A comco dataset folder, a ShareGPT4V .json, or a .jsonl/.csv of image,caption.")]
Out = Annotated[Path, typer.Option("--out", help="Output folder (checkpoint.pt, model.pt, metrics.jsonl, config.json).")]
Init = Annotated[Optional[str], typer.Option("--init", help="Model to start from: an open_clip name, ckpt:PATH, longclip:PATH or debias:PATH.")]
Pretrained = Annotated[Optional[str], typer.Option("--pretrained", help="Weights for an open_clip --init: a tag, a file, or none.")]
ImageRoot = Annotated[Optional[Path], typer.Option("--image-root", help="Folder that image paths in a .json/.jsonl/.csv are relative to.")]
Seed = Annotated[int, typer.Option(help="Seed of the data order, captions, padding and initial weights.")]
BatchSize = Annotated[Optional[int], typer.Option("--batch-size", help="Global batch (over --accum and processes).")]
Accum = Annotated[int, typer.Option("--accum", help="Micro-batches per optimiser step (when the batch does not fit).")]
Epochs = Annotated[Optional[float], typer.Option(help="Passes over the data.")]
Steps = Annotated[Optional[int], typer.Option(help="Optimiser steps (overrides --epochs).")]
Lr = Annotated[Optional[float], typer.Option("--lr", help="Peak learning rate.")]
WeightDecay = Annotated[Optional[float], typer.Option("--weight-decay", help="Decoupled weight decay.")]
Warmup = Annotated[Optional[int], typer.Option(help="Linear warm-up steps before the cosine decay.")]
LabelSmoothing = Annotated[Optional[float], typer.Option("--label-smoothing", help="Label smoothing of the contrastive loss.")]
Precision = Annotated[str, typer.Option(help="auto (bf16 autocast on GPUs that have it and on CPUs that multiply bf16 natively: avx512_bf16 or amx_bf16; else fp32 on a CPU), fp32, bf16 or fp16 (GPU only).")]
Device = Annotated[str, typer.Option(help="auto (cuda when there is one), cpu, cuda or cuda:N.")]
Workers = Annotated[Optional[int], typer.Option(help="Data-loading processes (scratch: -1 = 2 on a GPU, 0 on CPUs).")]
CheckpointEvery = Annotated[Optional[int], typer.Option("--checkpoint-every", help="Save checkpoint.pt every N steps.")]
StopAfter = Annotated[Optional[int], typer.Option("--stop-after", help="Pause after N steps of this run (resume later).")]
Resume = Annotated[Optional[Path], typer.Option("--resume-from", help="Continue from a checkpoint.pt of the same configuration.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or messages.")]
AdamBetas = Annotated[Optional[str], typer.Option("--adam-betas", help="AdamW betas, e.g. 0.9,0.999 (default: the kind's paper code's).")]
AdamEps = Annotated[Optional[float], typer.Option("--adam-eps", help="AdamW eps (default: the kind's paper code's).")]
ShortWeight = Annotated[Optional[float], typer.Option("--short-weight", help="Weight of the short-caption loss (longclip 1.0, debias 0.1; alone it is lambda: lambda*short + (1-lambda)*long).")]
LongWeight = Annotated[Optional[float], typer.Option("--long-weight", help="Weight of the long-caption loss (longclip 1.0, debias 0.9).")]


def _betas(text: str | None):
    from comco.errors import UserError

    if text is None:
        return None
    try:
        b1, b2 = (float(t) for t in text.split(","))
    except ValueError:
        raise UserError(f"--adam-betas {text!r}: give two numbers, e.g. 0.9,0.999") from None
    return (b1, b2)


def _run(kind: str, options: dict, **given) -> None:
    from comco.io import require_folder
    from comco.train import make_config, run_training

    given["adam_betas"] = _betas(given.get("adam_betas"))
    require_folder(given["out"], "--out")
    for key in ("data", "out", "image_root", "resume"):
        if given.get(key) is not None:
            given[key] = str(given[key])
    cfg = make_config(kind, options=options, **given)
    summary = run_training(cfg)
    if not cfg.quiet:
        _report(kind, summary)


def _report(kind: str, summary: dict) -> None:
    last = summary.get("last") or {}
    done = summary["step"] >= summary["total_steps"]
    state = "done" if done else "paused"
    loss = f", loss {last['loss']:.4f}" if "loss" in last else ""
    typer.echo(f"{kind}: {state} at step {summary['step']}/{summary['total_steps']}{loss} -> {summary['checkpoint']}")
    if "binding_after" in summary:
        from comco.probes import binding_lines

        typer.echo("binding accuracy (image closer to its caption than to the attribute-swapped one):")
        for line in binding_lines(summary):
            typer.echo(f"  {line}")
        typer.echo(f"open {Path(summary['checkpoint']).parent / 'report.html'}")  # the one file to open, last


@app.command()
def scratch(
    data: Data, out: Out,
    templates: Annotated[str, typer.Option("--templates", help="Caption templates to train on, comma-separated (default: all short ones).")] = "",
    resolution: Annotated[int, typer.Option(help="Image size in pixels.")] = 64,
    context_length: Annotated[int, typer.Option("--context-length", help="Text positions.")] = 32,
    width: Annotated[int, typer.Option(help="Width of both towers (multiple of 32).")] = 128,
    layers: Annotated[int, typer.Option(help="Transformer layers of both towers.")] = 4,
    logit_scale: Annotated[Optional[float], typer.Option("--logit-scale", help="A fixed temperature's inverse (e.g. 10); default: learned from 1/0.07, as open_clip.")] = None,
    seed: Seed = 0, batch_size: BatchSize = None, accum: Accum = 1, epochs: Epochs = None, steps: Steps = None,
    lr: Lr = None, weight_decay: WeightDecay = None, warmup: Warmup = None, label_smoothing: LabelSmoothing = None,
    precision: Precision = "auto", device: Device = "auto", workers: Workers = None,
    checkpoint_every: CheckpointEvery = None, stop_after: StopAfter = None, resume: Resume = None, quiet: Quiet = False,
    adam_betas: AdamBetas = None, adam_eps: AdamEps = None,
):
    """A small CLIP from random weights on a comco dataset (minutes on a CPU)."""
    options = {"resolution": resolution, "context_length": context_length, "vision_width": width,
               "text_width": width, "vision_layers": layers, "text_layers": layers, "embed_dim": width,
               "captions": [c.strip() for c in templates.split(",") if c.strip()]}
    if logit_scale is not None:
        options["logit_scale"] = logit_scale
    _run("scratch", options, data=data, out=out, seed=seed, batch_size=batch_size, accum=accum, epochs=epochs,
         steps=steps, lr=lr, weight_decay=weight_decay, warmup=warmup, label_smoothing=label_smoothing,
         precision=precision, device=device, workers=workers, checkpoint_every=checkpoint_every,
         stop_after=stop_after, resume=resume, quiet=quiet, adam_betas=adam_betas, adam_eps=adam_eps)


@app.command()
def longclip(
    data: Data, out: Out, init: Init = None, pretrained: Pretrained = None, image_root: ImageRoot = None,
    template: Annotated[str, typer.Option(help="Caption template of a comco dataset to train on.")] = "long",
    keep: Annotated[int, typer.Option(help="Positions copied and frozen when stretching 77 -> 4*77-3*keep.")] = 20,
    short_weight: ShortWeight = None, long_weight: LongWeight = None,
    pca_rank: Annotated[int, typer.Option("--pca-rank", help="Principal components of the batch's image features for the short loss.")] = 32,
    seed: Seed = 0, batch_size: BatchSize = None, accum: Accum = 1, epochs: Epochs = None, steps: Steps = None,
    lr: Lr = None, weight_decay: WeightDecay = None, warmup: Warmup = None, label_smoothing: LabelSmoothing = None,
    precision: Precision = "auto", device: Device = "auto", workers: Workers = None,
    checkpoint_every: CheckpointEvery = None, stop_after: StopAfter = None, resume: Resume = None, quiet: Quiet = False,
    adam_betas: AdamBetas = None, adam_eps: AdamEps = None,
):
    """Long-CLIP: stretched positions, long captions, short caption = the first sentence."""
    options = {"template": template, "keep": keep, "short_weight": short_weight, "long_weight": long_weight,
               "pca_rank": pca_rank}
    _run("longclip", options, data=data, out=out, init=init, pretrained=pretrained, image_root=image_root,
         seed=seed, batch_size=batch_size, accum=accum, epochs=epochs, steps=steps, lr=lr,
         weight_decay=weight_decay, warmup=warmup, label_smoothing=label_smoothing, precision=precision,
         device=device, workers=workers, checkpoint_every=checkpoint_every, stop_after=stop_after,
         resume=resume, quiet=quiet, adam_betas=adam_betas, adam_eps=adam_eps)


@app.command()
def debias(
    data: Data, out: Out, init: Init = None, pretrained: Pretrained = None, image_root: ImageRoot = None,
    template: Annotated[str, typer.Option(help="Caption template of a comco dataset to train on.")] = "long",
    keep: Annotated[int, typer.Option(help="Positions copied and frozen when stretching 77 -> 4*77-3*keep.")] = 20,
    short_weight: ShortWeight = None, long_weight: LongWeight = None,
    pca_rank: Annotated[int, typer.Option("--pca-rank", help="Principal components of the batch's image features for the short loss.")] = 32,
    remove_summary: Annotated[bool, typer.Option("--remove-summary/--no-remove-summary", help="Drop the summary sentence from the short caption.")] = True,
    sample: Annotated[bool, typer.Option("--sample/--no-sample", help="Short caption = 1..k-1 random sentences in random order.")] = True,
    pad: Annotated[bool, typer.Option("--pad/--no-pad", help="Move a random number of PAD tokens to just after SOT.")] = True,
    seed: Seed = 0, batch_size: BatchSize = None, accum: Accum = 1, epochs: Epochs = None, steps: Steps = None,
    lr: Lr = None, weight_decay: WeightDecay = None, warmup: Warmup = None, label_smoothing: LabelSmoothing = None,
    precision: Precision = "auto", device: Device = "auto", workers: Workers = None,
    checkpoint_every: CheckpointEvery = None, stop_after: StopAfter = None, resume: Resume = None, quiet: Quiet = False,
    adam_betas: AdamBetas = None, adam_eps: AdamEps = None,
):
    """DeBias-CLIP: Long-CLIP with sampled short captions and moved padding."""
    options = {"template": template, "keep": keep, "short_weight": short_weight, "long_weight": long_weight,
               "pca_rank": pca_rank, "remove_summary": remove_summary, "sample": sample, "pad": pad}
    _run("debias", options, data=data, out=out, init=init, pretrained=pretrained, image_root=image_root,
         seed=seed, batch_size=batch_size, accum=accum, epochs=epochs, steps=steps, lr=lr,
         weight_decay=weight_decay, warmup=warmup, label_smoothing=label_smoothing, precision=precision,
         device=device, workers=workers, checkpoint_every=checkpoint_every, stop_after=stop_after,
         resume=resume, quiet=quiet, adam_betas=adam_betas, adam_eps=adam_eps)


@app.command()
def labclip(
    data: Data, out: Out, init: Init = None, pretrained: Pretrained = None, image_root: ImageRoot = None,
    seed: Seed = 0, batch_size: BatchSize = None, epochs: Epochs = None, steps: Steps = None, lr: Lr = None,
    weight_decay: WeightDecay = None, device: Device = "auto", checkpoint_every: CheckpointEvery = None,
    resume: Resume = None, quiet: Quiet = False,
):
    """LABCLIP: a linear map on the frozen model's text embeddings, trained with attribute-swapped negatives."""
    _run("labclip", {}, data=data, out=out, init=init, pretrained=pretrained, image_root=image_root, seed=seed,
         batch_size=batch_size, epochs=epochs, steps=steps, lr=lr, weight_decay=weight_decay, device=device,
         checkpoint_every=checkpoint_every, resume=resume, quiet=quiet)
