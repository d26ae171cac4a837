"""Tiny renders with bpy (draft and Cycles at 48-96 px): the renderer end to end."""

import json
import os
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
BASE = ["--object-set", "simco", "--resolution", "64", "--preset", "draft", "--quiet"]


def render(out, *args, check=True):
    r = subprocess.run([*COMCO, "render", *BASE, *map(str, args), "--out", str(out)], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr[-2000:]
    return r


def records(out):
    return [json.loads(line) for line in (Path(out) / "scenes.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def draft(tmp_path_factory):
    out = tmp_path_factory.mktemp("draft") / "d"
    render(out, "--objects", "2-4", "--n", "6", "--singles", "--masks", "--workers", "2")
    return out


def test_files_and_records_complete(draft):
    recs = records(draft)
    assert [r["index"] for r in recs] == list(range(6))
    for r in recs:
        img = Image.open(draft / r["image"])
        assert img.size == (64, 64)
        mask = np.asarray(Image.open(draft / "masks" / Path(r["image"]).name))
        for i, o in enumerate(r["objects"]):
            m = o["measured"]
            assert m["pixels"] == int((mask == i + 1).sum()) > 0
            assert m["visible_fraction"] >= 0.9
    singles = [json.loads(x) for x in (draft / "singles" / "singles.jsonl").read_text().splitlines()]
    assert len(singles) == 18 and all((draft / s["image"]).is_file() for s in singles)
    meta = (draft / "metadata.jsonl").read_text().splitlines()
    assert len(meta) == 6 and json.loads(meta[0])["file_name"] == recs[0]["image"]
    info = json.loads((draft / "dataset.json").read_text())
    assert info["rendered"] and info["counts"]["rendered"] == 6


def test_planned_large_measures_largest(draft):
    for r in records(draft):
        pixels = [o["measured"]["pixels"] for o in r["objects"]]
        large = next(i for i, o in enumerate(r["objects"]) if o["size_rank"] == 0)
        assert pixels[large] == max(pixels)


def test_validate_accepts_and_rejects_tampering(draft, tmp_path):
    assert subprocess.run([*COMCO, "validate", str(draft)], capture_output=True).returncode == 0
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(draft, copy)
    (copy / "images" / "000003.png").unlink()
    r = subprocess.run([*COMCO, "validate", str(copy)], capture_output=True, text=True)
    assert r.returncode == 1 and "000003" in r.stderr


def test_draft_is_pixel_identical_for_the_same_seed(draft, tmp_path):
    again = tmp_path / "again"
    render(again, "--objects", "2-4", "--n", "2")
    for name in ("000000.png", "000001.png"):
        a = np.asarray(Image.open(draft / "images" / name))
        b = np.asarray(Image.open(again / "images" / name))
        assert np.array_equal(a, b)


def test_graded_measured_ranks_match_plan(tmp_path):
    out = tmp_path / "g"
    render(out, "--objects", "3", "--n", "3", "--layout", "graded")
    for r in records(out):
        pix = [o["measured"]["pixels"] for o in r["objects"]]
        assert sorted(range(3), key=lambda i: -pix[i]) == sorted(range(3), key=lambda i: r["objects"][i]["size_rank"])


def test_cycles_renders(tmp_path):
    out = tmp_path / "c"
    r = subprocess.run([*COMCO, "render", "--object-set", "simco", "--resolution", "48", "--preset", "cycles",
                        "--samples", "2", "--objects", "2", "--n", "1", "--quiet", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    img = np.asarray(Image.open(out / "images" / "000000.png").convert("L"), dtype=float)
    assert img.std() > 1.0  # not a blank frame


def test_resume_after_kill_completes_without_duplicates(tmp_path):
    out = tmp_path / "k"
    args = [*COMCO, "render", *BASE, "--objects", "2", "--n", "14", "--out", str(out)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    journal = out / "journal.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:
        if journal.is_file() and len(journal.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(journal.read_text().splitlines()) < 14
    render(out, "--objects", "2", "--n", "14", "--resume")
    recs = records(out)
    assert [r["index"] for r in recs] == list(range(14))
    leftovers = [p for p in out.rglob("*") if p.name.endswith(".tmp") or ".tmp." in p.name]
    assert not leftovers
    assert sorted(p.name for p in (out / "images").iterdir()) == [f"{i:06d}.png" for i in range(14)]


def test_shards_merge_to_the_single_run(draft, tmp_path):
    shards = []
    for i in range(2):
        s = tmp_path / f"s{i}"
        render(s, "--objects", "2-4", "--n", "6", "--singles", "--masks", "--shard", f"{i}/2")
        shards.append(s)
    merged = tmp_path / "m"
    r = subprocess.run([*COMCO, "dataset", "merge", *map(str, shards), "--out", str(merged)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (merged / "scenes.jsonl").read_bytes() == (draft / "scenes.jsonl").read_bytes()
    a = json.loads((merged / "dataset.json").read_text())
    b = json.loads((draft / "dataset.json").read_text())
    assert a["config_hash"] == b["config_hash"]


def test_broken_object_lands_in_failures(tmp_path):
    s = tmp_path / "set"
    s.mkdir()
    (s / "objects.toml").write_text(
        'name = "broken"\n' + "".join(
            f'[[objects]]\nname = "{n}"\nplural = "{n}s"\narticle = "a"\ndimensions_m = [1, 1, 1]\n'
            f'size_class = "medium"\ncolorable = true\nsource = "builder:{b}"\n'
            for n, b in (("cube", "simco.cube"), ("ghost", "simco.nosuch"))))
    out = tmp_path / "b"
    r = subprocess.run([*COMCO, "render", "--object-set", str(s), "--resolution", "48", "--preset", "draft",
                        "--objects", "1", "--n", "4", "--quiet", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 1
    failures = [json.loads(x) for x in (out / "failures.jsonl").read_text().splitlines()]
    assert failures and all("ghost" in f["reason"] for f in failures)
    assert len(records(out)) == 4 - len(failures) > 0


@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "--workers 0"),
    (["--shard", "3/2"], "0 <= i < N"),
    (["--device", "cuda"], "needs an NVIDIA GPU"),
    (["--preset", "eevee"], "needs an NVIDIA GPU"),
])
def test_bad_render_input(tmp_path, args, message):
    if "GPU" in message and __import__("shutil").which("nvidia-smi"):
        pytest.skip("a GPU is present")
    r = render(tmp_path / "x", "--n", "1", *args, check=False)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_coco_annotations_match_masks(tmp_path):
    from comco.render.coco import rle_decode

    out = tmp_path / "coco"
    render(out, "--objects", "2-3", "--n", "3", "--coco")
    ann = json.loads((out / "annotations.json").read_text())
    assert len(ann["images"]) == 3 and len(ann["categories"]) == 18
    recs = records(out)
    assert len(ann["annotations"]) == sum(len(r["objects"]) for r in recs)
    for a in ann["annotations"]:
        rec = recs[a["image_id"] - 1]
        labels = np.asarray(Image.open(out / "masks" / Path(rec["image"]).name))
        decoded = rle_decode(a["segmentation"])
        idx = next(i for i, o in enumerate(rec["objects"]) if o["measured"]["pixels"] == a["area"]
                   and ann["categories"][a["category_id"] - 1]["name"] == o["name"])
        assert np.array_equal(decoded, labels == idx + 1)
        ys, xs = np.nonzero(decoded)
        assert a["bbox"] == [xs.min(), ys.min(), xs.max() - xs.min() + 1, ys.max() - ys.min() + 1]


def test_disk_full_stops_cleanly_and_resume_finishes(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        out = mnt / "d"
        r = render(out, "--objects", "2", "--n", "40", "--resolution", "96", check=False)
        assert r.returncode == 2, r.stderr[-1500:]
        assert "disk full" in r.stderr and "--resume" in r.stderr and len(r.stderr.strip().splitlines()) == 1
        lines = (out / "journal.jsonl").read_text().splitlines()
        journal = []
        for x in lines:  # the last line may have been cut by the full disk: it does not count
            try:
                journal.append(json.loads(x))
            except json.JSONDecodeError:
                assert x is lines[-1]
        assert 0 < len(journal) < 40
        for e in journal:  # every journaled image is complete and readable
            Image.open(out / e["record"]["image"]).load()
        subprocess.run(["mount", "-o", "remount,size=8m", str(mnt)], check=True)
        render(out, "--objects", "2", "--n", "40", "--resolution", "96", "--resume")
        assert [r["index"] for r in records(out)] == list(range(40))
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


def test_a_killed_worker_is_replaced_and_its_image_retried(tmp_path):
    out = tmp_path / "w"
    args = [*COMCO, "render", "--object-set", "simco", "--resolution", "64", "--preset", "draft",
            "--objects", "2", "--n", "16", "--workers", "2", "--out", str(out)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = out / "journal.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (journal.is_file() and len(journal.read_text().splitlines()) >= 2):
        time.sleep(0.05)
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    workers = [int(c) for c in children
               if "spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes().decode(errors="ignore")]
    assert workers, children
    os.kill(workers[0], signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr[-2000:]
    assert [r["index"] for r in records(out)] == list(range(16))
    assert "worker crashes recovered" in stdout


def test_retiring_workers_lose_no_image(tmp_path):
    # Workers restart every 2 images: jobs must never be handed to a worker that is leaving.
    out = tmp_path / "r"
    render(out, "--objects", "2", "--n", "13", "--workers", "2", "--max-per-worker", "2")
    assert [r["index"] for r in records(out)] == list(range(13))
    assert subprocess.run([*COMCO, "validate", str(out)], capture_output=True).returncode == 0


def test_validate_notices_unaccounted_images(draft, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(draft, copy)
    lines = (copy / "scenes.jsonl").read_text().splitlines()
    (copy / "scenes.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    info = json.loads((copy / "dataset.json").read_text())
    info["counts"]["rendered"] -= 1
    (copy / "dataset.json").write_text(json.dumps(info))
    r = subprocess.run([*COMCO, "validate", str(copy)], capture_output=True, text=True)
    assert r.returncode == 1 and "unaccounted" in r.stderr
