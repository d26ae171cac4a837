"""Each export read by its own tool: CLIP_benchmark's retrieval evaluation (its recall equals
`comco eval retrieval` on the same model and images), open_clip_train training a tiny model
for a few steps on the CSV and on the shards, and Hugging Face `datasets` loading the folder."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import numpy as np
import pytest
from support.export import comco
from support.probes import make_dataset
from support.train import make_tiny_checkpoint, tiny_clip_cfg

from comco.data.folder import SCENES
from comco.io import read_jsonl

TINY = "comco-export-tiny"  # the tiny architecture, registered with open_clip by name


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("tools") / "ds", n=12, resolution=32, singles=False)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random CLIP as comco reads it (ckpt:) and as open_clip's tools do (a config + weights file)."""
    import torch

    folder = tmp_path_factory.mktemp("tiny")
    ckpt = make_tiny_checkpoint(folder / "tiny.pt")
    (folder / "configs").mkdir()
    (folder / "configs" / f"{TINY}.json").write_text(json.dumps(tiny_clip_cfg()))
    weights = folder / "weights.pt"
    torch.save(torch.load(ckpt, weights_only=False)["state_dict"], weights)
    return {"ckpt": ckpt, "configs": folder / "configs", "weights": weights}


@pytest.mark.torch
def test_clip_benchmark_recall_equals_comco_eval(dataset, tiny, tmp_path, capsys, monkeypatch):
    import open_clip
    from clip_benchmark import cli

    out = tmp_path / "cb"
    code, stdout, err = comco(capsys, "export", dataset, "--to", "clip-benchmark", "--template", "long", "--out", out)
    assert code == 0, err
    # the command line the export prints, run as printed (the model and weights filled in): it must
    # give comco's numbers, so every option that changes them (--no_amp) is in it
    use = shlex.split(next(x for x in stdout.splitlines() if x.startswith("read it with: ")).split(": ", 1)[1])
    use = [TINY if a == "MODEL" else str(tiny["weights"]) if a == "WEIGHTS" else a for a in use]
    code, _, err = comco(capsys, "eval", "retrieval", "--benchmark", "comco", "--root", dataset,
                         "--model", f"ckpt:{tiny['ckpt']}", "--device", "cpu", "--no-cache", "--quiet",
                         "--out", tmp_path / "eval")
    assert code == 0, err
    ours = json.loads((tmp_path / "eval" / "results.json").read_text())["models"][0]["result"]
    assert ours["n_images"] == 12 and ours["n_texts"] == sum(len(r["captions"]["long"])
                                                              for r in read_jsonl(dataset / SCENES))

    open_clip.add_model_config(tiny["configs"])
    result = tmp_path / "clip_benchmark.json"
    assert use[:2] == ["clip_benchmark", "eval"], use
    # what only changes where it runs and what it prints: no worker processes, small batches, the file
    monkeypatch.setattr(sys, "argv", [*use, "--num_workers", "0", "--batch_size", "5", "--output", str(result),
                                      "--quiet"])
    cli.main()
    theirs = json.loads(result.read_text())["metrics"]
    pairs = {}
    for k in (1, 5, 10):
        pairs[f"t2i R@{k}"] = (theirs[f"image_retrieval_recall@{k}"], ours["t2i"][f"R@{k}"])
        pairs[f"i2t R@{k}"] = (theirs[f"text_retrieval_recall@{k}"], ours["i2t"][f"R@{k}"])
    for name, (a, b) in pairs.items():
        assert a == pytest.approx(b, abs=1e-6), (name, pairs)
    assert any(0 < b < 1 for _, b in pairs.values()), pairs  # a comparison that could have differed


def open_clip_train(tiny, logs, *args) -> subprocess.CompletedProcess:
    """`open_clip_train.main` in its own process (it sets up logging and seeds globally), with the
    tiny architecture registered, initialised from the tiny weights, on the CPU."""
    code = ("import sys, open_clip; open_clip.add_model_config(sys.argv[1]); "
            "from open_clip_train.main import main; sys.exit(main(sys.argv[2:]))")
    return subprocess.run(
        [sys.executable, "-c", code, str(tiny["configs"]), "--model", TINY, "--pretrained", str(tiny["weights"]),
         "--batch-size", "4", "--epochs", "1", "--workers", "0", "--device", "cpu", "--precision", "fp32",
         "--lr", "1e-3", "--warmup", "1", "--seed", "0", "--logs", str(logs), "--name", "run",
         "--report-to", "none", "--log-every-n-steps", "1", "--save-frequency", "1", *map(str, args)],
        capture_output=True, text=True, timeout=300)


