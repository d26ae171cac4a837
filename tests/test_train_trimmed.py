"""Training cuts each batch's text after its longest caption (train/clip_forward.py): the
features and every gradient must be those of the full-context forward()."""

import pytest

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")

from comco.train.clip_forward import clip_features  # noqa: E402
from comco.train.losses import contrastive_loss  # noqa: E402
from comco.train.samplers import move_padding  # noqa: E402
from comco.train.scratch import initial_module  # noqa: E402

CAPTIONS = ["cube", "cone and torus", "a sphere and a cube and a cone and a long ring"]


def _model_and_batch(pads_in_front: bool):
    _, model = initial_module(0, {"resolution": 32, "vision_width": 64, "vision_layers": 1, "text_width": 64,
                                  "text_layers": 1, "embed_dim": 32, "context_length": 24})
    tokens = open_clip.SimpleTokenizer(context_length=24)(CAPTIONS)
    if pads_in_front:  # DeBias's short captions: PAD moved in front, the end-of-text moves right
        tokens = move_padding(tokens, torch.tensor([3, 0, 5]), 0)
    torch.manual_seed(1)
    return model, torch.randn(len(CAPTIONS), 3, 32, 32), tokens


def _loss_and_grads(model, image, text, trimmed: bool):
    model.zero_grad(set_to_none=True)
    if trimmed:
        feats = clip_features(model, image, text)
    else:
        feats = model(image, text)[:3]
    loss = contrastive_loss(*feats)
    loss.backward()
    return feats, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("pads_in_front", [False, True])
def test_trimmed_text_gives_the_full_forward_features_and_gradients(pads_in_front):
    model, image, text = _model_and_batch(pads_in_front)
    assert int(text.argmax(-1).max()) + 1 < text.shape[1]  # there is padding to cut
    full, full_grads = _loss_and_grads(model, image, text, trimmed=False)
    cut, cut_grads = _loss_and_grads(model, image, text, trimmed=True)
    for a, b in zip(full, cut):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert full_grads.keys() == cut_grads.keys()
    for name in full_grads:
        torch.testing.assert_close(full_grads[name], cut_grads[name], rtol=1e-4, atol=1e-5, msg=name)


def test_towers_that_see_the_padding_use_forward():
    """A text tower without a causal mask attends to every position: never cut."""
    model, image, text = _model_and_batch(False)
    model.attn_mask = None
    calls = []
    model.register_forward_hook(lambda *a: calls.append(1))
    clip_features(model, image, text)
    assert calls == [1]
