"""The `comco` command. One verb per job; heavy libraries load only inside a verb.

Errors a user can cause end with exit code 2 and one line on stderr; internal
errors keep their traceback.
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from comco.cli.options import ComcoGroup, Out, Overwrite, PlanOptions, Quiet, Resume, Singles, with_plan_options
from comco.cli.say import say
from comco.errors import UserError

app = typer.Typer(cls=ComcoGroup, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Find, explain and remove the order and size biases of CLIP-style models.")
objects_app = typer.Typer(no_args_is_help=True, help="Inspect, preview and validate object sets.")
dataset_app = typer.Typer(no_args_is_help=True, help="Work with dataset folders.")
app.add_typer(objects_app, name="objects")
app.add_typer(dataset_app, name="dataset")


def _register_parts() -> None:
    """The probe, export, train and eval verbs live beside their code's owners (typer only, nothing heavy)."""
    from comco.cli.captions import app as captions_app
    from comco.cli.eval import app as eval_app
    from comco.cli.export import export
    from comco.cli.lab import app as lab_app
    from comco.cli.model import app as model_app
    from comco.cli.probe import probe
    from comco.cli.train import app as train_app

    app.command("probe")(probe)
    app.command("export")(export)
    app.add_typer(train_app, name="train")
    app.add_typer(eval_app, name="eval")
    app.add_typer(lab_app, name="lab")
    app.add_typer(captions_app, name="captions")
    app.add_typer(model_app, name="model")


_register_parts()


def api_options(plan_options: dict) -> dict:
    """The planning options of plan and render by the API's keyword names (comco.api: a template
    list is `templates`, a template file `templates_file`, as on the command line)."""
    names = {"captions": "templates", "templates": "templates_file"}
    return {names.get(k, k): v for k, v in plan_options.items()}


@app.command()
@with_plan_options
def plan(out: Out, plan_options: PlanOptions, singles: Singles = False, overwrite: Overwrite = False,
         resume: Resume = False, quiet: Quiet = False):
    """Plan scene records (no rendering): objects, sizes, slots, orders, captions."""
    from comco import plan_dataset

    stats = plan_dataset(out, singles=singles, overwrite=overwrite, resume=resume, quiet=quiet,
                         **api_options(plan_options))
    say(quiet, f"planned {stats['images']} {'images' if stats['pairs'] else 'scenes'} in {stats['seconds']:.1f} s "
                f"({stats['replanned']} re-planned to fit) -> {out}")


def _render_jobs(cfg, opts, out: Path, executor: str, shards: int, quiet: bool, slurm: list[str],
                 slurm_config: Optional[Path]) -> None:
    """`comco render --executor slurm|slurm-local --shards K` (comco.lab's render jobs)."""
    from comco.lab import require_submitit, slurm_settings, submit_render

    if executor not in ("slurm", "slurm-local"):
        raise UserError(f"--executor {executor}: use local, slurm or slurm-local (--shards needs a slurm executor)")
    if shards < 1:  # too many (more than images, past MaxArraySize) is refused in comco.lab's render jobs
        raise UserError(f"--shards {shards}: give at least 1")
    table, origin = slurm_settings(slurm, slurm_config)
    require_submitit(cluster=executor == "slurm")
    r = submit_render(cfg, opts, out, shards, "slurm" if executor == "slurm" else "local",
                      say=lambda m: say(quiet, m), table=table, origin=origin)
    if r["merge_job"]:
        say(quiet, f"merge job {r['merge_job']} waits for the shards; follow with `sacct -j "
                   f"{r['shard_jobs'][0].split('_')[0]},{r['merge_job']}` -> {out}")
    else:
        say(quiet, f"merged {shards} shards: {r['images']} images, {r['singles']} singles -> {out}")


