"""The `comco` command. One verb per job; heavy libraries load only inside a verb.

Errors a user can cause end with exit code 2 and one line on stderr; internal
errors keep their traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from comco.errors import UserError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Find, explain and remove the order and size biases of CLIP-style models.")
objects_app = typer.Typer(no_args_is_help=True, help="Inspect, preview and validate object sets.")
dataset_app = typer.Typer(no_args_is_help=True, help="Work with dataset folders.")
app.add_typer(objects_app, name="objects")
app.add_typer(dataset_app, name="dataset")

# Options shared by `plan` and `render` (typer has no parameter groups).
Objects = Annotated[str, typer.Option("--objects", help="Objects per image: a count (3), a range (2-5) or a list (2,4).")]
N = Annotated[int, typer.Option("--n", help="Number of images.")]
ObjectSet = Annotated[str, typer.Option("--object-set", help="Built-in set (comco, simco) or a folder with objects.toml.")]
Layout = Annotated[str, typer.Option(help="one-large (ComCO), equal, graded or realistic.")]
LargeSlot = Annotated[str, typer.Option("--large-slot", help="Slot of the largest object: M, UL, UR, BL, BR, a list (M,UL,BR) or random.")]
Seed = Annotated[int, typer.Option(help="Dataset seed; each image derives its own from it.")]
Resolution = Annotated[str, typer.Option(help="Image size in pixels: 512 or 640x480.")]
Colors = Annotated[bool, typer.Option("--colors/--no-colors", help="Give objects palette colours (and write attribute captions).")]
Orders = Annotated[int, typer.Option(help="Mention orders per image for 4+ objects (all permutations for 3 or fewer).")]
OrderPolicy = Annotated[str, typer.Option("--order-policy", help="random, size-desc, size-asc or left-to-right.")]
OrderBias = Annotated[float, typer.Option("--order-bias", help="Probability that the largest object is mentioned first (lab variable).")]
LargeFraction = Annotated[float, typer.Option("--large-fraction", help="Image share of the large object (one-large).")]
SmallFraction = Annotated[str, typer.Option("--small-fraction", help="Image share range of small objects, e.g. 0.005-0.01.")]
Captions = Annotated[str, typer.Option(help="Caption templates to write, comma-separated (default: all that apply).")]
Templates = Annotated[Optional[Path], typer.Option(help="A TOML file of extra caption templates.")]
Singles = Annotated[bool, typer.Option("--singles", help="Also plan/render one reference image per object (for IOR).")]
Overwrite = Annotated[bool, typer.Option("--overwrite", help="Replace a dataset made with another configuration.")]
Resume = Annotated[bool, typer.Option("--resume", help="Continue a dataset with the same configuration.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
Out = Annotated[Path, typer.Option("--out", help="Output folder.")]


def _resolution(text: str) -> tuple[int, int]:
    try:
        if "x" in text.lower():
            w, h = (int(t) for t in text.lower().split("x", 1))
        else:
            w = h = int(text)
    except ValueError:
        raise UserError(f"--resolution {text!r}: give pixels, 512 or 640x480") from None
    if not (0 < w <= 8192 and 0 < h <= 8192):
        raise UserError(f"--resolution {text}: use 1..8192 pixels")
    return w, h


def _fraction_range(text: str) -> tuple[float, float]:
    try:
        lo, _, hi = text.partition("-")
        return float(lo), float(hi or lo)
    except ValueError:
        raise UserError(f"--small-fraction {text!r}: give a share or a range, e.g. 0.005-0.01") from None


def plan_config(objects, n, object_set, layout, large_slot, seed, resolution, colors, orders, order_policy,
                order_bias, large_fraction, small_fraction, captions, templates):
    from comco.planner import PlanConfig, parse_counts, parse_slots

    return PlanConfig(
        object_set=object_set, objects=parse_counts(objects), n=n, seed=seed, layout=layout,
        large_slot=parse_slots(large_slot), resolution=_resolution(resolution), colors=colors, orders=orders,
        order_policy=order_policy, order_bias=order_bias, large_fraction=large_fraction,
        small_fraction=_fraction_range(small_fraction),
        captions=tuple(c.strip() for c in captions.split(",") if c.strip()),
        templates=str(templates) if templates else None,
    )


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        typer.echo(text)


@app.command()
def plan(
    out: Out, objects: Objects = "2-5", n: N = 100, object_set: ObjectSet = "comco", layout: Layout = "one-large",
    large_slot: LargeSlot = "random", seed: Seed = 0, resolution: Resolution = "512", colors: Colors = False,
    orders: Orders = 4, order_policy: OrderPolicy = "random", order_bias: OrderBias = 0.0,
    large_fraction: LargeFraction = 0.07, small_fraction: SmallFraction = "0.005-0.01", captions: Captions = "",
    templates: Templates = None, singles: Singles = False, overwrite: Overwrite = False, resume: Resume = False,
    quiet: Quiet = False,
):
    """Plan scene records (no rendering): objects, sizes, slots, orders, captions."""
    from comco.plan_run import run_plan

    cfg = plan_config(objects, n, object_set, layout, large_slot, seed, resolution, colors, orders, order_policy,
                      order_bias, large_fraction, small_fraction, captions, templates)
    stats = run_plan(cfg, out, overwrite=overwrite, resume=resume, quiet=quiet, singles=singles)
    _say(quiet, f"planned {stats['images']} scenes in {stats['seconds']:.1f} s "
                f"({stats['replanned']} re-planned to fit) -> {out}")


@app.command()
def validate(dataset: Annotated[Path, typer.Argument(help="A dataset folder.")], quiet: Quiet = False):
    """Check a dataset folder record by record; exit 1 and list the problems if any."""
    from comco.validate import validate_dataset

    problems = validate_dataset(dataset)
    if problems:
        for p in problems[:50]:
            typer.echo(p, err=True)
        more = f" (first 50 shown)" if len(problems) > 50 else ""
        typer.echo(f"{dataset}: {len(problems)} problems{more}", err=True)
        raise typer.Exit(1)
    _say(quiet, f"{dataset}: valid")


@objects_app.command("list")
def objects_list(object_set: Annotated[str, typer.Argument(help="Set name or folder.")] = "comco"):
    """One object per line: name, size class, real size, source."""
    from comco.manifest import load_object_set

    s = load_object_set(object_set)
    for o in s.objects:
        w, d, h = o.dimensions_m
        typer.echo(f"{o.name:<14} {o.size_class:<7} {w:g} x {d:g} x {h:g} m  {o.source}")


def main() -> None:
    try:
        app()
    except UserError as exc:
        typer.echo(f"comco: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("comco: interrupted; completed work is kept (use --resume)", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
