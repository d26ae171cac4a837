"""The field's fixes (comco.train.fixes, issue 39): SigLIP's loss against a hand computation,
NegCLIP's foils are foils (and its shuffles true descriptions), order-augmented positives
are positives, the free Long-CLIP positions move, and the fixes recipe's keys."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from comco.train.fixes import FOIL_KINDS, foil, foil_kinds, mentions, reorder, vocabulary

VOCAB = ["cone", "cube", "cross", "mug", "sphere"]


def test_foils_are_foils():
    rng = np.random.default_rng(0)
    caption = "cube and cone and cross"
    kinds = set()
    for _ in range(200):
        kind, text = foil(caption, VOCAB, rng)
        kinds.add(kind)
        assert text != caption
        if kind == "swap":  # one mention replaced by an object the caption does not name
            new = [m for m in mentions(text) if m not in mentions(caption)]
            assert len(new) == 1 and new[0] in VOCAB
            assert len(set(mentions(text)) & set(mentions(caption))) == 2
        if kind == "shuffle":  # NegCLIP's shuffle: the same objects in another order, a true description
            assert sorted(mentions(text)) == sorted(mentions(caption))
    assert kinds == {"swap", "shuffle"}  # simco names have no attributes to swap


def test_orderpos_foils_never_reorder_and_attributes_swap():
    rng = np.random.default_rng(1)
    for _ in range(100):
        kind, text = foil("cube and cone", VOCAB, rng, ("swap", "attribute"))
        assert kind == "swap" and sorted(mentions(text)) != ["cone", "cube"]
    assert "attribute" in foil_kinds("red cube and blue cone", VOCAB)
    assert foil_kinds("cube", ["cube"]) == []  # one mention, nothing absent: no foil
    assert foil("cube", ["cube"], rng) is None
    assert FOIL_KINDS == ("swap", "attribute", "shuffle")


def test_order_augmented_positives_are_positives():
    rng = np.random.default_rng(2)
    caption = "cube and cone and cross and mug"
    seen = set()
    for _ in range(400):
        text = reorder(caption, rng)
        assert sorted(mentions(text)) == sorted(mentions(caption))
        seen.add(text)
    assert len(seen) == math.factorial(4)  # every mention order is drawn
    assert vocabulary(["cube and cone", "mug"]) == ["cone", "cube", "mug"]


def test_siglip_loss_by_hand():
    import torch

    from comco.train.fixes import SIGLIP_INIT_BIAS, SIGLIP_INIT_SCALE, siglip_loss

    image = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    text = torch.tensor([[3.0, 0.0], [1.0, 1.0]])
    t, b = math.exp(SIGLIP_INIT_SCALE), SIGLIP_INIT_BIAS
    cos = [[1.0, 1 / math.sqrt(2)], [0.0, 1 / math.sqrt(2)]]
    total = 0.0
    for i in range(2):
        for j in range(2):
            z = 1.0 if i == j else -1.0
            total += -math.log(1 / (1 + math.exp(-z * (t * cos[i][j] + b))))
    got = siglip_loss(image, text, torch.tensor(t), torch.tensor(b))
    assert got.item() == pytest.approx(total / 2, rel=1e-5)
    assert t == pytest.approx(10.0) and b == -10.0


def test_negclip_loss_foils_only_in_image_to_text():
    import torch
    import torch.nn.functional as F

    from comco.train.fixes import negclip_loss

    g = torch.Generator().manual_seed(0)
    image, text, foils = (torch.randn(3, 4, generator=g) for _ in range(3))
    scale = torch.tensor(5.0)
    i, t, f = (F.normalize(x, dim=-1) for x in (image, text, foils))
    target = torch.arange(3)
    i2t = F.cross_entropy(torch.cat([5 * i @ t.T, 5 * i @ f.T], 1), target)
    t2i = F.cross_entropy(5 * t @ i.T, target)
    assert negclip_loss(image, text, foils, scale).item() == pytest.approx(((i2t + t2i) / 2).item(), rel=1e-5)
    # rows without a foil leave their foil out; foils identical to the captions double every
    # image's candidates: log 2 more in the image-to-text term, half of it in the mean
    none = torch.tensor([False, False, False])
    plain = (F.cross_entropy(5 * i @ t.T, target) + t2i) / 2
    assert negclip_loss(image, text, foils, scale, none).item() == pytest.approx(plain.item(), rel=1e-5)
    doubled = negclip_loss(image, text, text, scale).item()
    assert doubled - plain.item() == pytest.approx(math.log(2) / 2, rel=1e-4)


def test_free_positions_are_not_frozen():
    import torch
    from torch import nn

    from comco.train.stretch import stretch_text_positions

    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.positional_embedding = nn.Parameter(torch.randn(12, 4))
            self.attn_mask = None
            self.context_length = 12

    for freeze in (True, False):
        tower = Tower()
        stretch_text_positions(tower, keep=4, freeze=freeze)
        tower.positional_embedding.sum().backward()
        moved = tower.positional_embedding.grad[:4].abs().sum().item()
        assert (moved == 0) == freeze


def test_fixes_recipe_keys_and_variants():
    from comco.lab.recipe import load_recipe

    recipe = load_recipe(Path("recipes/fixes.toml"), "small")
    names = [v["name"] for v in recipe.settings["scratch"]["variants"]]
    assert names == ["siglip", "negclip", "negclip-orderpos", "orderaug"]
    ft = {v["name"]: v for v in recipe.settings["finetune"]["variants"]}
    assert ft["longclip-free"]["freeze"] is False and "freeze" not in ft["longclip"]
    assert recipe.settings["data"]["order_bias"] == [0.0, 1.0]


def test_siglip_bias_is_a_named_key_of_the_siglip_variant_only():
    """Issue 39: SigLIP's code initialises b = -10 (the prior log-odds of a positive at its batch of
    32k); at the small scale's batch of 64 a recipe may set b = -log 64 on the siglip variant."""
    from comco.errors import UserError
    from comco.lab.graph import build_stages
    from comco.lab.recipe import parse_recipe

    text = (Path(__file__).resolve().parent.parent / "recipes" / "fixes.toml").read_text(encoding="utf-8")
    assert "\nsiglip_bias = -4.16\n" in text  # the shipped recipe's deviation
    plain = build_stages(parse_recipe(text.replace("\nsiglip_bias = -4.16\n", "\n"), "smoke"))
    assert not any("siglip_bias" in s.config for s in plain)
    biased = build_stages(parse_recipe(text, "smoke"))
    siglip = [s for s in biased if s.kind == "scratch" and "siglip" in s.id]
    assert siglip and all(s.config["siglip_bias"] == -4.16 for s in siglip)
    others = {s.id: s.hash for s in biased if "siglip" not in s.id and s.kind != "report"}
    assert others == {s.id: s.hash for s in plain if "siglip" not in s.id and s.kind != "report"}
    wrong = 'objective = "orderaug"\n'
    with pytest.raises(UserError, match="siglip_bias' is set, but .*orderaug"):
        parse_recipe(text.replace(wrong, wrong + "siglip_bias = -4.16\n", 1), "smoke")


def test_siglip_bias_initialises_the_models_bias():
    from comco.train.scratch import model_spec_of

    spec = model_spec_of({"objective": "siglip", "siglip_bias": -4.16, "resolution": 32})
    assert spec["open_clip_cfg"]["init_logit_bias"] == -4.16
    assert model_spec_of({"objective": "siglip", "resolution": 32})["open_clip_cfg"]["init_logit_bias"] == -10.0
