"""Long-CLIP and DeBias-CLIP fine-tuning end to end on tiny models and data."""

import json

import pytest

torch = pytest.importorskip("torch")

from support.train import make_tiny_checkpoint, write_jsonl  # noqa: E402

from comco.errors import UserError  # noqa: E402
from comco.train.run import make_config, run_training  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("single_thread")]


def fine_tune(kind, data, out, init, **kw):
    options = {"pca_rank": 4, **kw.pop("options", {})}
    given = {"batch_size": 8, "steps": 3, "warmup": 1, "lr": 1e-4, "quiet": True, "device": "cpu", "workers": 0, **kw}
    return run_training(make_config(kind, data=str(data), out=str(out), init=init, options=options, **given))


@pytest.fixture(scope="module")
def tiny_init(tmp_path_factory):
    return make_tiny_checkpoint(tmp_path_factory.mktemp("init") / "tiny.pt")


@pytest.mark.parametrize("kind", ["longclip", "debias"])
def test_fine_tune_stretches_and_keeps_the_first_positions(kind, tiny_dataset, tiny_init, tmp_path):
    from comco.models import load_checkpoint, load_model

    summary = fine_tune(kind, tiny_dataset, tmp_path, f"ckpt:{tiny_init}")
    ckpt = load_checkpoint(tmp_path / "model.pt")
    init = load_checkpoint(tiny_init)
    assert ckpt["kind"] == kind and ckpt["context_length"] == 248 and summary["step"] == 3
    before, after = init["state_dict"]["positional_embedding"], ckpt["state_dict"]["positional_embedding"]
    assert after.shape == (248, 64)
    assert torch.equal(after[:20], before[:20])
    assert not torch.equal(after[20:24], before[20:24])  # trained (and stretched) rows moved
    loaded = load_model(f"ckpt:{tmp_path / 'model.pt'}")
    assert loaded.context_length == 248 and loaded.tokenize(["a cube"]).shape == (1, 248)
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert {"loss", "loss_long", "loss_short", "lr", "samples_per_s", "data_share"} <= set(logged[-1])


def test_loss_mixes_short_and_long_with_lambda(tiny_dataset, tiny_init, tmp_path):
    fine_tune("debias", tiny_dataset, tmp_path, f"ckpt:{tiny_init}", steps=1, options={"short_weight": 0.3})
    m = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert m["loss"] == pytest.approx(0.3 * m["loss_short"] + 0.7 * m["loss_long"], rel=1e-5)


def test_debias_without_long_captions_names_the_template(tmp_path, tiny_init):
    from comco.data.writer import run_plan
    from comco.plan import PlanConfig

    run_plan(PlanConfig(object_set="simco", objects=(2,), n=4, resolution=(32, 32), captions=("and",)),
             tmp_path / "short", quiet=True)
    with pytest.raises(UserError, match="'long'"):
        fine_tune("debias", tmp_path / "short", tmp_path / "out", f"ckpt:{tiny_init}")


def test_debias_on_one_sentence_captions_is_refused(tiny_dataset, tmp_path, tiny_init):
    rows = [{"image": str(p), "caption": "a cube"} for p in sorted((tiny_dataset / "images").glob("*.png"))]
    with pytest.raises(UserError, match="two or more sentences"):
        fine_tune("debias", write_jsonl(tmp_path / "d.jsonl", rows), tmp_path / "out", f"ckpt:{tiny_init}")


def test_longclip_trains_on_a_jsonl_of_image_and_caption(tiny_dataset, tiny_init, tmp_path):
    rows = [{"image": f"images/{p.name}", "caption": "A grey floor. There is a cube. There is a cone."}
            for p in sorted((tiny_dataset / "images").glob("*.png"))]
    data = write_jsonl(tiny_dataset / "captions.jsonl", rows)
    summary = fine_tune("longclip", data, tmp_path, f"ckpt:{tiny_init}", steps=2)
    assert summary["step"] == 2


@pytest.mark.parametrize("init, message", [
    ("ckpt:/nonexistent/model.pt", "not found"),
    ("NotAModel-B-99", "unknown model"),
    (None, "needs --init"),
])
def test_bad_init_is_a_user_error(init, message, tiny_dataset, tmp_path):
    with pytest.raises(UserError, match=message):
        fine_tune("longclip", tiny_dataset, tmp_path, init)
