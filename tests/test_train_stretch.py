"""Long-CLIP positional stretching and primary component matching."""

import pytest

torch = pytest.importorskip("torch")

from comco.train.pca import pca_reconstruct  # noqa: E402
from comco.train.stretch import stretch_table, stretch_text_positions, stretched_length  # noqa: E402

pytestmark = pytest.mark.torch


def test_stretched_length_is_248_for_clip():
    assert stretched_length(77, 20) == 248


def test_stretch_copies_interpolates_and_extrapolates():
    torch.manual_seed(0)
    table = torch.randn(77, 8, dtype=torch.float64)
    keep = 20
    new = stretch_table(table, keep)
    assert new.shape == (248, 8)
    assert torch.equal(new[:keep], table[:keep])  # copied
    for i in range(77 - 1 - keep):  # interpolated at ratio 4
        for j in range(4):
            expected = (4 - j) / 4 * table[keep + i] + j / 4 * table[keep + i + 1]
            assert torch.allclose(new[keep + 4 * i + j], expected)
    step = table[76] - table[75]
    for j in range(4):  # the last four continue the last step
        assert torch.allclose(new[244 + j], table[76] + j / 4 * step)


def _tiny_clip(context_length=77):
    import open_clip

    torch.manual_seed(0)
    return open_clip.CLIP(
        embed_dim=32, vision_cfg={"image_size": 32, "patch_size": 16, "width": 32, "layers": 1, "head_width": 32},
        text_cfg={"context_length": context_length, "vocab_size": 49408, "width": 32, "heads": 1, "layers": 1})


def test_frozen_rows_do_not_move_and_the_rest_do():
    from comco.train.task import decay_groups

    model = _tiny_clip()
    new_length = stretch_text_positions(model, keep=20)
    assert new_length == 248 and model.context_length == 248 and model.attn_mask.shape == (248, 248)
    before = model.positional_embedding.detach().clone()
    optimizer = torch.optim.AdamW(decay_groups(model, weight_decay=0.5), lr=1e-2)
    tokens = torch.randint(1, 49406, (4, 248))
    tokens[:, -1] = 49407
    model.encode_text(tokens).pow(2).sum().backward()
    optimizer.step()
    after = model.positional_embedding.detach()
    assert torch.equal(after[:20], before[:20])
    assert (after[20:] - before[20:]).abs().sum(dim=1).gt(0).all()


def test_stretched_model_reads_248_tokens():
    model = _tiny_clip()
    stretch_text_positions(model, keep=20)
    assert model.encode_text(torch.zeros(2, 248, dtype=torch.long)).shape == (2, 32)


def test_pca_reconstruction_has_rank_32():
    torch.manual_seed(0)
    features = torch.randn(64, 128, dtype=torch.float64)
    rebuilt = pca_reconstruct(features, 32)
    centred = rebuilt - rebuilt.mean(dim=0, keepdim=True)
    assert torch.linalg.matrix_rank(centred).item() == 32
    # and it is the best rank-32 approximation: what remains is orthogonal to what it keeps
    residual = features - rebuilt
    assert torch.allclose((residual * centred).sum(), torch.tensor(0.0, dtype=torch.float64), atol=1e-8)


def test_pca_passes_gradients_to_features():
    features = torch.randn(40, 16, requires_grad=True)
    pca_reconstruct(features, 4).sum().backward()
    assert features.grad is not None and features.grad.abs().sum() > 0
