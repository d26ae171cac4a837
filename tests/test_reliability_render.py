"""Issue 16, the renderer under faults: cut journals, unreadable images, a second run in the
same folder, Ctrl-C, a stopped worker, temp folders. Tiny draft renders of the simco set."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytestmark = pytest.mark.bpy
pytest.importorskip("bpy")

COMCO = [sys.executable, "-m", "comco.cli"]
BASE = ["--object-set", "simco", "--resolution", "64", "--preset", "draft", "--objects", "2"]
INTERRUPTED = "comco: interrupted; completed work is kept (use --resume)"


def render_args(out, *args):
    return [*COMCO, "render", *BASE, *map(str, args), "--out", str(out)]


def render(out, *args, check=True, env=None):
    r = subprocess.run(render_args(out, "--quiet", *args), capture_output=True, text=True, env=env)
    if check:
        assert r.returncode == 0, r.stderr[-2000:]
    return r


def validate(out):
    return subprocess.run([*COMCO, "validate", str(out)], capture_output=True, text=True)


def indices(out):
    return [json.loads(x)["index"] for x in (Path(out) / "scenes.jsonl").read_text().splitlines()]


def journal_lines(out):
    path = Path(out) / "journal.jsonl"
    return path.read_text().count("\n") if path.is_file() else 0


def wait_for_journal(out, lines, proc):
    deadline = time.time() + 180
    while time.time() < deadline and journal_lines(out) < lines:
        assert proc.poll() is None, "the render ended before the fault could be injected"
        time.sleep(0.05)
    assert journal_lines(out) >= lines


def worker_pids(parent: int) -> list[int]:
    children = subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True).stdout.split()
    return [int(c) for c in children
            if "spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes().decode(errors="ignore")]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    out = tmp_path_factory.mktemp("rel") / "d"
    render(out, "--n", "6", "--masks")
    return out


@pytest.fixture
def copy(done, tmp_path):
    c = tmp_path / "copy"
    shutil.copytree(done, c)
    return c


def pixels(path):
    return np.asarray(Image.open(path))


# 1 ------------------------------------------------------------------ a cut last journal line

def test_resume_after_a_cut_journal_line_keeps_every_record(copy, done):
    journal = copy / "journal.jsonl"
    data = journal.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    journal.write_bytes(data[:last + (len(data) - last) // 2])  # the last entry cut mid-line
    render(copy, "--n", "6", "--masks", "--resume")
    assert indices(copy) == list(range(6))
    assert validate(copy).returncode == 0
    lines = journal.read_text().splitlines()
    assert all(json.loads(x) for x in lines)  # no entry was glued to the cut one
    assert np.array_equal(pixels(copy / "images/000005.png"), pixels(done / "images/000005.png"))


def test_a_last_line_missing_only_its_newline_is_kept(copy):
    journal = copy / "journal.jsonl"
    journal.write_bytes(journal.read_bytes().rstrip(b"\n"))
    render(copy, "--n", "6", "--masks", "--resume")
    assert indices(copy) == list(range(6))
    assert len(journal.read_text().splitlines()) == 6  # the whole entry was ended, not re-rendered


# 4 ------------------------------------------------------------------ unreadable images

def damage(folder):
    cut = folder / "images/000001.png"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    scrambled = folder / "images/000003.png"
    data = bytearray(scrambled.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 16] = bytes(255 - b for b in data[mid:mid + 16])  # same length, other bytes
    scrambled.write_bytes(bytes(data))
    mask = folder / "masks/000004.png"
    mask.write_bytes(mask.read_bytes()[:40])


def test_validate_names_truncated_and_scrambled_images(copy):
    damage(copy)
    r = validate(copy)
    assert r.returncode == 1
    bad = [line for line in r.stderr.splitlines() if line.startswith("record ")]
    assert len(bad) == 2 and "000001" in bad[0] and "000003" in bad[1], r.stderr
    assert all("cannot be decoded" in line for line in bad)


def test_resume_rerenders_unreadable_images_and_masks(copy, done):
    damage(copy)
    render(copy, "--n", "6", "--masks", "--resume")
    assert validate(copy).returncode == 0
    for name in ("images/000001.png", "images/000003.png", "masks/000004.png"):
        assert np.array_equal(pixels(copy / name), pixels(done / name)), name
    assert indices(copy) == list(range(6))


# 11 ----------------------------------------------------------------- --overwrite, transient failures

def test_overwrite_of_the_same_configuration_renders_again(copy):
    (copy / "images/000002.png").unlink()
    r = render(copy, "--n", "6", "--masks", "--overwrite", check=False)
    assert r.returncode == 0, r.stderr
    assert indices(copy) == list(range(6)) and validate(copy).returncode == 0


def test_rendering_a_finished_dataset_again_calls_it_finished(copy):
    # issue 24 item 6: it used to say "(partly) rendered; pass --resume"
    before = (copy / "scenes.jsonl").read_bytes()
    r = render(copy, "--n", "6", "--masks", check=False)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"comco: error: --out {copy} already holds this dataset, finished (6 images rendered); to render it "
        f"again, run the same command with --overwrite, or choose another --out"]
    assert (copy / "scenes.jsonl").read_bytes() == before and validate(copy).returncode == 0


@pytest.mark.parametrize("flagged", [True, False], ids=["transient-flag", "older-journal"])
def test_resume_retries_scenes_lost_to_crashed_workers(copy, flagged):
    # As a run leaves it when scene 2's worker died twice: the entry failed, no image.
    journal = copy / "journal.jsonl"
    entries = [json.loads(x) for x in journal.read_text().splitlines()]
    for e in entries:
        if e["key"] == "scene:2":
            e.update(status="failed", reason="the render worker crashed twice")
            if flagged:
                e["transient"] = True
    journal.write_text("".join(json.dumps(e) + "\n" for e in entries))
    (copy / "images/000002.png").unlink()
    r = render(copy, "--n", "6", "--masks", "--resume", check=False)
    assert r.returncode == 0, r.stderr
    assert indices(copy) == list(range(6)) and not (copy / "failures.jsonl").exists()
    assert validate(copy).returncode == 0


# 12 ----------------------------------------------------------------- two runs, one folder

def test_a_second_render_into_a_busy_folder_is_refused(tmp_path):
    out = tmp_path / "busy"
    first = subprocess.Popen(render_args(out, "--quiet", "--n", "30"), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for_journal(out, 1, first)
        os.kill(first.pid, signal.SIGSTOP)  # holds the folder, mid-run, for as long as the test needs
        second = render(out, "--n", "30", "--resume", check=False)
        os.kill(first.pid, signal.SIGCONT)
        assert second.returncode == 2
        assert second.stderr.strip().splitlines() == [
            f"comco: error: --out {out} is in use by another `comco render`; wait for it to finish "
            f"or choose another --out"]
        _, err = first.communicate(timeout=300)
        assert first.returncode == 0, err[-2000:]
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert indices(out) == list(range(30)) and validate(out).returncode == 0


# 13 ----------------------------------------------------------------- Ctrl-C, a stopped worker

def test_ctrl_c_says_what_is_kept_and_resume_completes(tmp_path):
    out, tmp = tmp_path / "int", tmp_path / "tmp"
    tmp.mkdir()
    # Cycles at 224 px (2-3 s an image here): the render is surely still going when the signal
    # lands; 64 px draft images (about 100/s) could all finish between the journal's second line
    # and the signal on a loaded machine
    env = {**os.environ, "TMPDIR": str(tmp)}
    slow = {"draft": "cycles", "64": "224"}
    args = [*COMCO, "render", *[slow.get(a, a) for a in BASE], "--quiet", "--n", "8", "--workers", "2",
            "--out", str(out)]
    # A terminal's Ctrl-C reaches a process that does not ignore SIGINT. A suite started in the
    # background by a non-interactive shell (`pytest &`) runs with SIGINT ignored, and a child
    # inherits an ignore: the render would never see the signal. So the child starts with the
    # default disposition, as from an interactive shell.
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_for_journal(out, 2, proc)
        workers = worker_pids(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130
    assert err.strip().splitlines() == [INTERRUPTED]
    assert workers and not any(alive(w) for w in workers)  # no worker outlives the run
    assert not list(tmp.glob("comco-render-*"))
    assert 0 < journal_lines(out) < 8
    resumed = subprocess.run([*args[:-2], "--resume", "--out", str(out)], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert indices(out) == list(range(8)) and validate(out).returncode == 0


def test_a_stopped_worker_is_replaced_and_its_image_retried(tmp_path):
    out, tmp = tmp_path / "stop", tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(render_args(out, "--n", "16", "--workers", "2", "--image-timeout", "10"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=env)
    stopped = None
    try:
        wait_for_journal(out, 2, proc)
        stopped = worker_pids(proc.pid)[0]
        os.kill(stopped, signal.SIGSTOP)
        stdout, stderr = proc.communicate(timeout=300)  # without a timeout it would wait forever
    finally:
        if stopped and alive(stopped):
            os.kill(stopped, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, stderr[-2000:]
    assert "1 hung workers replaced" in stdout
    assert not alive(stopped)
    assert indices(out) == list(range(16)) and validate(out).returncode == 0
    assert not list(tmp.glob("comco-render-*"))  # the killed worker's scratch is gone too


def test_workers_that_cannot_start_end_the_run(tmp_path):
    # A bpy that the parent finds but the workers cannot import: they die before they are ready.
    fake = tmp_path / "fake"
    (fake / "bpy").mkdir(parents=True)
    (fake / "bpy" / "__init__.py").write_text("raise ImportError('a broken bpy')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "nostart"
    r = subprocess.run(render_args(out, "--quiet", "--n", "2"), capture_output=True, text=True, env=env,
                       timeout=300)  # it used to start workers forever
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr[-2000:]
    assert "fail to start" in r.stderr and ".logs" in r.stderr
    assert any("a broken bpy" in log.read_text() for log in (out / ".logs").iterdir())


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_bad_image_timeout(tmp_path, value):
    r = render(tmp_path / "x", "--n", "1", "--image-timeout", value, check=False)
    assert r.returncode == 2 and "--image-timeout" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


# 16 ----------------------------------------------------------------- temp folders

def test_no_scratch_folder_is_left_and_dead_runs_are_swept(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tmp / f"comco-render-{gone.pid}-abcd"  # a killed run's: its owner no longer exists
    live = tmp / f"comco-render-{os.getpid()}-abcd"  # a running one's (this test's pid is alive)
    other = tmp / "comco-render-q1w2e3r4"  # no owner in the name: not ours to judge
    for d in (dead, live, other):
        d.mkdir()
        (d / "ids.png").write_bytes(b"x")
    render(tmp_path / "t", "--n", "3", "--workers", "2", env={**os.environ, "TMPDIR": str(tmp)})
    assert sorted(p.name for p in tmp.iterdir()) == sorted([live.name, other.name])
