"""Images in an export: hard links to the dataset's files where the file system allows (no copy,
no extra space), else copies."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def place(src: Path, dst: Path, linking: list[bool]) -> None:
    """Hard-link src to dst (copy once links fail: another file system, no permission).

    Args:
        linking: one flag shared by an export's calls: links are tried until one fails."""
    if linking[0]:
        try:
            os.link(src, dst)
            return
        except OSError:
            linking[0] = False
    shutil.copyfile(src, dst)
