"""Weights saved along a training (option `checkpoints` = N): the untrained model at step 0
and N more spread evenly up to the last step, so that when each bias appears can be probed
(ComCO Fig. 4c reads TOR over LAION checkpoints; here every step of a run is known).

Weights only (no optimiser state): each file is a `ckpt:` model like model.pt, about a
third of a resumable checkpoint.
"""

from __future__ import annotations

import re
from pathlib import Path

SNAPSHOTS = "snapshots"
_NAME = re.compile(r"step-(\d+)\.pt$")


def snapshot_steps(total: int, count: int) -> list[int]:
    """Step 0 and `count` steps spread evenly over 1..total (the last is `total`); [] for count 0.

    Args:
        total: the run's steps. count: how many trained snapshots (the option `checkpoints`).
    """
    if count <= 0:
        return []
    return sorted({0} | {max(1, round(total * k / count)) for k in range(1, count + 1)})


def snapshot_path(out: str | Path, step: int) -> Path:
    return Path(out) / SNAPSHOTS / f"step-{step:06d}.pt"


def list_snapshots(out: str | Path) -> list[tuple[int, Path]]:
    """(step, path) of every snapshot a run folder holds, in step order."""
    folder = Path(out) / SNAPSHOTS
    found = [(int(m.group(1)), p) for p in folder.glob("step-*.pt") if (m := _NAME.search(p.name))]
    return sorted(found)
