"""The render journal: finished records are appended as they arrive, so a killed run
resumes where it stopped; a cut last line is ended or dropped before appending."""

from __future__ import annotations

import json
import os
from pathlib import Path

from comco.data.validate import image_problem, output_problems
from comco.io import dumps

JOURNAL = "journal.jsonl"


CRASHED_TWICE = "the render worker crashed twice"


def read_journal(out: Path) -> dict[str, dict]:
    """Entries by key, the last of a key winning; a line cut by a crash is ignored (its image
    is re-rendered), and so is an 'ok' entry whose image is gone."""
    path = out / JOURNAL
    done: dict[str, dict] = {}
    if not path.is_file():
        return done
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            rec = entry.get("record")
            if entry.get("status") == "ok" and not (out / rec["image"]).is_file():
                continue
            done[entry["key"]] = entry
    return done


def end_journal(path: Path) -> None:
    """Before appending: a last line cut by a kill or a full disk is ended when it holds a
    whole entry and cut off when not, so the next entry starts a line of its own (appended
    to a cut line, both would be lost)."""
    if not path.is_file():
        return
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        start, pos = 0, size
        while pos > 0:  # back to the last newline; entries can be long (many mention orders)
            step = min(1 << 16, pos)
            pos -= step
            f.seek(pos)
            i = f.read(step).rfind(b"\n")
            if i >= 0:
                start = pos + i + 1
                break
        f.seek(start)
        try:
            whole = isinstance(json.loads(f.read()), dict)
        except ValueError:
            whole = False
        if whole:
            f.seek(size)
            f.write(b"\n")
        else:
            f.truncate(start)
        f.flush()
        os.fsync(f.fileno())


def settled(out: Path, entry: dict, masks: bool) -> bool:
    """Whether --resume may skip this entry: an image (and mask) that decodes, or a final failure.
    A worker that crashed or hung is no verdict on the scene: it is tried again."""
    if entry["status"] == "failed":
        return not (entry.get("transient") or entry.get("reason") == CRASHED_TWICE)
    rec = entry["record"]
    if image_problem(out / rec["image"], rec.get("resolution")) or output_problems(out, rec):
        return False
    return not masks or image_problem(out / "masks" / Path(rec["image"]).name) is None


def append(handle, entries: list[dict]) -> None:
    """A settled group's entries, appended in one write and flushed (a kill may cut the last
    line: end_journal mends it, and a group not whole in the journal is rendered again)."""
    handle.write("".join(dumps(e) + "\n" for e in entries))
    handle.flush()
