"""Issue 25's export items: an export never writes into the dataset or outside --out, never follows a
symbolic link out of the dataset, names files only by checked ids, exports only what `comco
validate` accepts, and a full disk or a read-only --out is one line with nothing half-written; a
killed export's work folder is swept by the next one. The pair sheet's --out is a PNG file it
replaces only when it wrote it, and refuses a read-only folder."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from support.export import comco
from support.pairs import planned_pair_dataset
from support.probes import make_dataset

from comco.data.folder import INFO, SCENES
from comco.errors import UserError
from comco.io import read_json, read_jsonl, write_json, write_jsonl


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = make_dataset(tmp_path_factory.mktemp("reliable-export") / "ds", n=6, resolution=32, singles=False)
    return mark_rendered(root)


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    root = planned_pair_dataset(tmp_path_factory.mktemp("reliable-export-pairs") / "ds", n=3,
                                factors=("swap-size", "remove"))
    return mark_rendered(root)


def mark_rendered(root: Path) -> Path:
    """dataset.json as `comco render` leaves it: rendered, every planned image counted as rendered
    (so `comco validate` decodes every image, as it does for a real render)."""
    info = read_json(root / INFO)
    info["rendered"] = True
    info["counts"].update(rendered=info["counts"]["images"], failed=0)
    write_json(root / INFO, info)
    return root


def copy(root: Path, to: Path) -> Path:
    shutil.copytree(root, to, symlinks=True)
    return to


def records(root):
    return list(read_jsonl(root / SCENES))


def edit(root: Path, change) -> None:
    """Rewrite scenes.jsonl with change(list of records) applied."""
    recs = records(root)
    write_jsonl(root / SCENES, change(recs) or recs)


def one_line(code, err) -> str:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("comco: error: ") and "Traceback" not in err, err
    return lines[0]


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".export-" in p.name)


# -- 25.2: never into the dataset ------------------------------------------------------------------

@pytest.mark.parametrize("inside", ["images", "masks", "singles", "images/deeper", "."])
@pytest.mark.parametrize("overwrite", [False, True])
def test_an_out_inside_the_dataset_is_refused(dataset, tmp_path, capsys, inside, overwrite):
    ds = copy(dataset, tmp_path / "ds")
    for folder in ("masks", "singles"):
        (ds / folder).mkdir()
        (ds / folder / "000000.png").write_bytes((ds / "images" / "000000.png").read_bytes())
    before = digest(ds)
    extra = ["--overwrite"] if overwrite else []
    line = one_line(*comco(capsys, "export", ds, "--to", "hf", "--out", ds / inside, *extra)[::2])
    assert "inside the dataset" in line or "holds the dataset" in line, line
    assert digest(ds) == before and not leftovers(ds) and not leftovers(ds / "images")


# -- 25.3: never through a symbolic link out of it ------------------------------------------------

@pytest.mark.parametrize("fmt", ["open-clip-wds", "hf", "clip-benchmark"])
@pytest.mark.parametrize("what", ["image", "folder"])
def test_a_symbolic_link_out_of_the_dataset_is_not_followed(dataset, tmp_path, capsys, fmt, what):
    ds = copy(dataset, tmp_path / "ds")
    outside = tmp_path / "outside"
    shutil.copytree(ds / "images", outside)  # valid PNGs of the right size: only the link is wrong
    if what == "image":
        (ds / "images" / "000002.png").unlink()
        (ds / "images" / "000002.png").symlink_to(outside / "000002.png")
        named = "000002"
    else:
        shutil.rmtree(ds / "images")
        (ds / "images").symlink_to(outside, target_is_directory=True)
        named = "000000"
    before = digest(outside)
    out = tmp_path / "out"
    line = one_line(*comco(capsys, "export", ds, "--to", fmt, "--out", out)[::2])
    assert f"record {named}" in line and "symbolic link" in line, line
    assert not out.exists() and not leftovers(tmp_path)
    assert digest(outside) == before and all(p.stat().st_nlink == 1 for p in outside.iterdir())  # no hard link
    code, _, err = comco(capsys, "validate", ds)
    assert code == 1 and "symbolic link" in err  # the same reason, from the same check


# -- 25.4: names from checked ids ----------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["hf", "open-clip-wds", "clip-benchmark"])
@pytest.mark.parametrize("bad", ["../../escaped", 7, None, "a.b", "000001/x"])
def test_ids_comco_does_not_write_are_refused(dataset, tmp_path, capsys, fmt, bad):
    ds = copy(dataset, tmp_path / "work" / "ds")

    def change(recs):
        recs[1]["id"] = bad

    edit(ds, change)
    out = tmp_path / "work" / "out"
    line = one_line(*comco(capsys, "export", ds, "--to", fmt, "--out", out)[::2])
    assert ("record 2 has no id" if bad is None else f"record 2: record id {json.dumps(bad)}") in line, line
    assert not out.exists() and not leftovers(tmp_path / "work")
    written = {p.name for p in tmp_path.rglob("*")} - {p.name for p in dataset.rglob("*")}
    assert written <= {"work", "ds", "outside"}, written  # no escaped.png, 7.png, None.png anywhere


def test_the_writers_check_ids_where_they_make_names(dataset, tmp_path):
    """Checked where the path is made, not only by the validation before."""
    from comco.data import Dataset
    from comco.data.export.pair_items import ImageSink
    from comco.data.export.samples import samples

    ds = copy(dataset, tmp_path / "ds")
    edit(ds, lambda recs: [dict(r, id="../../escaped") if i == 0 else r for i, r in enumerate(recs)])
    with pytest.raises(UserError, match=r'record id "\.\./\.\./escaped"'):
        next(samples(Dataset(ds), "and"))
    sink = ImageSink(Dataset(ds), tmp_path / "export" / "images")
    for bad in ("../../escaped", 7, None):
        with pytest.raises(UserError, match="not an id comco writes"):
            sink.name(dict(records(ds)[1], id=bad))
    assert not (tmp_path / "escaped.png").exists() and not (tmp_path / "export").exists()


# -- 25.8: only what `comco validate` accepts -----------------------------------------------------

def _duplicate_id(ds):
    edit(ds, lambda recs: [dict(r, id=recs[2]["id"]) if i == 3 else r for i, r in enumerate(recs)])


def _scrambled_png(ds):
    path = ds / "images" / "000004.png"
    data = bytearray(path.read_bytes())
    data[60:120] = bytes(60)  # chunk bytes overwritten: the CRC no longer matches
    path.write_bytes(bytes(data))


def _cut_png(ds):
    path = ds / "images" / "000001.png"
    path.write_bytes(path.read_bytes()[:80])


def _caption_as_text(ds):
    def change(recs):
        recs[2]["captions"]["and"] = recs[2]["captions"]["and"][0]  # a string: 13 one-letter captions

    edit(ds, change)


def _object_without_name(ds):
    def change(recs):
        del recs[3]["objects"][1]["name"]

    edit(ds, change)


def _no_base(ds):
    edit(ds, lambda recs: [r for r in recs if r["id"] != "000001"])


def _no_variant(ds):
    edit(ds, lambda recs: [r for r in recs if r["id"] != "000002-remove"])


INVALID = {
    "duplicate ids": (_duplicate_id, "clip-benchmark", "duplicate id"),
    "a scrambled PNG": (_scrambled_png, "open-clip-wds", "cannot be decoded"),
    "a cut PNG": (_cut_png, "hf", "cannot be decoded"),
    "a caption stored as a text": (_caption_as_text, "clip-benchmark", "record 000002"),
    "an object without a name": (_object_without_name, "hf", "misses 'name'"),
    "a pair group without its base": (_no_base, "winoground", "000001"),
    "a pair group without a variant": (_no_variant, "sugarcrepe", "000002-remove"),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_export_takes_only_what_validate_accepts(dataset, pairs, tmp_path, capsys, case):
    damage, fmt, words = INVALID[case]
    ds = copy(pairs if "pair" in case else dataset, tmp_path / "ds")
    assert comco(capsys, "validate", ds)[0] == 0
    damage(ds)
    code, _, err = comco(capsys, "validate", ds)
    assert code == 1, err
    first = err.splitlines()[0]
    out = tmp_path / "out"
    line = one_line(*comco(capsys, "export", ds, "--to", fmt, "--out", out)[::2])
    assert first in line and words in line and "comco validate" in line, (first, line)
    assert not out.exists() and not leftovers(tmp_path)


# -- 25.12: a full disk, a read-only --out ----------------------------------------------------------

@contextmanager
def tmpfs(at: Path, *options: str):
    """A small (or read-only) tmpfs mounted at `at` for the block; the test is skipped where mounting fails."""
    at.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(at)], capture_output=True)
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs ({','.join(options)}) here")
    try:
        yield at
    finally:
        subprocess.run(["umount", "-l", str(at)])


def _noisy(root: Path) -> Path:
    """Images of random pixels (PNG cannot compress them): 32 x 32 x 3 bytes each and more."""
    rng = np.random.default_rng(0)
    for r in records(root):
        w, h = r["resolution"]
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(root / r["image"])
    return root


@pytest.mark.parametrize("fmt", ["clip-benchmark", "open-clip-wds", "hf"])
def test_export_onto_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, capsys, fmt):
    ds = _noisy(mark_rendered(make_dataset(tmp_path / "ds", n=8, resolution=48, singles=False)))
    assert sum(p.stat().st_size for p in (ds / "images").iterdir()) > 48 * 1024
    with tmpfs(tmp_path / "small", "size=32k") as disk:
        out = disk / "out"
        out.mkdir()
        (out / "mine.txt").write_text("an older export")
        line = one_line(*comco(capsys, "export", ds, "--to", fmt, "--overwrite", "--out", out)[::2])
        assert "disk is full" in line and str(out) in line, line
        assert sorted(p.name for p in disk.iterdir()) == ["out"]  # no work folder left
        assert digest(out) == {"mine.txt": hashlib.sha256(b"an older export").hexdigest()}


def test_export_onto_a_read_only_out_is_one_line(dataset, tmp_path, capsys):
    with tmpfs(tmp_path / "ro", "ro", "size=64k") as ro:
        for out, extra in ((ro, []), (ro, ["--overwrite"]), (ro / "sub", [])):
            line = one_line(*comco(capsys, "export", dataset, "--to", "clip-benchmark", "--out", out, *extra)[::2])
            assert "not writable" in line or "cannot write" in line, line
            assert not leftovers(tmp_path) and not any(ro.iterdir())


def test_pairs_sheet_onto_a_read_only_folder_is_one_line(pairs, tmp_path, capsys):
    with tmpfs(tmp_path / "ro", "ro", "size=64k") as ro:
        for out in (ro, ro / "deeper"):
            line = one_line(*comco(capsys, "dataset", "pairs-sheet", pairs, "--out", out)[::2])
            assert "not writable" in line, line
            assert not any(ro.iterdir())


# -- 25.14: a killed export's work folder; the pair sheet's --out ---------------------------------

KILLED = """
import os, signal, sys
from pathlib import Path
from comco.data.export.staging import Staging
s = Staging(Path(sys.argv[1]))
(s.new / "half.tar").write_bytes(b"half an export")
if len(sys.argv) > 2:  # killed between the two renames: --out moved aside, the new one not yet in place
    os.replace(s.out, s.work / "old")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_exports_work_folder_is_swept_by_the_next(dataset, tmp_path, capsys):
    from comco.data.export.staging import Staging

    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", KILLED, str(out)], capture_output=True)
    assert r.returncode == -9, r.stderr
    assert len(leftovers(tmp_path)) == 1  # what a kill -9 leaves
    running = Staging(tmp_path / "out")  # an export still running into the same --out: never swept
    try:
        assert comco(capsys, "export", dataset, "--to", "clip-benchmark", "--out", out)[0] == 0
        assert leftovers(tmp_path) == [running.work.name]
    finally:
        running.close()
    # a kill between the two renames: the next export puts the old one back before it looks at --out
    before = digest(out)
    r = subprocess.run([sys.executable, "-c", KILLED, str(out), "swap"], capture_output=True)
    assert r.returncode == -9 and not out.exists()
    line = one_line(*comco(capsys, "export", dataset, "--to", "hf", "--out", out)[::2])
    assert "--overwrite" in line and digest(out) == before and not leftovers(tmp_path)


