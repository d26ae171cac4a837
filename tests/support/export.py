"""Shared test builders (export): imported by the test files, never collected."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from comco.data.folder import SCENES
from comco.io import read_jsonl


def comco(capsys, *args) -> tuple[int, str, str]:
    """Run the real `comco` entry point in this process: (exit code, stdout, stderr)."""
    from comco.cli.app import main

    argv, sys.argv = sys.argv, ["comco", *map(str, args)]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = argv
    out = capsys.readouterr()
    return code, out.out, out.err


def link_images(root: Path, png: Path) -> None:
    """Every record's image as a hard link to one small PNG: a large 'rendered' dataset in no time."""
    (root / "images").mkdir(parents=True, exist_ok=True)
    for record in read_jsonl(root / SCENES):
        target = root / record["image"]
        if not target.exists():
            os.link(png, target)
