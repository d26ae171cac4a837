"""`comco model export`: a model comco trained, written as a transformers CLIPModel folder or
an open_clip folder (comco.models.export). Only typer loads at module level."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from comco.cli.options import Quiet

app = typer.Typer(help="Work with trained models: export them to transformers and open_clip.", no_args_is_help=True)


@app.command()
def export(
    model: Annotated[str, typer.Argument(help="A checkpoint comco trained, as ckpt:PATH.")],
    to: Annotated[str, typer.Option("--to", help="The library to load it: hf (a transformers CLIPModel folder) or open_clip (open_clip's local-dir: folder).")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write (new or empty); it appears whole or not at all.")],
    quiet: Quiet = False,
) -> None:
    """Write a comco checkpoint in a format transformers or open_clip loads unmodified."""
    from comco import export_model
    from comco.cli.options import opened
    from comco.cli.say import say

    summary = export_model(model, to, out)
    folded = " (the LABCLIP map folded into the text projection)" if summary["folded_text_map"] else ""
    load = (f'CLIPModel.from_pretrained("{out}"), CLIPProcessor.from_pretrained("{out}", backend="pil")'
            if to == "hf" else f'open_clip.create_model_and_transforms("local-dir:{out}")')
    say(quiet, f"wrote a {summary['kind']} model for {to}{folded}: load it with {load}")
    opened(out, quiet)
