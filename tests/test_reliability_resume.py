"""Issue 16 items 14 and 15 for `train --resume`: a metrics.jsonl cut mid-line (a crash while
writing) does not break the resumed run, and a checkpoint whose configuration matches but
whose tensors were damaged is one UserError, not a traceback."""

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from PIL import Image  # noqa: E402

from comco.errors import UserError  # noqa: E402
from comco.train.run import make_config, run_training  # noqa: E402

pytestmark = pytest.mark.torch
TINY = {"resolution": 32, "context_length": 16, "vision_width": 32, "text_width": 32, "embed_dim": 32,
        "vision_layers": 1, "text_layers": 1}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Planned simco records with flat-colour PNGs (the loop needs pixels, not Blender's)."""
    from comco.data.folder import Dataset
    from comco.data.writer import run_plan
    from comco.plan.planner import PlanConfig

    root = tmp_path_factory.mktemp("data")
    run_plan(PlanConfig(object_set="simco", objects=(2,), n=8, resolution=(32, 32)), root, quiet=True)
    ds = Dataset(root)
    for i, rec in enumerate(ds.records()):
        path = ds.image_path(rec)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (32, 32), (30 * i, 255 - 30 * i, 90)).save(path)
    return root


def config(data, out, **kw):
    torch.set_num_threads(1)
    given = {"batch_size": 4, "steps": 4, "warmup": 0, "lr": 1e-3, "quiet": True, "device": "cpu", "workers": 0,
             **kw}
    return make_config("scratch", data=str(data), out=str(out), options=dict(TINY), **given)


def test_resume_after_a_cut_metrics_line(data, tmp_path):
    run_training(config(data, tmp_path, stop_after=2))
    metrics = tmp_path / "metrics.jsonl"
    text = metrics.read_text()
    metrics.write_text(text + text.splitlines()[-1][:17])  # a third line cut mid-write
    summary = run_training(config(data, tmp_path, resume=str(tmp_path / "checkpoint.pt")))
    steps = [json.loads(line)["step"] for line in metrics.read_text().splitlines()]
    assert summary["step"] == 4 and steps == [1, 2, 3, 4]


def test_a_damaged_checkpoint_is_a_user_error(data, tmp_path):
    run_training(config(data, tmp_path, stop_after=1))
    path = tmp_path / "checkpoint.pt"
    ckpt = torch.load(path, weights_only=True)
    ckpt["state_dict"]["visual.conv1.weight"] = torch.zeros(2)  # same config, a tensor of the wrong shape
    torch.save(ckpt, path)
    with pytest.raises(UserError, match="damaged checkpoint"):
        run_training(config(data, tmp_path, resume=str(path)))
