"""`comco eval retrieval|analyses`: natural benchmarks, one or more models side by side.

    comco eval retrieval --benchmark docci --root /data/docci --model ViT-B-16 --pretrained openai \\
        --model ckpt:runs/debias/last.pt --protocol all --out runs/eval/docci

comco/cli/app.py registers it as `comco eval`. Only typer is imported at
module level; the probes (numpy, torch) load when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from comco.cli.options import BatchSize, Cache, Models, NoCache, Pretrained, Quiet, TrustRemoteCode
from comco.cli.say import note_random_weights
from comco.errors import UserError
from comco.progress import progress_group

app = typer.Typer(help="Evaluate models on natural benchmarks (retrieval, DeBias-CLIP analyses, compositional, zero-shot).",
                  no_args_is_help=True)

BENCHMARK_HELP = "coco, coco-karpathy, flickr30k, flickr30k-karpathy, urban1k, docci, dci, long-dci, comco"
PROTOCOL_HELP = "all (every caption, DeBias-CLIP) or first5 (first five per image, Long-CLIP's scripts)"
PRETRAINED_HELP = "weights for --model: one value for every open_clip model, or one per --model in order"


def run(kind: str, benchmark: str, root: Path, models: list[str], pretrained: list[str], protocol: str,
        out: Path, device: str, batch_size: int, cache: Path | None, no_cache: bool, quiet: bool,
        analyses: str = "", trust_remote_code: bool = False) -> None:
    """Run one eval; a user's mistake ends it with exit code 2 and one line, never a traceback."""
    try:
        from comco.io import require_folder
        from comco.models import pair_models
        from comco.probes import DEFAULT_CACHE
        from comco.probes.natural import run_natural_eval

        require_folder(out, "--out")
        if not no_cache:
            require_folder(cache or DEFAULT_CACHE, "--cache")

        from comco.models import check_device

        device = check_device(device)
        names = tuple(n.strip() for n in analyses.split(",") if n.strip())
        refs = pair_models(models, pretrained, trust_remote_code)
        if generative := [r.name for r in refs if r.generative]:
            raise UserError(f"--model {generative[0]} is a generative VLM and embeds nothing; comco eval ranks "
                            "embeddings (use comco probe --probes mention,matching for VLMs)")
        if text_only := [r.name for r in refs if r.text_only]:
            raise UserError(f"--model {text_only[0]} embeds text only; comco eval ranks images and texts "
                            f"against each other (use comco probe --text-only for sentence encoders)")
        with progress_group(quiet) as progress:
            run_natural_eval(kind, benchmark, root, refs, protocol, out,
                             device=device, batch_size=batch_size,
                             cache_dir=None if no_cache else (cache or DEFAULT_CACHE),
                             analyses=names, progress=progress, say=(lambda _: None) if quiet else typer.echo)
        note_random_weights(refs, quiet)  # after the work: a bad option stays the one line it is
        if not quiet:
            typer.echo(f"open {out / f'{kind}.html'}")  # the one file to open, last: the page
    except UserError as err:
        typer.echo(f"comco: error: {err}", err=True)  # as comco.cli.app.main prints it
        raise typer.Exit(err.exit_code) from None


Benchmark = Annotated[str, typer.Option("--benchmark", help=BENCHMARK_HELP)]
Root = Annotated[Path, typer.Option("--root", help="the benchmark's folder, laid out as the dataset is distributed")]
Protocol = Annotated[str, typer.Option("--protocol", help=PROTOCOL_HELP)]
Out = Annotated[Path, typer.Option("--out", help="Output folder for results.json, tables and plots.")]
Device = Annotated[str, typer.Option("--device", help="auto (cuda when there is one), cpu, cuda or cuda:N.")]


@app.command()
def retrieval(benchmark: Benchmark, root: Root, out: Out, model: Models = None, pretrained: Pretrained = None,
              protocol: Protocol = "all", device: Device = "auto", batch_size: BatchSize = 64, cache: Cache = None,
              no_cache: NoCache = False, quiet: Quiet = False, trust_remote_code: TrustRemoteCode = False) -> None:
    """Text-to-image and image-to-text R@1/5/10, several captions per image."""
    run("retrieval", benchmark, root, model or [], pretrained or [], protocol, out, device, batch_size, cache,
        no_cache, quiet, trust_remote_code=trust_remote_code)


@app.command()
def analyses(benchmark: Benchmark, root: Root, out: Out, model: Models = None, pretrained: Pretrained = None,
             protocol: Protocol = "all",
             which: Annotated[str, typer.Option("--analyses", help="comma-separated: padding, order, summary")] = (
                 "padding,order,summary"),
             device: Device = "auto", batch_size: BatchSize = 64, cache: Cache = None, no_cache: NoCache = False,
             quiet: Quiet = False, trust_remote_code: TrustRemoteCode = False) -> None:
    """The DeBias-CLIP analyses ("This is a photo." padding, sentence order, summary position)."""
    run("analyses", benchmark, root, model or [], pretrained or [], protocol, out, device, batch_size, cache,
        no_cache, quiet, which, trust_remote_code)


