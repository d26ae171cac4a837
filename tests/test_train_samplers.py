"""Short-caption samplers (Long-CLIP, DeBias-CLIP) and the padding move."""

from collections import Counter

import numpy as np
import pytest

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")

from comco.train.samplers import ShortCaptionSampler, draw_pad_counts, move_padding, sample_rng, trailing_pads  # noqa: E402

pytestmark = pytest.mark.torch

SUMMARY = "A photo of a cube, a sphere, a cone and a torus on a grey floor."
DETAILS = ["The cube is large and stands in the centre.", "At the top left, there is a small sphere.",
           "The small cone is placed at the bottom right.", "The torus is small and stands at the top right."]
LONG = " ".join([SUMMARY, *DETAILS])
SOT, EOT = 49406, 49407


def draws(sampler, n=4000, caption=LONG):
    return [sampler.short_caption(caption, sample_rng(0, 0, i, 1)) for i in range(n)]


def test_longclip_short_caption_is_the_summary():
    sampler = ShortCaptionSampler.for_kind("longclip")
    assert set(draws(sampler, 20)) == {SUMMARY}


def test_debias_never_uses_the_summary_when_other_sentences_exist():
    sampler = ShortCaptionSampler.for_kind("debias")
    for short in draws(sampler, 500):
        assert "A photo of" not in short
        assert short  # never empty
    # a caption of one sentence keeps it (there is nothing else to say)
    assert draws(sampler, 5, caption=SUMMARY) == [SUMMARY] * 5


def test_debias_draws_sentence_counts_uniformly_in_random_order():
    sampler = ShortCaptionSampler.for_kind("debias")
    shorts = draws(sampler)
    counts = Counter(sum(s.count(d) for d in DETAILS) for s in shorts)
    assert set(counts) == {1, 2, 3, 4}
    for n in (1, 2, 3, 4):  # U{1..4}: 1000 expected each; 5 sigma is about 137
        assert abs(counts[n] - 1000) < 140, counts
    pairs = Counter(s.split(". ")[0] for s in shorts if sum(s.count(d) for d in DETAILS) == 4)
    assert len(pairs) == 4  # every sentence leads sometimes: the order is random
    for s in shorts:  # sampled without replacement
        assert all(s.count(d) <= 1 for d in DETAILS)


def test_switches_reproduce_the_ablation():
    keep_summary = ShortCaptionSampler.for_kind("debias", remove_summary=False)
    assert any(SUMMARY in s for s in draws(keep_summary, 200))
    no_sample = ShortCaptionSampler.for_kind("debias", sample=False)
    assert set(draws(no_sample, 20)) == {DETAILS[0]}
    all_off = ShortCaptionSampler.for_kind("debias", remove_summary=False, sample=False, pad=False)
    assert all_off == ShortCaptionSampler.for_kind("longclip")


def test_padding_goes_between_sot_and_text_and_no_text_is_cut():
    tokenizer = open_clip.SimpleTokenizer(context_length=32)
    tokens = tokenizer(["a cube", "a small red sphere at the top left", "x " * 40])
    rngs = [sample_rng(0, 0, i, 2) for i in range(3)]
    available = trailing_pads(tokens)
    assert available.tolist()[2] == 0  # truncated row: nothing to move
    for _ in range(50):
        n_pre = draw_pad_counts(tokens, rngs)
        assert (n_pre >= 0).all() and (n_pre <= available).all()
        moved = move_padding(tokens, n_pre)
        for row, new, k in zip(tokens, moved, n_pre.tolist()):
            assert new[0] == SOT
            assert (new[1:1 + k] == 0).all()
            text = row[1:row.tolist().index(EOT) + 1]
            assert torch.equal(new[1 + k:1 + k + len(text)], text)  # text and EOT intact, in order
            assert (new[1 + k + len(text):] == 0).all()


def test_pad_counts_cover_zero_to_all():
    tokenizer = open_clip.SimpleTokenizer(context_length=16)
    tokens = tokenizer(["a cube"] * 2000)  # SOT a cube EOT + 12 pads
    rngs = [sample_rng(0, 0, i, 2) for i in range(2000)]
    counts = Counter(draw_pad_counts(tokens, rngs).tolist())
    assert set(counts) == set(range(13))
    assert max(counts.values()) < 2 * min(counts.values())  # U{0..12}


def test_moved_padding_keeps_the_pooled_token_at_eot():
    torch.manual_seed(0)
    model = open_clip.CLIP(
        embed_dim=32, vision_cfg={"image_size": 32, "patch_size": 16, "width": 32, "layers": 1, "head_width": 32},
        text_cfg={"context_length": 24, "vocab_size": 49408, "width": 32, "heads": 1, "layers": 1})
    model.eval()
    tokens = open_clip.SimpleTokenizer(context_length=24)(["a cube and a sphere"] * 3)
    moved = move_padding(tokens, torch.tensor([0, 5, int(trailing_pads(tokens)[0])]))
    eot_positions = (moved == EOT).nonzero()[:, 1]
    assert torch.equal(moved.argmax(dim=-1), eot_positions)  # open_clip pools argmax(ids)
    # the encoder's output is the final hidden state at EOT, wherever EOT now is
    captured = {}
    model.ln_final.register_forward_hook(lambda m, i, o: captured.setdefault("x", o))
    features = model.encode_text(moved)
    at_eot = captured["x"][torch.arange(3), eot_positions] @ model.text_projection
    assert torch.allclose(features, at_eot, atol=1e-6)
    # and moving pads changes the feature (the text now sits at other positions)
    assert not torch.allclose(features[0], features[1], atol=1e-4)


def test_sampling_is_reproducible_per_sample():
    sampler = ShortCaptionSampler.for_kind("debias")
    a = sampler.short_caption(LONG, sample_rng(3, 1, 7, 1))
    b = sampler.short_caption(LONG, sample_rng(3, 1, 7, 1))
    assert a == b
    assert len({sampler.short_caption(LONG, np.random.default_rng(i)) for i in range(50)}) > 10
