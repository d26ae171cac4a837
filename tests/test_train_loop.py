"""The one training loop on the scratch task: learning, checkpoints, resumption, errors."""

import json

import pytest

torch = pytest.importorskip("torch")

from support.train import scratch_config  # noqa: E402

from comco.errors import UserError  # noqa: E402
from comco.train.run import run_training  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("single_thread")]





def metrics(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_scratch_loss_goes_down(tiny_dataset, tmp_path):
    summary = run_training(scratch_config(tiny_dataset, tmp_path, steps=50))
    losses = [m["loss"] for m in metrics(tmp_path)]
    assert len(losses) == 50 and summary["step"] == 50
    assert sum(losses[-5:]) / 5 < 0.6 * sum(losses[:5]) / 5, losses


def test_checkpoint_loads_through_ckpt_and_embeds(tiny_dataset, tmp_path):
    from comco.models import load_model

    run_training(scratch_config(tiny_dataset, tmp_path, steps=3))
    loaded = load_model(f"ckpt:{tmp_path / 'model.pt'}")
    assert loaded.context_length == 16
    from PIL import Image

    image = loaded.preprocess(Image.new("RGB", (64, 64))).unsqueeze(0)
    assert image.shape == (1, 3, 32, 32)
    assert loaded.encode_image(image).shape == (1, 64)
    assert loaded.encode_text(loaded.tokenize(["a cube"])).shape == (1, 64)


def test_stop_and_resume_gives_the_same_weights(tiny_dataset, tmp_path):
    from comco.models import load_checkpoint

    straight = tmp_path / "straight"
    run_training(scratch_config(tiny_dataset, straight, steps=8, checkpoint_every=100))
    paused = tmp_path / "paused"
    first = run_training(scratch_config(tiny_dataset, paused, steps=8, stop_after=3))
    assert first["step"] == 3 and (paused / "checkpoint.pt").is_file() and not (paused / "model.pt").exists()
    run_training(scratch_config(tiny_dataset, paused, steps=8, resume=str(paused / "checkpoint.pt")))
    a = load_checkpoint(straight / "model.pt")
    b = load_checkpoint(paused / "model.pt")
    assert a["step"] == b["step"] == 8
    for key, value in a["state_dict"].items():
        assert torch.equal(value, b["state_dict"][key]), key
    assert [m["step"] for m in metrics(paused)] == list(range(1, 9))
    assert [m["loss"] for m in metrics(paused)] == [m["loss"] for m in metrics(straight)]


def test_resume_from_another_configuration_is_refused(tiny_dataset, tmp_path):
    run_training(scratch_config(tiny_dataset, tmp_path, steps=4, stop_after=1))
    with pytest.raises(UserError, match="--lr"):
        run_training(scratch_config(tiny_dataset, tmp_path, steps=4, lr=1e-4, resume=str(tmp_path / "checkpoint.pt")))


def test_data_order_is_deterministic_and_seeded(tiny_dataset, tmp_path):
    a = run_training(scratch_config(tiny_dataset, tmp_path / "a", steps=3))
    b = run_training(scratch_config(tiny_dataset, tmp_path / "b", steps=3))
    c = run_training(scratch_config(tiny_dataset, tmp_path / "c", steps=3, seed=1))
    assert a["last"]["loss"] == b["last"]["loss"] != c["last"]["loss"]


@pytest.mark.parametrize("given, message", [
    ({"batch_size": 0}, "--batch-size 0"),
    ({"batch_size": 12, "accum": 5}, "not divisible by --accum"),
    ({"batch_size": 64}, "fewer than one batch"),
])
def test_bad_batch_settings_are_user_errors(tiny_dataset, tmp_path, given, message):
    with pytest.raises(UserError, match=message):
        run_training(scratch_config(tiny_dataset, tmp_path, **given))


def test_accumulation_matches_one_big_batch_when_the_loss_is_per_sample(tiny_dataset, tmp_path):
    # with accumulation each micro-batch has its own negatives; the run must still work and save
    summary = run_training(scratch_config(tiny_dataset, tmp_path, accum=2, steps=2))
    assert summary["step"] == 2 and (tmp_path / "model.pt").is_file()


def test_a_run_shorter_than_its_warmup_says_so_in_one_line(tiny_dataset, tmp_path, capsys):
    """Issue 37 item 6: the README's DeBias walk-through ran 2 steps of a 200-step warm-up, so its
    learning rate stayed at 1e-8 and it trained nothing, without a word."""
    from comco.train.schedule import short_warmup

    assert short_warmup(200, 2, 1e-6) == ("2 steps end inside the 200-step warm-up: the learning rate peaks at "
                                          "1.0e-08 instead of 1.0e-06; pass --warmup 0 (or train at least 200 "
                                          "steps)")
    assert short_warmup(200, 200, 1e-6) is None and short_warmup(0, 2, 1e-6) is None
    run_training(scratch_config(tiny_dataset, tmp_path / "short", steps=2, warmup=50, quiet=False))
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("comco: ")]
    assert lines == ["comco: 2 steps end inside the 50-step warm-up: the learning rate peaks at "
                     f"{1e-3 * 2 / 50:.1e} instead of 1.0e-03; pass --warmup 0 (or train at least 50 steps)"]
    run_training(scratch_config(tiny_dataset, tmp_path / "long", steps=4, warmup=2, quiet=False))
    assert "warm-up" not in capsys.readouterr().err
