"""`comco eval` end to end on fixtures with a random-weight ViT-S-32, and its bad-input exits."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from PIL import Image
from support.natural import brute_force, write_coco, write_docci, write_image
from typer.testing import CliRunner

from comco.cli.eval import app
from comco.probes.natural.images import header_problem

MODEL = ["--model", "ViT-S-32", "--pretrained", "none", "--device", "cpu", "--quiet"]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def vit_s32():
    from comco.models import load_model

    return load_model("ViT-S-32", "none", "cpu")


def bare_encode(loaded, images, texts):
    """The plainest encode loop: one batch of images, one of texts."""
    import torch
    from PIL import Image

    with torch.inference_mode():
        x = torch.stack([loaded.preprocess(Image.open(p).convert("RGB")) for p in images])
        return loaded.encode_text(loaded.tokenize(texts)).numpy(), loaded.encode_image(x).numpy()


@pytest.mark.torch
@pytest.mark.parametrize("protocol, n_texts", [("first5", 15), ("all", 16)])
def test_retrieval_equals_brute_force_on_a_bare_encode(tmp_path, vit_s32, protocol, n_texts):
    root = write_coco(tmp_path / "coco")  # 5, 6 and 5 captions: the protocols differ
    out = tmp_path / "out"
    result = invoke("retrieval", "--benchmark", "coco", "--root", root, *MODEL, "--protocol", protocol,
                    "--out", out, "--cache", tmp_path / "cache")
    assert result.exit_code == 0, result.output
    payload = json.loads((out / "results.json").read_text())
    measured = payload["models"][0]["result"]
    assert payload["protocol"] == protocol and measured["protocol"] == protocol
    assert measured["n_texts"] == n_texts and measured["n_images"] == 3

    ids = [7, 42, 139]
    per_image = {7: 5, 42: 6, 139: 5}
    texts, owners = [], []
    for index, image_id in enumerate(ids):
        kept = per_image[image_id] if protocol == "all" else min(5, per_image[image_id])
        texts += [f"image {image_id} caption {j}" for j in range(kept)]
        owners += [index] * kept
    text_emb, image_emb = bare_encode(vit_s32, [root / "val2017" / f"{i:012d}.jpg" for i in ids], texts)
    want = brute_force(text_emb @ image_emb.T, np.array(owners))
    for direction in ("t2i", "i2t"):
        for key, value in want[direction].items():
            assert measured[direction][key] == pytest.approx(value)

    assert f"protocol: **{protocol}**" in (out / "retrieval.md").read_text()
    rows = list(csv.DictReader((out / "retrieval.csv").open()))
    assert rows[0]["source"] == "measured" and rows[0]["protocol"] == protocol
    assert any(r["source"].startswith("published") for r in rows)  # COCO has published rows
    assert (out / "retrieval_r1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.torch
def test_unreadable_images_are_counted_and_reported(tmp_path):
    root = write_docci(tmp_path / "docci")
    (root / "images" / "test_00001.jpg").write_bytes(b"not an image at all")
    noise = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    truncated = root / "images" / "test_00002.jpg"
    Image.fromarray(noise).save(truncated)
    truncated.write_bytes(truncated.read_bytes()[:1500])  # the header reads, the body does not decode
    assert header_problem(truncated) is None
    out = tmp_path / "out"
    result = invoke("retrieval", "--benchmark", "docci", "--root", root, *MODEL, "--no-cache", "--out", out)
    assert result.exit_code == 0, result.output
    split = json.loads((out / "results.json").read_text())["split"]
    assert split["n_images"] == 1 and split["skipped"] == {"unreadable_image": 2}
    assert "left out of the split: 2 unreadable_image" in (out / "retrieval.md").read_text()


@pytest.mark.torch
def test_analyses_end_to_end_with_published_rows(tmp_path):
    root = write_docci(tmp_path / "docci")
    out = tmp_path / "out"
    result = invoke("analyses", "--benchmark", "docci", "--root", root, *MODEL, "--no-cache", "--out", out)
    assert result.exit_code == 0, result.output
    payload = json.loads((out / "results.json").read_text())
    analyses = payload["models"][0]["analyses"]
    assert list(analyses["padding"]["variants"]) == [f"k={k}" for k in range(6)]
    assert list(analyses["order"]["variants"]) == ["first-2", "swap-2", "first-only"]
    assert list(analyses["summary"]["variants"]) == ["keep", "move-to-4th", "remove"]
    assert analyses["order"]["direction"] == "i2t" and analyses["summary"]["n_captions"] == 3
    assert analyses["summary"]["caveat"]["captions"] == 1  # the three-sentence caption: summary went last
    for name in ("padding", "order", "summary"):
        assert (out / f"{name}.png").is_file()
        assert payload["published"][name] and all("published" in r["source"] for r in payload["published"][name])
    md = (out / "analyses.md").read_text()
    assert "protocol: **all**" in md and "| published" in md


@pytest.mark.torch
def test_analyses_on_comco_long_captions(tmp_path):
    root = tmp_path / "comco"
    records = []
    for i in range(3):
        image = f"images/{i:06d}.png"
        write_image(root / image, i)
        records.append({"id": f"{i:06d}", "image": image, "captions": {
            "and": ["a cup and a bowl"],
            "long": [f"A photo of a cup, a bowl and a car {i}. The cup is small. The bowl is blue. The car is red.",
                     "One sentence only."]}})
    (root / "dataset.json").write_text(json.dumps({"generator": "test", "counts": {"images": 3}}))
    (root / "scenes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    result = invoke("analyses", "--benchmark", "comco", "--root", root, *MODEL, "--no-cache",
                    "--analyses", "summary", "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "results.json").read_text())["models"][0]["analyses"]["summary"]
    assert summary["n_captions"] == 3 and summary["excluded_captions"] == 3  # the one-sentence captions
    assert summary["caveat"]["captions"] == 0  # four sentences: the summary really went fourth
    assert "3 captions left out" in (out / "analyses.md").read_text()


def one_line_error(result, *words):
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("comco: error:"), result.output
    for word in words:
        assert word in lines[0]


def test_unknown_benchmark_exits_2_listing_them(tmp_path):
    result = invoke("retrieval", "--benchmark", "imagenet", "--root", tmp_path, *MODEL, "--out", tmp_path / "o")
    one_line_error(result, "imagenet", "coco", "urban1k", "long-dci", "comco")


def test_root_in_another_layout_names_the_first_missing_file(tmp_path):
    write_coco(tmp_path)  # a COCO folder handed to the DOCCI loader
    result = invoke("retrieval", "--benchmark", "docci", "--root", tmp_path, *MODEL, "--out", tmp_path / "o")
    one_line_error(result, "docci_descriptions.jsonlines", "expected layout")


def test_missing_root_and_empty_split_exit_2(tmp_path):
    one_line_error(invoke("retrieval", "--benchmark", "urban1k", "--root", tmp_path / "none", *MODEL,
                          "--out", tmp_path / "o"), "not a folder")
    (tmp_path / "image").mkdir()
    (tmp_path / "caption").mkdir()
    one_line_error(invoke("retrieval", "--benchmark", "urban1k", "--root", tmp_path, *MODEL,
                          "--out", tmp_path / "o"), "empty")


def test_bad_protocol_and_analysis_exit_2(tmp_path):
    root = write_docci(tmp_path / "docci")
    one_line_error(invoke("retrieval", "--benchmark", "docci", "--root", root, *MODEL, "--protocol", "first3",
                          "--out", tmp_path / "o"), "first5", "all")
    one_line_error(invoke("analyses", "--benchmark", "docci", "--root", root, *MODEL, "--analyses", "paddng",
                          "--out", tmp_path / "o"), "paddng", "summary")


def test_analyses_on_a_short_caption_benchmark_exit_2(tmp_path):
    root = write_coco(tmp_path / "coco")
    one_line_error(invoke("analyses", "--benchmark", "coco", "--root", root, *MODEL, "--out", tmp_path / "o"),
                   "long-caption", "docci")


@pytest.mark.torch
def test_model_that_cannot_load_exits_2(tmp_path):
    root = write_docci(tmp_path / "docci")
    one_line_error(invoke("retrieval", "--benchmark", "docci", "--root", root, "--model", "ViT-Nope-32",
                          "--device", "cpu", "--quiet", "--out", tmp_path / "o"), "ViT-Nope-32")
    one_line_error(invoke("retrieval", "--benchmark", "docci", "--root", root, "--model",
                          f"ckpt:{tmp_path / 'missing.pt'}", "--device", "cpu", "--quiet",
                          "--out", tmp_path / "o"), "missing.pt")


def test_pretrained_pairs_with_models():
    from comco.errors import UserError
    from comco.models import pair_models as model_specs

    specs = model_specs(["ViT-B-16", "ckpt:a.pt"], ["openai"])
    assert [(s.name, s.pretrained) for s in specs] == [("ViT-B-16", "openai"), ("ckpt:a.pt", None)]
    assert [s.label for s in specs] == ["ViT-B-16 (openai)", "ckpt:a.pt"]
    assert [s.pretrained for s in model_specs(["A", "B"], ["x", "y"])] == ["x", "y"]
    with pytest.raises(UserError):
        model_specs(["A", "B", "C"], ["x", "y"])
