"""`comco export`: each layout's files as its reader expects them, the shard writer's bounds,
streaming, and the bad-input exits (one line, exit 2). The real tools read the exports in
test_export_tools.py."""

from __future__ import annotations

import csv
import io
import json
import sys
import tarfile
import tracemalloc

import pytest
from PIL import Image
from support.export import comco, link_images
from support.probes import make_dataset

from comco.data.export.shards import ShardWriter, closed_size, member_bytes
from comco.data.folder import SCENES
from comco.errors import UserError
from comco.io import read_jsonl, write_jsonl


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("export") / "ds", n=10, resolution=32, singles=False)


def records(root):
    return list(read_jsonl(root / SCENES))


def tar_samples(path):
    """key -> {ext: bytes}, checking each sample's members are adjacent (WebDataset groups them so)."""
    out, order = {}, []
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            key, ext = m.name.split(".", 1)
            if not order or order[-1] != key:
                assert key not in out, f"{key}'s members are not adjacent in {path}"
                order.append(key)
            out.setdefault(key, {})[ext] = tar.extractfile(m).read()
    return out


def test_clip_benchmark_layout_holds_every_image_with_its_captions(dataset, tmp_path, capsys):
    out = tmp_path / "cb"
    code, stdout, err = comco(capsys, "export", dataset, "--to", "clip-benchmark", "--template", "long",
                              "--shard-count", "4", "--quiet", "--out", out)
    assert code == 0, err
    assert stdout == ""  # --quiet
    assert (out / "dataset_type.txt").read_text() == "retrieval\n"
    assert (out / "test" / "nshards.txt").read_text() == "3\n"  # 10 images, 4 a shard
    got = {}
    for i in range(3):
        got.update(tar_samples(out / "test" / f"{i}.tar"))
    recs = records(dataset)
    assert list(got) == [r["id"] for r in recs]
    for r in recs:
        sample = got[r["id"]]
        assert sample["png"] == (dataset / r["image"]).read_bytes()
        assert sample["txt"].decode().splitlines() == r["captions"]["long"]
        row = json.loads(sample["json"])
        assert row["objects"]["name"] == [o["name"] for o in r["objects"]]
        assert row["objects"]["pixels"] == [o["measured"]["pixels"] for o in r["objects"]]
    marker = json.loads((out / "comco-export.json").read_text())
    assert marker["format"] == "clip-benchmark" and marker["images"] == 10 and marker["template"] == "long"


