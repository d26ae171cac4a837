"""Weights saved along a training (option `checkpoints` = N): the untrained model at step 0
and N more up to the last step, so that when each bias appears can be probed (ComCO Fig. 4c
reads TOR over LAION checkpoints; here every step of a run is known). Option
`checkpoint_spacing`: "even" (the default) spreads them evenly; "log" spaces them
geometrically from a hundredth of the run to its end, so most fall early, where the small
lab's biases make their rise (half of it by step 125 of 1000).

Weights only (no optimiser state): each file is a `ckpt:` model like model.pt, about a
third of a resumable checkpoint.
"""

from __future__ import annotations

import re
from pathlib import Path

SNAPSHOTS = "snapshots"
_NAME = re.compile(r"step-(\d+)\.pt$")


SPACINGS = ("even", "log")
LOG_START = 0.01  # "log": the first trained snapshot at this fraction of the run


def snapshot_steps(total: int, count: int, spacing: str = "even") -> list[int]:
    """Step 0 and `count` steps over 1..total (the last is `total`); [] for count 0. Steps
    that round to the same one are saved once.

    Args:
        total: the run's steps. count: how many trained snapshots (the option `checkpoints`).
        spacing: "even" (total * k / count) or "log" (total * LOG_START ** ((count - k) / (count - 1))).
    """
    if count <= 0:
        return []
    if spacing not in SPACINGS:
        raise ValueError(f"checkpoint spacing {spacing!r}: use one of {', '.join(SPACINGS)}")
    if spacing == "log" and count > 1:
        fractions = [LOG_START ** ((count - k) / (count - 1)) for k in range(1, count + 1)]
    else:
        fractions = [k / count for k in range(1, count + 1)]
    return sorted({0} | {max(1, round(total * f)) for f in fractions})


def snapshot_path(out: str | Path, step: int) -> Path:
    return Path(out) / SNAPSHOTS / f"step-{step:06d}.pt"


def list_snapshots(out: str | Path) -> list[tuple[int, Path]]:
    """(step, path) of every snapshot a run folder holds, in step order."""
    folder = Path(out) / SNAPSHOTS
    found = [(int(m.group(1)), p) for p in folder.glob("step-*.pt") if (m := _NAME.search(p.name))]
    return sorted(found)
