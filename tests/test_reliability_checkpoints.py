"""Issue 16 item 8 (and the checkpoint part of 15): a comco checkpoint whose model_spec asks for
absurd sizes, lacks its spec or tensors, or disagrees with its tensors, and `--pretrained` files
that are empty, garbage or for another architecture: one UserError each, nothing allocated
beyond what the file holds."""

import copy
import os

import pytest

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")

from comco.errors import UserError  # noqa: E402
from comco.models import load_model, save_checkpoint  # noqa: E402
from comco.train.scratch import scratch_cfg  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    cfg = scratch_cfg(resolution=32, patch_size=8, vision_width=32, vision_layers=1, text_width=32,
                      text_layers=1, embed_dim=32, context_length=16)
    torch.manual_seed(0)
    model = open_clip.CLIP(**copy.deepcopy(cfg))
    path = tmp_path_factory.mktemp("ckpt") / "good.pt"
    save_checkpoint(path, kind="scratch", model=model, model_spec={"open_clip_cfg": cfg})
    return path


def _edited(good, tmp_path, edit):
    ckpt = torch.load(good, weights_only=True)
    edit(ckpt)
    path = tmp_path / "edited.pt"
    torch.save(ckpt, path)
    return path


def _cfg(ckpt):
    return ckpt["model_spec"]["open_clip_cfg"]


def _huge(ckpt):  # ~13 TB if built for real
    for part in (_cfg(ckpt)["vision_cfg"], _cfg(ckpt)["text_cfg"]):
        part["width"] = 2**20
    _cfg(ckpt)["embed_dim"] = 2**20


EDITS = {
    "absurd widths": (_huge, r"embed_dim 1048576 \(1..16,384\)"),  # bounded before the meta check
    "absurd depth": (lambda c: _cfg(c)["vision_cfg"].update(layers=10**7), "layers"),
    "absurd context": (lambda c: c.update(context_length=10**9), "context_length"),
    "no spec": (lambda c: c.pop("model_spec"), "model_spec"),
    "empty spec": (lambda c: c.update(model_spec={}), "model_spec"),
    "spec of text": (lambda c: c["model_spec"].update(open_clip_cfg="ViT"), "model_spec"),
    "no tensors": (lambda c: c.pop("state_dict"), "state_dict"),
    "a tensor missing": (lambda c: c["state_dict"].pop("visual.conv1.weight"), "visual.conv1.weight missing"),
    "a tensor reshaped": (
        lambda c: c["state_dict"].update({"visual.conv1.weight": torch.zeros(3)}),
        "visual.conv1.weight",
    ),
    "an unknown config key": (lambda c: _cfg(c)["vision_cfg"].update(bogus=1), "does not build"),
    "another architecture's name": (lambda c: c.update(model_spec={"open_clip_name": "ViT-S-32"}), "tensors"),
}


@pytest.mark.parametrize("case", list(EDITS))
def test_a_damaged_comco_checkpoint_is_one_user_error(good, tmp_path, case):
    edit, words = EDITS[case]
    with pytest.raises(UserError, match=words):
        load_model(f"ckpt:{_edited(good, tmp_path, edit)}")


def test_the_undamaged_checkpoint_loads(good):
    loaded = load_model(f"ckpt:{good}")
    tokens = loaded.tokenize(["a cube"])
    assert loaded.context_length == 16 and loaded.encode_text(tokens).shape == (1, 32)


@pytest.mark.parametrize("content", [b"", os.urandom(4096)], ids=["0 bytes", "random bytes"])
def test_pretrained_files_that_are_not_weights(tmp_path, content):
    path = tmp_path / "weights.bin"
    path.write_bytes(content)
    with pytest.raises(UserError, match="does not hold weights for ViT-S-32"):
        load_model("ViT-S-32", str(path))


def test_pretrained_weights_of_another_architecture(tmp_path, good):
    path = tmp_path / "other.pt"
    torch.save(torch.load(good, weights_only=True)["state_dict"], path)
    with pytest.raises(UserError, match="does not hold weights for ViT-S-32"):
        load_model("ViT-S-32", str(path))