def test_default_template_is_the_datasets_first_and_first_keeps_one_caption(dataset, tmp_path, capsys):
    recs = records(dataset)
    first_template = next(iter(recs[0]["captions"]))
    out = tmp_path / "csv"
    code, stdout, err = comco(capsys, "export", dataset, "--to", "open-clip-csv", "--out", out)
    assert code == 0, err
    assert f"'{first_template}' captions" in stdout and "open_clip_train.main --train-data" in stdout
    with open(out / "train.csv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    want = [(str((dataset / r["image"]).resolve()), c) for r in recs for c in r["captions"][first_template]]
    assert [(row["filepath"], row["title"]) for row in rows] == want
    code, _, err = comco(capsys, "export", dataset, "--to", "open-clip-csv", "--mention-orders", "first",
                         "--csv-separator", "comma", "--template", "photo", "--overwrite", "--out", out)
    assert code == 0, err
    with open(out / "train.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [row["title"] for row in rows] == [r["captions"]["photo"][0] for r in recs]  # commas quoted


def test_open_clip_shards_are_bounded_and_sized(dataset, tmp_path, capsys):
    out = tmp_path / "wds"
    bound = 10 * 1024  # the smallest tar file: a few of these tiny samples each
    code, _, err = comco(capsys, "export", dataset, "--to", "open-clip-wds", "--mention-orders", "first",
                         "--shard-size", "10KiB", "--out", out)
    assert code == 0, err
    sizes = json.loads((out / "sizes.json").read_text())
    assert len(sizes) >= 2 and sum(sizes.values()) == 10
    seen = []
    for name, n in sizes.items():
        assert (out / name).stat().st_size <= bound
        samples = tar_samples(out / name)
        assert len(samples) == n
        for members in samples.values():
            assert set(members) == {"png", "txt", "json"}
            assert json.loads(members["json"])["text"] == members["txt"].decode()
        seen += list(samples)
    assert seen == [r["id"] for r in records(dataset)]


def test_open_clip_shards_with_every_caption_are_one_sample_each(dataset, tmp_path, capsys):
    out = tmp_path / "wds"
    assert comco(capsys, "export", dataset, "--to", "open-clip-wds", "--template", "and", "--out", out)[0] == 0
    samples = tar_samples(out / "00000.tar")
    recs = records(dataset)
    assert len(samples) == sum(len(r["captions"]["and"]) for r in recs)
    r = recs[3]
    for k, caption in enumerate(r["captions"]["and"]):
        assert samples[f"{r['id']}-{k}"]["txt"].decode() == caption


def test_hf_folder_links_images_and_writes_object_tables(dataset, tmp_path, capsys):
    out = tmp_path / "hf"
    code, _, err = comco(capsys, "export", dataset, "--to", "hf", "--template", "articles", "--out", out)
    assert code == 0, err
    rows = list(read_jsonl(out / "metadata.jsonl"))
    recs = records(dataset)
    assert len(rows) == len(recs)
    for row, r in zip(rows, recs):
        assert (out / row["file_name"]).read_bytes() == (dataset / r["image"]).read_bytes()
        assert row["captions"] == r["captions"]["articles"] and row["text"] == r["captions"]["articles"][0]
        assert row["mention_orders"] == r["mention_orders"]
        assert row["objects"]["slot"] == [o["slot"] for o in r["objects"]]
        assert row["objects"]["bbox"] == [o["measured"]["bbox"] for o in r["objects"]]
        assert "color" not in row["objects"]  # no --colors: a column of nulls would not type


def test_shard_writer_bounds_bytes_and_counts(tmp_path):
    sink = ShardWriter(tmp_path, lambda i: f"{i}.tar", max_bytes=40 * 1024, max_count=5)
    sizes = [100, 9000, 30000, 20, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 7000]
    for i, size in enumerate(sizes):
        sink.write(f"k{i:02d}", {"bin": bytes([i]) * size, "txt": b"x"})
    counts = sink.close()
    assert sum(counts) == len(sizes) and max(counts) <= 5
    keys = []
    for i, n in enumerate(counts):
        path = tmp_path / f"{i}.tar"
        assert path.stat().st_size <= 40 * 1024
        samples = tar_samples(path)
        assert len(samples) == n
        keys += list(samples)
        for key, members in samples.items():
            assert members["bin"] == bytes([int(key[1:])]) * sizes[int(key[1:])]
    assert keys == [f"k{i:02d}" for i in range(len(sizes))]
    # a shard closes only when the next sample would not fit: two neighbours never fit in one
    for i in range(len(counts) - 1):
        fill = sum(member_bytes(sizes[j]) + member_bytes(1) for j in range(sum(counts[:i]), sum(counts[:i + 1])))
        nxt = sum(counts[:i + 1])
        assert counts[i] == 5 or closed_size(fill + member_bytes(sizes[nxt]) + member_bytes(1)) > 40 * 1024
    again = tmp_path / "again"
    again.mkdir()
    sink = ShardWriter(again, lambda i: f"{i}.tar", max_bytes=40 * 1024, max_count=5)
    for i, size in enumerate(sizes):
        sink.write(f"k{i:02d}", {"bin": bytes([i]) * size, "txt": b"x"})
    sink.close()
    assert (again / "0.tar").read_bytes() == (tmp_path / "0.tar").read_bytes()  # fixed headers


def test_shard_writer_refuses_a_sample_larger_than_a_shard(tmp_path):
    sink = ShardWriter(tmp_path, lambda i: f"{i}.tar", max_bytes=40 * 1024, max_count=5)
    with pytest.raises(UserError, match="--shard-size"):
        sink.write("big", {"bin": b"x" * 50 * 1024})


def one_line_error(code, err):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("comco: error: "), err
    return lines[0]


def test_bad_formats_and_templates(dataset, tmp_path, capsys):
    line = one_line_error(*comco(capsys, "export", dataset, "--to", "coco", "--out", tmp_path / "x")[::2])
    assert "clip-benchmark, open-clip-csv, open-clip-wds, hf" in line
    line = one_line_error(*comco(capsys, "export", dataset, "--to", "hf", "--template", "poem",
                                 "--out", tmp_path / "x")[::2])
    assert "long" in line and "and" in line  # names the templates it has
    for option, value in (("--mention-orders", "some"), ("--shard-size", "lots"), ("--csv-separator", "::")):
        one_line_error(*comco(capsys, "export", dataset, "--to", "open-clip-csv", option, value,
                              "--out", tmp_path / "x")[::2])
    assert not (tmp_path / "x").exists()


def test_a_dataset_without_captions_fits_hf_only(dataset, tmp_path, capsys):
    bare = make_dataset(tmp_path / "bare", n=3, resolution=32, singles=False)
    write_jsonl(bare / SCENES, [dict(r, captions={}) for r in records(bare)])
    line = one_line_error(*comco(capsys, "export", bare, "--to", "clip-benchmark", "--out", tmp_path / "cb")[::2])
    assert "no captions" in line and "--to hf" in line
    # the planner always writes captions: records without them were edited, which `comco validate` refuses
    line = one_line_error(*comco(capsys, "export", bare, "--to", "hf", "--out", tmp_path / "hf")[::2])
    assert "record 000000: 'captions'" in line and "comco validate" in line
    assert not (tmp_path / "hf").exists()


def test_a_planned_dataset_without_images_is_refused(tmp_path, capsys):
    planned = make_dataset(tmp_path / "planned", n=3, resolution=32, singles=False, render=False)
    line = one_line_error(*comco(capsys, "export", planned, "--to", "hf", "--out", tmp_path / "hf")[::2])
    assert "has no image" in line and "comco render" in line
    assert not (tmp_path / "hf").exists() and not list(tmp_path.glob(".hf.*"))  # nothing left behind


def test_out_folder_rules(dataset, tmp_path, capsys):
    out = tmp_path / "out"
    assert comco(capsys, "export", dataset, "--to", "hf", "--out", out)[0] == 0
    line = one_line_error(*comco(capsys, "export", dataset, "--to", "clip-benchmark", "--out", out)[::2])
    assert "comco export (hf)" in line and "--overwrite" in line
    assert comco(capsys, "export", dataset, "--to", "clip-benchmark", "--overwrite", "--out", out)[0] == 0
    assert (out / "dataset_type.txt").is_file() and not (out / "metadata.jsonl").exists()  # replaced whole
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    line = one_line_error(*comco(capsys, "export", dataset, "--to", "hf", "--out", other)[::2])
    assert "other files" in line
    assert (other / "notes.txt").read_text() == "mine"
    for bad in (dataset, dataset.parent):
        assert "holds the dataset" in one_line_error(*comco(capsys, "export", dataset, "--to", "hf", "--overwrite",
                                                            "--out", bad)[::2])
    assert (dataset / SCENES).is_file()
    another = make_dataset(tmp_path / "another", n=2, resolution=32, singles=False, render=False)
    line = one_line_error(*comco(capsys, "export", dataset, "--to", "hf", "--overwrite", "--out", another)[::2])
    assert "is a comco dataset" in line and (another / SCENES).is_file()
    file_out = tmp_path / "file"
    file_out.write_text("x")
    assert "is a file" in one_line_error(*comco(capsys, "export", dataset, "--to", "hf", "--out", file_out)[::2])


def test_a_failed_export_leaves_the_old_one(dataset, tmp_path, capsys):
    broken = make_dataset(tmp_path / "broken", n=4, resolution=32, singles=False)
    out = tmp_path / "out"
    assert comco(capsys, "export", broken, "--to", "open-clip-csv", "--out", out)[0] == 0
    before = (out / "train.csv").read_bytes()
    (broken / records(broken)[2]["image"]).unlink()  # the third image goes missing
    line = one_line_error(*comco(capsys, "export", broken, "--to", "open-clip-csv", "--overwrite",
                                 "--out", out)[::2])
    assert records(broken)[2]["id"] in line and "--resume" in line
    assert (out / "train.csv").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "out"]  # no temporary folder left


def peak_bytes(fn, *args, **kwargs) -> int:
    # pathlib interns every path part (sys.intern), and CPython's table of interned strings
    # doubles when it fills: one resize of that global table (~2 MB once ~40,000 names are
    # interned) would land in whichever export crosses the threshold. Grow it first (the
    # table never shrinks), so the peak counts only what the export itself holds.
    warm = [sys.intern(f"comco-intern-warmup-{i}") for i in range(200_000)]
    del warm
    tracemalloc.start()
    try:
        fn(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("fmt", ["clip-benchmark", "hf"])
def test_export_memory_does_not_grow_with_the_dataset(tmp_path, fmt, monkeypatch):
    from comco.data import export_dataset
    from comco.data.export import run
    from comco.data.writer import run_plan
    from comco.plan import PlanConfig

    # The export first runs `comco validate`, whose re-planning holds what the planner holds (up to
    # its window of records: comco.plan's bound, not the export's); the peak counted here starts
    # after it, with the writing.
    check = run.check_dataset

    def then_reset(dataset):
        check(dataset)
        tracemalloc.reset_peak()

    monkeypatch.setattr(run, "check_dataset", then_reset)
    png = tmp_path / "one.png"
    Image.new("RGB", (16, 16), (90, 20, 200)).save(png)
    peaks = {}
    # a first export warms what is paid once per process (imports, caches), which the
    # rest of the suite may or may not have paid already; then the two sizes compare
    for n in (20, 200, 2000):
        root = tmp_path / f"d{n}"
        run_plan(PlanConfig(object_set="simco", objects=(2, 5), n=n, resolution=(16, 16), seed=2), root, quiet=True)
        link_images(root, png)
        peaks[n] = peak_bytes(export_dataset, root, fmt, tmp_path / f"{fmt}{n}", quiet=True)
    # 1,800 more records of ~2 kB each would add ~4 MB if they were held; streaming adds nothing
    assert peaks[2000] < peaks[200] + 1_000_000, peaks


def test_tar_members_decode_as_images(dataset, tmp_path, capsys):
    out = tmp_path / "cb"
    assert comco(capsys, "export", dataset, "--to", "clip-benchmark", "--out", out)[0] == 0
    sample = next(iter(tar_samples(out / "test" / "0.tar").values()))
    assert Image.open(io.BytesIO(sample["png"])).size == (32, 32)
