"""Where an export is written before it becomes `--out`: a hidden work folder beside it.

`.NAME.export-XXXX/` holds `lock` (an advisory lock its export holds while it runs), `new/`
(the export being written) and, for the moment `new/` takes `--out`'s place, `old/` (the
folder it replaces). An export killed with SIGKILL cannot remove its work folder; the next
export into the same `--out` finds the lock free and sweeps it (putting `old/` back first
when `--out` is gone, so a kill in the middle of the swap loses nothing).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

from comco.errors import UserError

LOCK, NEW, OLD = "lock", "new", "old"
UNLOCKED_GRACE_S = 600  # a work folder without its lock yet is another export starting; swept once this old
# what an OSError while writing means for the user (anything else keeps its traceback)
FULL = (errno.ENOSPC, errno.EDQUOT)
NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


def _prefix(out: Path) -> str:
    return f".{out.name}.export-"


def check_replaceable(out: Path) -> None:
    """An existing --out must be writable for the finished export to take its place."""
    if out.is_dir() and not os.access(out, os.W_OK):
        raise UserError(f"--out {out} is not writable (read-only); choose another folder")


class Staging:
    """The work folder of one export; `new` is where the writer writes.

    Args:
        out: the export's folder (--out); the work folder goes beside it.
    """

    def __init__(self, out: Path):
        self.out = out
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            self.work = Path(tempfile.mkdtemp(prefix=_prefix(out), dir=out.parent))
            self._lock = open(self.work / LOCK, "w")
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.new = self.work / NEW
            self.new.mkdir()
        except OSError as exc:
            self.close()
            raise UserError(f"--out {out}: cannot write into {out.parent} ({exc.strerror}); "
                            f"choose another folder") from None
        os.chmod(self.new, 0o755)  # exports are shared like datasets

    def publish(self) -> None:
        """`new` becomes --out; an older --out (checked by the caller) goes once the new one is there."""
        old = None
        if self.out.exists():
            old = self.work / OLD
            os.replace(self.out, old)
        try:
            os.replace(self.new, self.out)
        except OSError:
            if old is not None:
                os.replace(old, self.out)  # the old export back: --out is as it was
            raise

    def close(self) -> None:
        """Remove the work folder (whatever an unfinished export left in it)."""
        work = getattr(self, "work", None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
        lock = getattr(self, "_lock", None)
        if lock is not None:
            lock.close()


def sweep(out: Path) -> None:
    """Remove the work folders of exports into `out` whose process has died (their lock is free).
    Called before --out is looked at: a kill between the two renames of `publish` left --out gone
    and its old content in `old/`, which goes back first."""
    if not out.parent.is_dir():
        return
    for work in out.parent.glob(_prefix(out) + "*"):
        if work.is_symlink() or not work.is_dir():
            continue
        try:
            with open(work / LOCK, "r+") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a running export
                if (work / OLD).is_dir() and not out.exists():
                    os.replace(work / OLD, out)  # killed between the two renames: the old export back
                shutil.rmtree(work, ignore_errors=True)
        except FileNotFoundError:  # no lock yet (another export starting), or gone meanwhile
            try:
                stale = time.time() - work.stat().st_mtime > UNLOCKED_GRACE_S
            except OSError:
                continue
            if stale:
                shutil.rmtree(work, ignore_errors=True)
        except OSError:
            continue  # locked by a running export, or not ours to remove


def write_error(exc: OSError, out: Path) -> UserError | None:
    """The one line for a write that failed on the disk (full, read-only), or None (an internal error)."""
    if exc.errno in FULL:
        return UserError(f"--out {out}: the disk is full ({exc.strerror}); nothing was changed in {out}: "
                         f"free space there or choose another folder")
    if exc.errno in NOT_WRITABLE:
        return UserError(f"--out {out}: cannot write the export ({exc.strerror}); nothing was changed in {out}: "
                         f"choose a writable folder")
    return None
