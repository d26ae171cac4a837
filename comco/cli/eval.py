"""`comco eval retrieval|analyses`: natural benchmarks, one or more models side by side.

    comco eval retrieval --benchmark docci --root /data/docci --model ViT-B-16 --pretrained openai \\
        --model ckpt:runs/debias/last.pt --protocol all --out runs/eval/docci

comco/cli/app.py registers it as `comco eval`. Only typer is imported at
module level; the probes (numpy, torch) load when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from comco.cli.options import BatchSize, Cache, Models, NoCache, Pretrained, Quiet, TrustRemoteCode
from comco.cli.say import note_random_weights
from comco.errors import UserError
from comco.progress import progress_group

app = typer.Typer(help="Evaluate models on natural benchmarks (retrieval, DeBias-CLIP analyses).",
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
            typer.echo(f"open {out / f'{kind}.md'}")  # the one file to open, last
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