COMPOSITIONAL_HELP = ("sugarcrepe, sugarcrepe-pp, winoground, eqben, aro-vg-relation, aro-vg-attribution, "
                      "aro-coco-order, aro-flickr30k-order, whatsup, valse")


def run_scores(kind: str, root: Path, models: list[str], pretrained: list[str], out: Path, device: str,
               batch_size: int, cache: Path | None, no_cache: bool, quiet: bool, trust_remote_code: bool,
               **options) -> None:
    """`comco eval compositional|zeroshot`: the same model checks and one-line errors as `run`."""
    try:
        from comco.io import require_folder
        from comco.models import check_device, pair_models
        from comco.probes import DEFAULT_CACHE
        from comco.probes.natural import run_compositional_eval, run_zeroshot_eval

        require_folder(out, "--out")
        if not no_cache:
            require_folder(cache or DEFAULT_CACHE, "--cache")
        device = check_device(device)
        refs = pair_models(models, pretrained, trust_remote_code)
        if unfit := [r.name for r in refs if r.generative or r.text_only]:
            raise UserError(f"--model {unfit[0]} does not embed both images and texts; comco eval {kind} "
                            "compares image and text embeddings")
        say = (lambda _: None) if quiet else typer.echo
        with progress_group(quiet) as progress:
            common = dict(device=device, batch_size=batch_size, progress=progress, say=say,
                          cache_dir=None if no_cache else (cache or DEFAULT_CACHE))
            if kind == "compositional":
                run_compositional_eval(options["benchmark"], root, refs, out, **common)
            else:
                run_zeroshot_eval(root, refs, out, classnames=options["classnames"],
                                  templates=options["templates"], **common)
        note_random_weights(refs, quiet)
        if not quiet:
            typer.echo(f"open {out / f'{kind}.html'}")
    except UserError as err:
        typer.echo(f"comco: error: {err}", err=True)
        raise typer.Exit(err.exit_code) from None


@app.command()
def compositional(benchmark: Annotated[str, typer.Option("--benchmark", help=COMPOSITIONAL_HELP)], root: Root,
                  out: Out, model: Models = None, pretrained: Pretrained = None, device: Device = "auto",
                  batch_size: BatchSize = 64, cache: Cache = None, no_cache: NoCache = False, quiet: Quiet = False,
                  trust_remote_code: TrustRemoteCode = False) -> None:
    """Compositional benchmarks in their released formats: image-to-caption selection, Winoground's scores."""
    run_scores("compositional", root, model or [], pretrained or [], out, device, batch_size, cache, no_cache,
               quiet, trust_remote_code, benchmark=benchmark)


@app.command()
def zeroshot(root: Annotated[Path, typer.Option("--root", help="an ImageNet-style folder: one subfolder per class")],
             out: Out, model: Models = None, pretrained: Pretrained = None,
             classnames: Annotated[Optional[Path], typer.Option(
                 "--classnames", help="a file, one class name a line in the folders' sorted order, or imagenet "
                                      "(open_clip's IMAGENET_CLASSNAMES)")] = None,
             prompts: Annotated[str, typer.Option(
                 "--prompts", help="prompt templates: openai or simple (open_clip's ImageNet templates) or a "
                                   "file, one {} a line")] = "openai",
             device: Device = "auto", batch_size: BatchSize = 64, cache: Cache = None, no_cache: NoCache = False,
             quiet: Quiet = False, trust_remote_code: TrustRemoteCode = False) -> None:
    """Zero-shot classification top-1 / top-5 on a class-per-folder image set."""
    run_scores("zeroshot", root, model or [], pretrained or [], out, device, batch_size, cache, no_cache, quiet,
               trust_remote_code, classnames=classnames, templates=prompts)


@app.command()
def tradeoff(out: Out, results: Annotated[Optional[List[Path]], typer.Option(
                 "--results", help="a comco probe or comco eval retrieval|compositional|zeroshot --out folder; "
                                   "repeat")] = None,
             models: Annotated[str, typer.Option(
                 "--models", help="comma-separated model labels to keep, in this order (default: every one)")] = "",
             lab: Annotated[Optional[Path], typer.Option(
                 "--lab", help="a comco lab run --out folder: its probed models' TOR and IOR shares; eval folders' "
                               "ckpt:RUN/stages/STAGE/model.pt models are named by their stage")] = None,
             quiet: Quiet = False) -> None:
    """One table and figure: TOR first share and IOR largest share beside compositional, retrieval and zero-shot
    scores, per model, each with its interval, count and chance."""
    try:
        from comco.io import require_folder
        from comco.probes.natural import gather_tradeoff, write_tradeoff

        require_folder(out, "--out")
        keep = [m.strip() for m in models.split(",") if m.strip()] or None
        measures, table = gather_tradeoff(list(results or []), keep, lab)
        if not table:
            raise UserError("the --results folders hold no model's numbers")
        write_tradeoff(out, measures, table)
        if not quiet:
            typer.echo(f"{len(table)} models, {len(measures)} measures")
            typer.echo(f"open {out / 'tradeoff.html'}")
    except UserError as err:
        typer.echo(f"comco: error: {err}", err=True)
        raise typer.Exit(err.exit_code) from None