def test_pairs_sheet_replaces_only_a_sheet_it_wrote(pairs, tmp_path, capsys):
    code, stdout, _ = comco(capsys, "dataset", "pairs-sheet", "--help")
    assert code == 0 and "Output folder for pairs-sheet.png" in " ".join(stdout.split())
    sheets = tmp_path / "sheets"
    for _ in range(2):  # its own sheet is replaced
        assert comco(capsys, "dataset", "pairs-sheet", pairs, "--out", sheets, "--limit", "1")[0] == 0
    for k, keep in enumerate((b"mine", None)):  # a text file, a photo, where the sheet would go
        folder = tmp_path / f"keep{k}"
        folder.mkdir()
        if keep is None:
            Image.new("RGB", (8, 8), (1, 2, 3)).save(folder / "pairs-sheet.png")
        else:
            (folder / "pairs-sheet.png").write_bytes(keep)
        before = (folder / "pairs-sheet.png").read_bytes()
        line = one_line(*comco(capsys, "dataset", "pairs-sheet", pairs, "--out", folder)[::2])
        assert "not a sheet `comco dataset pairs-sheet` wrote" in line
        assert (folder / "pairs-sheet.png").read_bytes() == before


def test_factors_that_name_nothing_are_refused(pairs, tmp_path, capsys):
    for value in ("", ","):
        line = one_line(*comco(capsys, "dataset", "pairs-sheet", pairs, "--out", tmp_path / "s.png",
                               "--factors", value)[::2])
        assert "names no factor" in line
    assert not (tmp_path / "s.png").exists()


# -- 24.2: the printed line reproduces comco's numbers ---------------------------------------------

def test_the_clip_benchmark_line_turns_off_mixed_precision(dataset, tmp_path, capsys):
    code, stdout, err = comco(capsys, "export", dataset, "--to", "clip-benchmark", "--out", tmp_path / "cb")
    assert code == 0, err
    use = next(line for line in stdout.splitlines() if line.startswith("read it with: "))
    assert "--no_amp" in use.split() and "--recall_k 1 5 10" in use
    with tarfile.open(tmp_path / "cb" / "test" / "0.tar") as tar:  # the export itself is whole
        assert len([m for m in tar.getmembers() if m.name.endswith(".png")]) == 6
    assert os.path.isfile(tmp_path / "cb" / "dataset_type.txt")