@app.command()
@with_plan_options
def render(
    out: Out, plan_options: PlanOptions, singles: Singles = False,
    preset: Annotated[str, typer.Option(help="draft (Workbench, fast), cycles (default) or high; eevee needs a GPU.")] = "cycles",
    samples: Annotated[Optional[int], typer.Option(help="Cycles samples (preset default if unset).")] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda or optix (Cycles on NVIDIA GPUs).")] = "cpu",
    workers: Annotated[int, typer.Option(help="Render processes (one bpy each).")] = 1,
    max_per_worker: Annotated[int, typer.Option("--max-per-worker", help="Restart a worker after this many images.")] = 300,
    masks: Annotated[bool, typer.Option("--masks", help="Write an index mask PNG per image (0 = background, i+1 = objects[i]).")] = False,
    coco: Annotated[bool, typer.Option("--coco", help="Write COCO annotations (boxes, RLE masks, categories) to annotations.json; implies masks.")] = False,
    min_pixels: Annotated[int, typer.Option("--min-pixels", help="Least visible pixels per object.")] = 10,
    min_visible: Annotated[float, typer.Option("--min-visible", help="Least visible fraction per object.")] = 0.9,
    max_retries: Annotated[int, typer.Option("--max-retries", help="Re-plans of a scene whose render fails a check.")] = 5,
    shard: Annotated[str, typer.Option(help="Render slice i/N (or auto under SLURM arrays).")] = "0/1",
    threads: Annotated[int, typer.Option(help="Blender threads per worker (0 = all cores).")] = 0,
    image_timeout: Annotated[Optional[float], typer.Option("--image-timeout", help="Seconds a worker may take for one image before it counts as hung, is replaced and the image retried (default: from preset and resolution, at least 120; 0 = no limit).")] = None,
    executor: Annotated[str, typer.Option(help="local (here, the default), slurm (a SLURM job array of --shards and a merge job that waits for it, through submitit) or slurm-local (submitit's local jobs).")] = "local",
    shards: Annotated[int, typer.Option(help="With --executor slurm|slurm-local: shards of the render, one job each.")] = 1,
    slurm: Annotated[Optional[list[str]], typer.Option("--slurm", help="With --executor slurm: one key of the shard jobs' request, KEY=VALUE, as a lab recipe's [run.slurm] has it (partition, account, qos, constraint, gpus, cpus, memory in GB, time in minutes); repeat it. Checked against sinfo before anything is submitted.")] = None,
    slurm_config: Annotated[Optional[Path], typer.Option("--slurm-config", help="With --executor slurm: a TOML file whose [slurm] table (or a lab recipe's [run.slurm]) gives the request; --slurm keys replace its keys.")] = None,
    overwrite: Overwrite = False, resume: Resume = False, quiet: Quiet = False,
):
    """Plan, then render every scene with Blender and measure what is visible."""
    from comco import render_dataset, render_setup

    given = dict(preset=preset, device=device, samples=samples, workers=workers, max_per_worker=max_per_worker,
                 masks=masks, coco=coco, singles=singles, min_pixels=min_pixels, min_visible=min_visible,
                 max_retries=max_retries, shard=shard, threads=threads, image_timeout=image_timeout,
                 **api_options(plan_options))
    if executor != "local" or shards != 1:
        cfg, opts = render_setup(out, **given)
        _render_jobs(cfg, opts, out, executor, shards, quiet, slurm or [], slurm_config)
        return
    if slurm or slurm_config is not None:
        raise UserError("--slurm and --slurm-config ask SLURM for the shard jobs: add --executor slurm")
    s = render_dataset(out, overwrite=overwrite, resume=resume, quiet=quiet, **given)
    per = s["seconds"] / max(1, s["rendered"])
    crashes = f", {s['crashes']} worker crashes recovered" if s["crashes"] else ""
    crashes += f", {s['hung']} hung workers replaced" if s["hung"] else ""
    checked = f" ({s['retried_after_checks']} after failing a render check)" if s["retried_after_checks"] else ""
    say(quiet, f"rendered {s['images']} images ({s['singles']} singles), {len(s['failures'])} failed, "
                f"{s['retried']} re-planned{checked}{crashes}, {per:.2f} s per image -> {out}")
    if s["failures"]:
        again = f" ({s['transient']} lost to crashed workers: --resume tries them again)" if s["transient"] else ""
        typer.echo(f"{len(s['failures'])} scenes failed their checks; reasons in {out / 'failures.jsonl'}{again}",
                   err=True)
        raise typer.Exit(1)


