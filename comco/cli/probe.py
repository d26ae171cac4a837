"""`comco probe`: TOR, IOR and the related tables for one or more CLIP-style models.

comco/cli/app.py registers it as `comco probe`. Only typer is imported at
module level; torch and the probes load when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from comco.cli.options import BatchSize, Cache, Models, NoCache, Pretrained, Quiet, TrustRemoteCode
from comco.cli.say import note_random_weights
from comco.errors import UserError


def probe(
    dataset: Annotated[Optional[Path], typer.Argument(help="Dataset folder (from comco plan / comco render).")] = None,
    model: Models = None,
    pretrained: Pretrained = None,
    trust_remote_code: TrustRemoteCode = False,
    probes: Annotated[Optional[str], typer.Option("--probes", help="Comma list of: tor, ior, i2tor, matching, toc, ioc, binding, attention, pairs, size-class, half-truth, mention (default: all the data supports but size-class, half-truth and mention; mention,matching for a vlm:DIR model).")] = None,
    text_aggregate: Annotated[Optional[str], typer.Option("--text-aggregate", help="per-object: run every text-side probe also with each text embedded as the mean of its mentioned objects' phrase embeddings (ComCO's mitigation); the page shows both.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Output folder for results.json, tables, plots and the page (report.md, report.html).")] = None,
    text_only: Annotated[bool, typer.Option("--text-only", help="TOR from object names alone (balanced ordered tuples).")] = False,
    object_set: Annotated[Optional[str], typer.Option("--object-set", help="Object set for --text-only without a dataset.")] = None,
    gallery: Annotated[Optional[str], typer.Option("--gallery", help="--text-only over a fixed name list instead of a set: coco90 (ComCO's COCO gallery, ids 1-90), coco91 (the COCO paper's list) or coco80.")] = None,
    objects: Annotated[str, typer.Option("--objects", help="Tuple sizes for --text-only: 4, 2-5 or 2,4.")] = "2-5",
    tuples: Annotated[int, typer.Option("--tuples", help="Captions per tuple size for --text-only (rounded up to balanced rounds).")] = 1000,
    templates: Annotated[Optional[str], typer.Option("--templates", help="Caption templates for TOR/TOC (default: all colour-free ones in the data).")] = None,
    tor_gallery: Annotated[str, typer.Option("--tor-gallery", help="TOR gallery: names (bare object names, ComCO's protocol) or template (each name in the query's template).")] = "names",
    text_template: Annotated[str, typer.Option("--text-template", help="Template of the captions probes write (I2TOR, matching, text-only).")] = "photo",
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples for the 95 % intervals (0 to 100,000).")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed for sampling, splits and the bootstrap.")] = 0,
    batch_size: BatchSize = 64,
    device: Annotated[str, typer.Option("--device", help="auto (cuda when there is one), cpu, cuda or cuda:N (autocast fp16 on cuda).")] = "auto",
    cache: Cache = None,
    no_cache: NoCache = False,
    max_distractors: Annotated[Optional[int], typer.Option("--max-distractors", help="Matching: absent objects per image (default: all).")] = None,
    test_fraction: Annotated[float, typer.Option("--test-fraction", help="Held-out share for TOC/IOC/binding probes.")] = 0.2,
    limit: Annotated[Optional[int], typer.Option("--limit", help="Probe only the first N scenes.")] = None,
    vlm_prompts: Annotated[Optional[Path], typer.Option("--vlm-prompts", help="The prompts asked of vlm:DIR models (a TOML file like probes/vlm_prompts.toml).")] = None,
    by: Annotated[Optional[str], typer.Option("--by", help="Split every table by a recorded factor: world, holdout (seen / held-out), objects, camera-elevation (bins: camera-elevation:4), world-strength, or any record field; a wrong name lists the recorded ones.")] = None,
    no_plots: Annotated[bool, typer.Option("--no-plots", help="Skip the PNG plots.")] = False,
    list_models: Annotated[bool, typer.Option("--list-models", help="List open_clip model names and exit.")] = False,
    quiet: Quiet = False,
) -> None:
    """Measure order and size biases: TOR, IOR, I2TOR, matching, TOC/IOC, binding, attention, pairs, VLM mentions."""
    model, pretrained = model or [], pretrained or []
    if list_models:
        from comco.models import list_models as names

        typer.echo("\n".join(names()))
        return
    if not model:
        raise UserError("give at least one --model (e.g. --model ViT-B-32 --pretrained openai); see --list-models")
    if out is None:
        raise UserError("give --out DIR for the results")
    from comco import probe as run
    from comco.models import pair_models

    results = run(dataset, model, pretrained, probes=probes, templates=templates, text_template=text_template,
                  text_only=text_only, object_set=object_set, gallery=gallery, objects=objects, tuples=tuples,
                  tor_gallery=tor_gallery, bootstrap=bootstrap, seed=seed, batch_size=batch_size, device=device,
                  cache=False if no_cache else cache, max_distractors=max_distractors, test_fraction=test_fraction,
                  limit=limit, vlm_prompts=vlm_prompts, text_aggregate=text_aggregate, by=by, plots=not no_plots,
                  trust_remote_code=trust_remote_code, out=out, quiet=quiet)
    written = results["files"]
    refs = pair_models(model, pretrained, trust_remote_code)  # as the run paired them (no weights load)
    note_random_weights(refs, quiet)  # after the work: a bad option stays the one line it is
    if not quiet:
        for m in results["models"]:
            if "generated" in m:  # a generative VLM: answers and scored captions, no embeddings
                g = m["generated"]
                typer.echo(f"{m['label']}: {m['seconds']:.1f} s, {g['answers']} answers, "
                           f"{g['captions_scored']} captions scored")
                continue
            c = m["cache"]
            typer.echo(f"{m['label']}: {m['seconds']:.1f} s, cache hits {c['text_hits']} texts / "
                       f"{c['image_hits']} images, encoded {c['text_encoded']} texts / {c['image_encoded']} images")
        for k, why in results["skipped"].items():
            typer.echo(f"skipped {k}: {why}")
        typer.echo(f"wrote {len(written)} files to {out}")
        typer.echo(f"open {out / 'report.html'}")  # the one file to open, last
