"""`comco lab run RECIPE.toml --out DIR [--scale smoke|small|medium|full]`: a whole experiment in one command.

comco/cli/app.py registers it as `comco lab`. Only typer is imported here;
the lab's modules (and through them torch and bpy, inside the stages) load when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

# The most GPUs --gpus plans or uses: a node holds up to 16, a dry run may plan a whole cluster
MAX_GPUS = 4096

app = typer.Typer(help="Run lab experiments: render, train, probe, fine-tune, evaluate, report.",
                  no_args_is_help=True)


@app.callback()
def _group() -> None:
    """Run lab experiments (a group, so that `lab run` stays a sub-command)."""


@app.command("run")
def run(
    recipe: Annotated[Path, typer.Argument(help="A recipe TOML file (e.g. recipes/order-bias.toml) or a shipped recipe's name.")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Run folder: stages, report.md, report.html, results.json (required unless --dry-run).")] = None,
    scale: Annotated[str, typer.Option(help="smoke (about a minute), small (default, under 30 min on 2 CPU cores), medium (the 72 ComCO objects at 96 px, under 2 h on 2 CPU cores) or full (a GPU machine).")] = "small",
    jobs: Annotated[Optional[int], typer.Option(help="Stages run side by side (default: the recipe's, else one per core).")] = None,
    threads: Annotated[Optional[int], typer.Option(help="torch threads per stage (default: cores / jobs).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Reuse the finished stages of a folder that holds another recipe's or scale's run.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Delete what the folder holds and start again.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or messages.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the stage graph with each stage's estimated time on the device the recipe runs on (this CPU, or one GPU: the table says which); run nothing.")] = False,
    executor: Annotated[Optional[str], typer.Option(help="Where stages run: local (a process pool here, the default), node (the GPUs of this machine), slurm (SLURM jobs through submitit; resources from [run.slurm]), slurm-local (submitit's local jobs: the slurm path rehearsed here). Default: the recipe's run.executor.")] = None,
    gpus: Annotated[Optional[int], typer.Option(help="GPUs to use: the first N of this machine with --executor node (default all); with --dry-run the N GPUs to plan the critical path on.")] = None,
) -> None:
    """Run a recipe's stages, each once per input hash, and write the report."""
    from comco.errors import UserError
    from comco.lab import load_recipe, run_lab

    if resume and overwrite:
        raise UserError("--resume and --overwrite exclude each other; pass one")
    if (jobs is not None and jobs < 1) or (threads is not None and threads < 1):
        raise UserError("--jobs and --threads take at least 1 (leave them out for the defaults)")
    if gpus is not None and not 1 <= gpus <= MAX_GPUS:
        raise UserError(f"--gpus {gpus}: give 1..{MAX_GPUS} (or leave it out)")
    r = load_recipe(recipe, scale)
    if dry_run:
        from comco.lab import dry_run_lines, plan_lines

        planned = executor or r.settings["run"]["executor"]
        if planned not in ("local", "node", "slurm", "slurm-local"):
            raise UserError(f"--executor {planned}: use one of local, node, slurm, slurm-local")
        lines = dry_run_lines(r, jobs) if planned == "local" and gpus is None else plan_lines(r, planned, gpus)
        for line in lines:
            typer.echo(line)
        return
    if out is None:
        raise UserError("--out is missing: give the run folder (e.g. --out runs/order-bias), or pass --dry-run")
    say = (lambda _: None) if quiet else typer.echo
    from comco.lab import StageFailed

    try:
        result = run_lab(r, out, resume=resume, overwrite=overwrite, jobs=jobs, threads=threads, quiet=quiet,
                         say=say, executor=executor, gpus=gpus)
    except StageFailed as exc:  # a job's own error: its stage and the end of its log, not the driver's traceback
        typer.echo(f"comco: {exc}", err=True)
        typer.echo("comco: the finished stages are kept; fix the cause and run the same command again", err=True)
        raise typer.Exit(1) from None
    if not quiet:
        typer.echo(f"ran {len(result['ran'])} stages, {len(result['skipped'])} were done already, "
                   f"{result['wall_seconds'] / 60:.1f} min")
        typer.echo(f"open {out / 'report.html'}")  # the one file to open, last



@app.command("status")
def status(
    out: Annotated[Path, typer.Argument(help="A lab run folder (the --out of `comco lab run`).")],
    lines: Annotated[int, typer.Option(help="Log lines shown per failed stage.")] = 5,
) -> None:
    """Every stage of a run: done, running (job, node, minutes), queued, failed (its log's last lines), left."""
    from comco.lab import status_lines

    for line in status_lines(out, log_lines=lines):
        typer.echo(line)