def trained_and_changed(tiny, logs, samples: int) -> None:
    import torch

    log = (logs / "run" / "out.log").read_text()
    assert f"[{samples}/{samples} (100%)]" in log, log[-2000:]  # every sample seen: 3 steps of 4
    losses = [float(line.split("Loss: ")[1].split()[0]) for line in log.splitlines() if "Loss: " in line]
    assert len(losses) == 3 and all(np.isfinite(losses)), losses
    after = torch.load(logs / "run" / "checkpoints" / "epoch_1.pt", weights_only=False)["state_dict"]
    before = torch.load(tiny["weights"], weights_only=False)
    assert set(after) == set(before)
    assert any(not torch.equal(after[k], before[k]) for k in before)  # the steps moved the weights


@pytest.mark.torch
def test_open_clip_train_trains_on_the_csv(dataset, tiny, tmp_path, capsys):
    out = tmp_path / "csv"
    code, _, err = comco(capsys, "export", dataset, "--to", "open-clip-csv", "--mention-orders", "first", "--out", out)
    assert code == 0, err
    r = open_clip_train(tiny, tmp_path / "logs", "--train-data", out / "train.csv", "--dataset-type", "csv",
                        "--csv-img-key", "filepath", "--csv-caption-key", "title", "--csv-separator", "\t")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    trained_and_changed(tiny, tmp_path / "logs", 12)


@pytest.mark.torch
def test_open_clip_train_trains_on_the_shards(dataset, tiny, tmp_path, capsys):
    out = tmp_path / "wds"
    code, _, err = comco(capsys, "export", dataset, "--to", "open-clip-wds", "--mention-orders", "first",
                         "--shard-count", "5", "--out", out)
    assert code == 0, err
    shards = json.loads((out / "sizes.json").read_text())
    assert list(shards) == ["00000.tar", "00001.tar", "00002.tar"]
    # no --train-num-samples: open_clip_train counts the samples from sizes.json
    r = open_clip_train(tiny, tmp_path / "logs", "--train-data", f"{out}/{{00000..00002}}.tar",
                        "--dataset-type", "webdataset")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    trained_and_changed(tiny, tmp_path / "logs", 12)


def test_datasets_loads_the_hf_folder_with_captions_and_objects(tmp_path, capsys):
    import datasets
    from PIL import Image

    colored = make_dataset(tmp_path / "ds", n=5, resolution=32, singles=False, colors=True)
    out = tmp_path / "hf"
    code, _, err = comco(capsys, "export", colored, "--to", "hf", "--template", "attributes", "--out", out)
    assert code == 0, err
    ds = datasets.load_dataset("imagefolder", data_dir=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    recs = list(read_jsonl(colored / SCENES))
    assert ds.num_rows == len(recs)
    assert {"image", "text", "captions", "mention_orders", "objects"} <= set(ds.column_names)
    by_id = {row["id"]: row for row in ds}
    for r in recs:
        row = by_id[r["id"]]
        assert row["captions"] == r["captions"]["attributes"] and row["text"] == r["captions"]["attributes"][0]
        assert row["mention_orders"] == r["mention_orders"]
        objects = row["objects"]
        assert objects["name"] == [o["name"] for o in r["objects"]]
        assert objects["color"] == [o["color"] for o in r["objects"]] and all(objects["color"])
        assert objects["size_rank"] == [o["size_rank"] for o in r["objects"]]
        assert objects["bbox"] == [o["measured"]["bbox"] for o in r["objects"]]
        assert objects["pixels"] == [o["measured"]["pixels"] for o in r["objects"]]
        want = np.asarray(Image.open(colored / r["image"]).convert("RGB"))
        assert np.array_equal(np.asarray(row["image"].convert("RGB")), want)
