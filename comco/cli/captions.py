"""`comco captions stats`: where a real caption corpus mentions its largest object.

    comco captions stats --captions annotations/captions_val2017.json \\
        --instances annotations/instances_val2017.json [--lab runs/small] --out runs/coco-captions

comco/cli/app.py registers it as `comco captions`. Only typer loads at module level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from comco.cli.options import Quiet

app = typer.Typer(help="Statistics of real caption corpora (ComCO's caption bias).", no_args_is_help=True)


@app.command()
def stats(
    captions: Annotated[Path, typer.Option("--captions", help="COCO-format captions JSON (captions_<split>.json).")],
    instances: Annotated[Path, typer.Option("--instances", help="COCO-format instances JSON of the same images (masks' areas give the sizes).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for results.json, positions.csv, caption-bias.md/.html/.png.")],
    synonyms: Annotated[Optional[Path], typer.Option("--synonyms", help="Your own synonym table (a TOML file shaped like comco's coco_synonyms.toml).")] = None,
    lab: Annotated[Optional[Path], typer.Option("--lab", help="A finished lab run's --out: predict its TOR first share at the corpus's p.")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", min=0, max=100_000, help="Bootstrap resamples of images for the intervals.")] = 1000,
    quiet: Quiet = False,
) -> None:
    """The share of captions whose largest mentioned object comes 1st, 2nd, ... per number of mentioned objects, and the corpus's p."""
    from comco.data import check_writable
    from comco.errors import UserError
    from comco.io import require_folder
    from comco.lab import dose_lines, predict_first_share
    from comco.probes.natural import caption_bias, load_corpus, write_caption_bias

    require_folder(out, "--out")
    check_writable(out)  # a read-only --out is refused before the corpus is read
    lines = dose_lines(lab) if lab is not None else None  # a bad run folder is refused before any work
    corpus, left = load_corpus(captions, instances, synonyms)
    result = caption_bias(corpus, n_boot=bootstrap)
    if not result["counts"]["kept"]:
        raise UserError(f"none of the {len(corpus)} captions of annotated images mentions 2-5 annotated objects "
                        f"with one largest: nothing to measure (check the synonym table, --synonyms)")
    result["counts"].update(left)
    prediction = predict_first_share(lines, result["p"]) if lines else None
    payload = write_caption_bias(result, out, prediction=prediction, sources={
        "captions": str(captions), "instances": str(instances), "synonyms": str(synonyms or "built-in (COCO)")})
    if not quiet:
        p = payload["p"]
        typer.echo(f"{result['counts']['kept']} of {result['counts']['captions']} captions kept; "
                   f"corpus p = {p['mean']:.3f} [{p['lo']:.3f}, {p['hi']:.3f}]; wrote {out / 'caption-bias.md'}")
        for x in prediction or []:
            typer.echo(f"lab {x['object_set']}, {x['n']}-object captions: predicted TOR first share "
                       f"{100 * x['mean']:.1f} % [{100 * x['lo']:.1f}, {100 * x['hi']:.1f}] {x['note']}".rstrip())
