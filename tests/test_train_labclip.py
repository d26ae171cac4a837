"""LABCLIP: a linear map on text embeddings learns attribute binding that a frozen
model's cosine similarity cannot express."""

import json
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from support.train import make_dataset, make_tiny_checkpoint, tiny_clip_cfg  # noqa: E402

from comco.train.labclip import LabclipTask, binding_accuracy  # noqa: E402
from comco.train.negatives import swap_words  # noqa: E402
from comco.train.run import make_config, run_training  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("single_thread")]

D = 32


def planted(n=600, seed=0):
    """Two objects with colours per image. Image and caption share a bag-of-words part
    (dims 0-15); the colour-object bindings sit in dims 16-23 of the caption but in
    dims 24-31 of the image, so cosine similarity cannot see them until a linear map
    moves them. The swapped negative has the same bag and other bindings."""
    rng = np.random.default_rng(seed)
    colours, objects = rng.normal(size=(4, 16)), rng.normal(size=(6, 16))
    pair = rng.normal(size=(4, 6, 8))
    image, text, negative, index = [], [], [], []
    for i in range(n):
        o1, o2 = rng.choice(6, size=2, replace=False)
        c1, c2 = rng.choice(4, size=2, replace=False)
        bag = colours[c1] + colours[c2] + objects[o1] + objects[o2]
        bind, swapped = pair[c1, o1] + pair[c2, o2], pair[c2, o1] + pair[c1, o2]
        noise = lambda: 0.05 * rng.normal(size=D)  # noqa: E731
        image.append(np.concatenate([bag, np.zeros(8), bind]) + noise())
        text.append(np.concatenate([bag, bind, np.zeros(8)]) + noise())
        negative.append(np.concatenate([bag, swapped, np.zeros(8)]) + noise())
        index.append(i)
    as_tensor = lambda a: torch.tensor(np.array(a), dtype=torch.float32)  # noqa: E731
    return {"image": as_tensor(image), "text": as_tensor(text), "negative": as_tensor(negative)}, index


def test_labclip_on_planted_embeddings_beats_chance(tmp_path):
    import open_clip

    embeddings, index = planted()
    cfg = make_config("labclip", data="planted", out=str(tmp_path), batch_size=64, epochs=40, lr=1e-2,
                      quiet=True, device="cpu")
    base = open_clip.CLIP(**tiny_clip_cfg(width=D))
    task = LabclipTask(embeddings, index, cfg, base=base,
                       model_spec={"open_clip_name": "tiny", "open_clip_cfg": tiny_clip_cfg(width=D)})
    from comco.train.loop import train

    summary = train(task, cfg)
    before, after = summary["binding_before"]["test"], summary["binding_after"]["test"]
    assert summary["n_test"] == 60
    assert before < 0.65, before  # chance: the identity map cannot see the bindings
    assert after > 0.9, after
    report = json.loads((tmp_path / "binding.json").read_text())
    assert report["binding_after"]["test"] == after
    stat = report["binding_stats"]["after"]["test"]  # count, 95 % interval and chance beside the number
    assert stat["n"] == 60 and stat["chance"] == 0.5 and stat["acc"] == pytest.approx(after)
    assert 0.5 < stat["lo"] <= stat["acc"] <= stat["hi"] <= 1
    from comco.models import load_checkpoint

    ckpt = load_checkpoint(tmp_path / "model.pt")
    assert ckpt["kind"] == "labclip" and ckpt["text_map"].shape == (D, D)
    assert binding_accuracy(embeddings["image"][task.test_rows], embeddings["text"][task.test_rows],
                            embeddings["negative"][task.test_rows], ckpt["text_map"]) == after


def test_binding_accuracy_counts_images_closer_to_their_caption():
    image = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    text = torch.tensor([[1.0, 0.1], [0.0, 1.0], [0.0, 2.0]])
    negative = torch.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    assert binding_accuracy(image, text, negative) == pytest.approx(2 / 3)
    assert binding_accuracy(image, text, negative, torch.eye(2)) == pytest.approx(2 / 3)
    swap_axes = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    assert binding_accuracy(image, text, negative, swap_axes) == pytest.approx(1 / 3)


def test_swap_words_exchanges_attributes_first():
    rng = np.random.default_rng(0)
    assert swap_words("a red cube and a blue sphere", rng) == "a blue cube and a red sphere"
    swapped = swap_words("a dog chasing a cat", rng)
    assert sorted(swapped.split()) == sorted("a dog chasing a cat".split()) and swapped != "a dog chasing a cat"
    assert swap_words("a cube", rng) == "a cube"


def test_labclip_end_to_end_on_a_colour_dataset(tmp_path, capsys):
    data = make_dataset(tmp_path / "colours", n=20, colors=True, objects=(2,))
    init = make_tiny_checkpoint(tmp_path / "tiny.pt")
    summary = run_training(make_config("labclip", data=str(data), out=str(tmp_path / "out"), init=f"ckpt:{init}",
                                       batch_size=16, steps=5, quiet=True, device="cpu"))
    assert summary["step"] == 5
    assert {"train", "test"} <= set(summary["binding_before"]) and (tmp_path / "out" / "binding.json").is_file()
    from comco.cli.train import _report

    _report("labclip", summary)  # the printed lines carry the count, the interval, chance and the too-few rule
    out = capsys.readouterr().out
    assert " -> " not in out.split("binding accuracy")[1]  # no bare "0.556 -> 0.556"
    lines = [x for x in out.splitlines() if x.startswith(("  held-out before", "  held-out after"))]
    n_test = summary["n_test"]
    assert len(lines) == 2 and n_test < 20
    for line in lines:
        assert f"n={n_test}" in line and "chance 50.0 %" in line and "too few to read" in line
        assert re.search(r"\[\d+\.\d-\d+\.\d\]", line), line
    change = [x for x in out.splitlines() if x.startswith("  held-out change")]
    assert len(change) == 1 and re.search(r"[+-]\d+\.\d points \[[+-]\d+\.\d, [+-]\d+\.\d\]", change[0])
    assert out.strip().splitlines()[-1] == f"open {tmp_path / 'out' / 'report.html'}"
    page = (tmp_path / "out" / "report.md").read_text()  # the page: count, interval, chance, too-few rule
    assert "| chance |" in page and "images: too few to read" in page and "| 50.0 |" in page
    assert (tmp_path / "out" / "report.html").read_text().startswith("<!doctype html>")
    from comco.models import load_model

    mapped = load_model(f"ckpt:{tmp_path / 'out' / 'model.pt'}")
    assert mapped.text_map is not None and mapped.text_map.shape == (64, 64)
