"""One model reference for probe, eval, train and the lab: the same pairing of --model
with --pretrained everywhere, and the same label in every table."""

import pytest

from comco.errors import UserError
from comco.models import ModelRef, pair_models


def test_pairing_rule():
    assert pair_models(["ViT-B-32"], []) == [ModelRef("ViT-B-32", None)]
    # one --pretrained serves every open_clip model; folders and checkpoints keep their own weights
    assert pair_models(["ViT-B-32", "hf:/m", "ckpt:a.pt", "RN50"], ["openai"]) == [
        ModelRef("ViT-B-32", "openai"), ModelRef("hf:/m"), ModelRef("ckpt:a.pt"), ModelRef("RN50", "openai")]
    assert pair_models(["A", "B"], ["x", "y"]) == [ModelRef("A", "x"), ModelRef("B", "y")]
    for models, tags in ((["A", "B", "C"], ["x", "y"]), ([], [])):
        with pytest.raises(UserError):
            pair_models(models, tags)


def test_labels():
    assert ModelRef("ViT-B-32", "openai").label == "ViT-B-32 (openai)"
    assert ModelRef("ViT-S-32").label == "ViT-S-32 (none)"
    assert ModelRef("ckpt:runs/x/model.pt", "ignored").label == "ckpt:runs/x/model.pt"