@app.command()
def validate(dataset: Annotated[Path, typer.Argument(help="A dataset folder.")], quiet: Quiet = False):
    """Check a dataset folder record by record; exit 1 and list the problems if any."""
    from comco.data import validate_dataset

    problems = validate_dataset(dataset)
    if problems:
        for p in problems[:50]:
            typer.echo(p, err=True)
        more = " (first 50 shown)" if len(problems) > 50 else ""
        typer.echo(f"{dataset}: {len(problems)} problems{more}", err=True)
        raise typer.Exit(1)
    say(quiet, f"{dataset}: valid")


@objects_app.command("list")
def objects_list(object_set: Annotated[str, typer.Argument(help="Set name or folder.")] = "comco"):
    """One object per line: name, size class, real size, source."""
    from comco.manifest import load_object_set

    s = load_object_set(object_set)
    for o in s.objects:
        w, d, h = o.dimensions_m
        typer.echo(f"{o.name:<14} {o.size_class:<7} {w:g} x {d:g} x {h:g} m  {o.source}")


def _bpy_module(module: str, *args: str) -> str:
    """Run a comco.scenes module in its own Python (bpy stays out of this process)."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("bpy") is None:
        raise UserError("bpy is not installed: pip install 'bpy==5.0.*' (Python 3.11) to render objects")
    # Blender echoes what it cannot parse (a random-bytes .obj) raw: decode it without failing
    r = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, errors="replace")
    tail = r.stderr.strip().splitlines()
    if r.returncode == UserError.exit_code and tail and tail[-1].startswith("comco: error: "):
        raise UserError(tail[-1].removeprefix("comco: error: "))  # the module's one line, passed on
    if r.returncode != 0:
        raise RuntimeError(f"{module} failed:\n" + "\n".join(tail[-15:]))
    return r.stdout


@objects_app.command("preview")
def objects_preview(
    object_set: Annotated[str, typer.Argument(help="Set name or folder.")], out: Out,
    preset: Annotated[str, typer.Option(help="draft or cycles.")] = "draft",
    tile: Annotated[int, typer.Option("--tile", help="Cell size in pixels.")] = 192,
):
    """A labelled contact sheet of every object, from the renderer's camera and light (OUT/objects.png)."""
    from comco.cli.options import opened, png_in
    from comco.manifest import load_object_set

    load_object_set(object_set)  # manifest errors end here, with one line
    png = png_in(out, "objects.png")
    png.parent.mkdir(parents=True, exist_ok=True)
    _bpy_module("comco.scenes.preview", object_set, str(png), preset, str(tile))
    opened(png)


@objects_app.command("show")
def objects_show(
    object_set: Annotated[str, typer.Argument(help="Set name or folder.")],
    name: Annotated[str, typer.Argument(help="Object name.")], out: Out,
    preset: Annotated[str, typer.Option(help="draft (default, as preview) or cycles.")] = "draft",
    resolution: Annotated[int, typer.Option("--resolution", help="Image size in pixels.")] = 384,
):
    """Render one object alone to a PNG (OUT/NAME.png)."""
    from comco.cli.options import opened, png_in
    from comco.manifest import load_object_set

    load_object_set(object_set).get(name)
    png = png_in(out, f"{name}.png")
    png.parent.mkdir(parents=True, exist_ok=True)
    _bpy_module("comco.scenes.preview", object_set, str(png), preset, str(resolution), name)
    opened(png)


