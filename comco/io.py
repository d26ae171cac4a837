"""The one home of file plumbing: atomic writes, JSON and JSON Lines, file digests.

Every file comco writes goes through `atomic_write` or `atomic_path`: the content goes
to a temporary file beside the target and is renamed over it once complete, so a
reader (or a resumed run) never sees half a file. Temporary names start with a dot and
end in `.tmp` or `.tmp.<suffix>`, so no loader's pattern (`*.npz`, `*.png`) picks one up.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from comco.errors import UserError


def _temp_beside(path: Path, suffix: str) -> tuple[int, str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    return tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)


def _publish(tmp: str, path: Path) -> None:
    os.chmod(tmp, 0o644)  # mkstemp makes 0600; datasets and reports are shared read-only
    os.replace(tmp, path)


@contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """An open file (text, or binary with mode "wb") that replaces `path` when the block ends.

    Args:
        path: the file to write; its folder is created.
        mode: "w" for UTF-8 text, "wb" for bytes.
    """
    path = Path(path)
    fd, tmp = _temp_beside(path, ".tmp")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        _publish(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path with `path`'s suffix, for writers that want a file name
    (torch.save, np.save, PIL, Blender); renamed over `path` when the block ends.

    Args:
        path: the file to write; its folder is created.
    """
    path = Path(path)
    fd, tmp = _temp_beside(path, ".tmp" + path.suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        _publish(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str | bytes) -> Path:
    """Write text (UTF-8) or bytes to `path` atomically; returns the path."""
    with atomic_write(path, "wb") as f:
        f.write(text.encode("utf-8") if isinstance(text, str) else text)
    return Path(path)


def write_json(path: str | Path, obj: Any, *, indent: int = 2, sort_keys: bool = True, **dump_args) -> Path:
    """Pretty JSON for people and machines (a trailing newline), written atomically.

    Args:
        path: the file to write.
        obj: anything `json.dump` takes; `dump_args` go to it (for example `default=`).
        indent, sort_keys: as in `json.dump`.
    """
    with atomic_write(path) as f:
        json.dump(obj, f, indent=indent, sort_keys=sort_keys, **dump_args)
        f.write("\n")
    return Path(path)


def dumps(record: dict) -> str:
    """One compact JSON line. orjson: 4x faster than json on scene records, which
    matters when 10^5 are planned; numpy scalars are written as numbers."""
    import orjson  # here, not at import time: the manifests and paths need only the standard library

    return orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY).decode()


def write_jsonl(path: str | Path, records: Iterable[dict]) -> int:
    """One JSON object per line, atomically; returns how many lines were written."""
    n = 0
    with atomic_write(path) as f:
        for r in records:
            f.write(dumps(r) + "\n")
            n += 1
    return n


def read_json(path: str | Path, what: str = "file") -> Any:
    """A JSON file a user or an earlier run left; a corrupt one is a UserError naming it."""
    try:
        return json.loads(read_bounded(path, what))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise UserError(f"{path}: this {what} is not valid JSON; it is corrupt "
                        f"(re-run the command that made it)") from None


# The bounded reading of files a user hands comco (annotations, prompts, tables, a run's own
# bookkeeping): a size limit checked before the read, and nesting that would exhaust Python's
# stack (json and tomllib recurse once per nested array or table) refused as one line.
MAX_INPUT_BYTES = 2 << 30  # COCO's largest annotation file (instances_train2017.json) is 448 MB
MAX_SMALL_BYTES = 16 << 20  # prompt files, synonym tables, a run's own small JSON files


def read_bounded(path: str | Path, where: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of `path`, refused (UserError naming `where`) when larger than `limit` or unreadable."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > limit:
            raise UserError(f"{where} {path} is {size / 2**20:.0f} MB, more than the {limit / 2**20:.0f} MB "
                            f"comco reads from such a file; give the right file")
        return path.read_bytes()
    except OSError as exc:
        raise UserError(f"{where} {path} cannot be read ({exc.strerror or type(exc).__name__})") from None


def parse_json(data: str | bytes, where: str) -> Any:
    """JSON text as Python objects; bad syntax, bad UTF-8 or nesting too deep for Python's stack
    is a UserError naming `where`."""
    try:
        return json.loads(data)
    except RecursionError:
        raise UserError(f"{where}: nested too deeply (arrays or objects inside each other); "
                        f"the file is damaged or not the file comco asks for") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{where}: not UTF-8 (byte {exc.start}); convert it to UTF-8") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{where}: not valid JSON (line {exc.lineno}): the file is cut or corrupt") from None


def parse_toml(text: str, where: str) -> dict:
    """TOML text as a dict; bad syntax or nesting too deep for Python's stack is a UserError naming `where`."""
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{where}: not valid TOML ({exc})") from None
    except RecursionError:
        raise UserError(f"{where}: nested too deeply (arrays or tables inside each other)") from None


def read_jsonl(path: str | Path) -> Iterator[dict]:
    """The objects of a JSON Lines file; a line that is not JSON is a UserError naming it."""
    import orjson

    with open(path, "rb") as f:  # orjson checks the UTF-8: a bad byte is a corrupt line, not a traceback
        for line_no, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield orjson.loads(line)
                except json.JSONDecodeError:
                    raise UserError(f"{path}:{line_no}: not valid JSON; the file is corrupt "
                                    f"(re-run the command that made it)") from None


def file_digest(path: str | Path, chunk: int = 1 << 22) -> str:
    """`sha256-` and the first 20 hex digits of the file's SHA-256."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return "sha256-" + h.hexdigest()[:20]


def folder_digest(path: str | Path) -> str:
    """A digest of the files directly in a folder (names and contents)."""
    h = hashlib.sha256()
    for p in sorted(Path(path).iterdir()):
        if p.is_file():
            h.update(p.name.encode())
            h.update(file_digest(p).encode())
    return "sha256-" + h.hexdigest()[:20]


def require_folder(path: Path, flag: str = "--out") -> None:
    """A folder named on the command line (an output, a cache): refused before any work when
    it is a file or lies under one (found only at the end, after all the work, otherwise)."""
    path = Path(path)
    for at in (path, *path.parents):
        if at.exists():
            if not at.is_dir():
                where = "is a file" if at == path else f"lies under the file {at}"
                raise UserError(f"{flag} {path} {where}; give a folder")
            return
