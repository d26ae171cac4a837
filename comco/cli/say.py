"""What the verbs tell the user besides their files (nothing under --quiet)."""

from __future__ import annotations

import typer


def say(quiet: bool, text: str) -> None:
    """One line on stdout unless --quiet."""
    if not quiet:
        typer.echo(text)


def note_random_weights(refs, quiet: bool) -> None:
    """Once per model, in comco's words (open_clip's own root-logger warning is silenced):
    random weights measure the architecture's prior, not a trained model."""
    for ref in refs:
        if ref.random and not quiet:
            typer.echo(f"comco: {ref.label} has random weights (seeded); its numbers are the architecture's "
                       "prior, not a trained model's", err=True)