@objects_app.command("validate")
def objects_validate(object_set: Annotated[str, typer.Argument(help="Set name or folder.")]):
    """Manifest schema, files present and loadable, sane dimensions, names unique."""
    import json

    from comco.manifest import load_object_set

    oset = load_object_set(object_set)
    rows = json.loads(_bpy_module("comco.scenes.check", str(oset.root)).strip().splitlines()[-1])
    bad = [r["problem"] for r in rows if r["problem"]]
    for r in rows:
        typer.echo(f"{r['name']:<14} {r['faces']:>6} faces  {r['seconds'] * 1000:7.1f} ms  "
                   f"{' x '.join(f'{d:g}' for d in r['dimensions'])} m")
    if len(bad) == 1:
        raise UserError(bad[0])
    if bad:  # one line that names every problem
        raise UserError(f"{len(bad)} of {len(rows)} objects have problems: " + "; ".join(bad))
    typer.echo(f"{oset.name}: {len(rows)} objects valid")


@objects_app.command("calibrate")
def objects_calibrate(
    object_set: Annotated[str, typer.Argument(help="Set name or folder.")],
    write: Annotated[bool, typer.Option("--write", help="Write each fill into the set's objects.toml.")] = False,
    resolution: Annotated[int, typer.Option(help="ID-render size in pixels.")] = 160,
    turns: Annotated[int, typer.Option(help="Turns measured across each object's yaw range.")] = 5,
):
    """Measure how much of its box's outline each object covers (the planner's `fill`)."""
    import json

    from comco.manifest import MANIFEST_NAME, clamp_fill, load_object_set, write_fills

    oset = load_object_set(object_set)
    if not 32 <= resolution <= 1024 or turns < 1:
        raise UserError("--resolution takes 32..1024 pixels and --turns at least 1")
    rows = json.loads(_bpy_module("comco.scenes.calibrate", str(oset.root), str(resolution), str(turns))
                      .strip().splitlines()[-1])
    for r in rows:
        old = oset.get(r["name"]).fill
        kept = clamp_fill(r["fill"])
        clamped = "" if kept == r["fill"] else f" (measured {r['fill']:.3f}, clamped)"
        typer.echo(f"{r['name']:<14} fill {kept:.3f}  (turns {r['lowest']:.3f}..{r['highest']:.3f}){clamped}"
                   f"{'' if old is None else f'  manifest {old:.3f}'}")
    if write:
        write_fills(oset.root / MANIFEST_NAME, {r["name"]: r["fill"] for r in rows})
        typer.echo(f"fills written to {oset.root / MANIFEST_NAME}")


@dataset_app.command("merge")
def dataset_merge(shards: Annotated[list[Path], typer.Argument(help="Shard folders rendered with --shard i/N.")],
                  out: Out, quiet: Quiet = False):
    """Join rendered shards into one dataset (they must share the configuration)."""
    from comco.data import merge_shards
    from comco.io import require_folder

    require_folder(out, "--out")
    s = merge_shards(shards, out)
    say(quiet, f"merged {len(shards)} shards: {s['images']} images, {s['singles']} singles -> {out}")


@dataset_app.command("sheet")
def dataset_sheet(
    dataset: Annotated[Path, typer.Argument(help="A rendered dataset folder.")], out: Out,
    limit: Annotated[int, typer.Option(help="Scenes to show, the dataset's first.")] = 16,
    columns: Annotated[int, typer.Option(help="Scenes per row.")] = 4,
    tile: Annotated[int, typer.Option(help="Cell width in pixels (small renders are scaled up).")] = 192,
    template: Annotated[Optional[str], typer.Option(help="Caption template shown under each image (default: and).")] = None,
    resample: Annotated[str, typer.Option(help="nearest (the rendered pixels) or bicubic.")] = "nearest",
    quiet: Quiet = False,
):
    """A contact sheet of a dataset (OUT/sheet.png): its first scenes, each with its id, size in
    pixels, a caption and every object's share of the image."""
    from comco.cli.options import opened, png_in
    from comco.data import dataset_sheet as draw

    png = png_in(out, "sheet.png")
    s = draw(dataset, png, limit=limit, columns=columns, tile=tile, template=template, resample=resample)
    say(quiet, f"{s['scenes']} scenes in {s['rows']} x {s['columns']} ({s['size'][0]} x {s['size'][1]} px)")
    opened(png, quiet)


