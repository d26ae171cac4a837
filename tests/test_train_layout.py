"""The trainer stores a convolutional image tower channels-last (train/loop.py), a speed-up
that must not change what is learned beyond float rounding, and must leave a ViT alone."""

import copy

import pytest

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")

from comco.train.clip_forward import clip_features  # noqa: E402
from comco.train.loop import channels_last_convs  # noqa: E402
from comco.train.losses import contrastive_loss  # noqa: E402
from comco.train.scratch import initial_module  # noqa: E402

SMALL = {"resolution": 32, "vision_width": 64, "vision_layers": 4, "text_width": 64, "text_layers": 1,
         "embed_dim": 32, "context_length": 24}


def _grads(model, image, text):
    model.zero_grad(set_to_none=True)
    feats = clip_features(model, image, text)
    contrastive_loss(*feats).backward()
    return feats, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_a_conv_tower_goes_channels_last_and_learns_the_same():
    _, nchw = initial_module(0, {**SMALL, "vision_tower": "conv"})
    last = copy.deepcopy(nchw)
    assert channels_last_convs(last)
    conv = next(m for m in last.visual.modules() if isinstance(m, torch.nn.Conv2d))
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    assert not conv.weight.is_contiguous()
    torch.manual_seed(1)
    image = torch.randn(3, 3, 32, 32)
    text = open_clip.SimpleTokenizer(context_length=24)(["cube", "cone and torus", "a sphere and a ring"])
    nchw.train(), last.train()
    (fa, ga), (fb, gb) = _grads(nchw, image, text), _grads(last, image, text)
    for a, b in zip(fa, fb):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert ga.keys() == gb.keys()
    for name in ga:  # summation order differs: rounding relative to the gradient's own scale
        scale = float(ga[name].abs().max())
        assert float((ga[name] - gb[name]).abs().max()) <= 1e-4 * scale + 1e-7, name
    # its checkpoint loads into a model of the default layout with the same values
    fresh = initial_module(1, {**SMALL, "vision_tower": "conv"})[1]
    fresh.load_state_dict(last.state_dict())
    for (name, a), b in zip(fresh.state_dict().items(), last.state_dict().values()):
        assert torch.equal(a, b), name


def test_a_vit_keeps_its_layout():
    _, vit = initial_module(0, {**SMALL, "vision_tower": "vit"})
    assert not channels_last_convs(vit)
    assert vit.visual.conv1.weight.is_contiguous()


def test_the_trainer_stores_a_conv_tower_channels_last(tmp_path):
    from support.train import make_dataset

    from comco.train.loop import Trainer
    from comco.train.run import build_task, make_config

    data = make_dataset(tmp_path / "d", n=8, resolution=32)
    options = {**SMALL, "vision_tower": "conv", "captions": ["and"]}
    cfg = make_config("scratch", data=str(data), out=str(tmp_path / "run"), options=options, steps=1,
                      batch_size=4, warmup=1, quiet=True, device="cpu", workers=0)
    trainer = Trainer(build_task(cfg), cfg)
    conv = next(m for m in trainer.module.visual.modules() if isinstance(m, torch.nn.Conv2d))
    assert conv.weight.is_contiguous(memory_format=torch.channels_last) and not conv.weight.is_contiguous()