@dataset_app.command("pairs-sheet")
def dataset_pairs_sheet(
    dataset: Annotated[Path, typer.Argument(help="A dataset rendered with --pairs.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder for pairs-sheet.png (an existing sheet there is replaced only when this command wrote it).")],
    limit: Annotated[int, typer.Option(help="Pair groups (rows) to show, the dataset's first.")] = 8,
    factors: Annotated[Optional[str], typer.Option(help="Factors to show, comma-separated (default: all).")] = None,
    tile: Annotated[int, typer.Option(help="Cell width in pixels (small renders are scaled up).")] = 192,
    resample: Annotated[str, typer.Option(help="nearest (the rendered pixels) or bicubic.")] = "nearest",
    quiet: Quiet = False,
):
    """A contact sheet of counterfactual pairs: per row a base image and its variants, each labelled
    with its factor and the captions the pair probe compares."""
    from comco.cli.options import opened, png_in
    from comco.data import pair_sheet

    png = png_in(out, "pairs-sheet.png")
    s = pair_sheet(dataset, png, limit=limit, factors=factors, tile=tile, resample=resample)
    say(quiet, f"{s['rows']} pair groups x {s['columns']} images ({s['size'][0]} x {s['size'][1]} px)")
    opened(png, quiet)


def _interrupted(exc: BaseException) -> bool:
    """Typer turns Ctrl-C inside a command into exit 130 with the KeyboardInterrupt as the cause."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _usage_line(exc) -> str:
    """click's usage errors (unknown option, a bad int) as one line, like every other error."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
    return f"comco: error: {message}{hint}"


def _click_exceptions():
    """The exceptions module of the click that typer runs on (typer >= 0.2x vendors its own copy)."""
    try:
        from typer._click import exceptions
    except ImportError:
        from click import exceptions
    return exceptions


# errno of a disk that refuses a write: full, over quota, read-only, not ours
DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def main() -> None:
    click = _click_exceptions()
    try:
        # standalone_mode=False: click hands usage errors to us instead of drawing its boxed panel
        code = app(prog_name="comco", standalone_mode=False)
    except UserError as exc:
        typer.echo(f"comco: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except OSError as exc:  # a full disk, a read-only or foreign folder: the user's to fix, not a traceback
        if exc.errno not in DISK_ERRNOS:
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        typer.echo(f"comco: error: cannot write{where}: {exc.strerror}; free space or choose a folder you can "
                   f"write (--out), then run the command again (completed files are kept)", err=True)
        sys.exit(2)
    except getattr(click, "NoArgsIsHelpError", ()):  # click >= 8.2
        sys.exit(2)  # a bare group: typer has printed its help already
    except click.ClickException as exc:
        typer.echo(_usage_line(exc), err=True)
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except (KeyboardInterrupt, SystemExit, typer.Abort) as exc:
        # click turns Ctrl-C into Abort (and typer, in a command, into exit 130): the cause says which
        if isinstance(exc, typer.Abort) and isinstance(exc.__cause__, EOFError):
            raise exc.__cause__ from None  # typer turns any EOFError into Abort: an internal error, keep its traceback
        if not _interrupted(exc):
            if isinstance(exc, typer.Abort):
                typer.echo("comco: aborted", err=True)
                sys.exit(1)
            raise
        code = 130
    if code == 130:  # typer answers Ctrl-C inside a command with Exit(130), which non-standalone mode returns
        typer.echo("comco: interrupted; completed work is kept (use --resume)", err=True)
    sys.exit(code if isinstance(code, int) else 0)
