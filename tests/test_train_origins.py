"""The origins of the text-side bias as training variables (issue 26): the text tower's
attention (causal / bidirectional), the objective (CLIP's / SimCSE's) and weights saved
along a run (snapshots)."""

import json

import pytest

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")

from support.train import TINY  # noqa: E402

from comco.errors import UserError  # noqa: E402
from comco.train.clip_forward import clip_features  # noqa: E402
from comco.train.run import make_config, run_training  # noqa: E402
from comco.train.scratch import initial_module  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("single_thread")]

CAPTIONS = ["cube", "cone and torus", "sphere and cube and cone and torus"]


def _tower(attention: str, pool: str | None = None):
    options = {**TINY, "text_attention": attention, **({"text_pool": pool} if pool else {})}
    return initial_module(0, options)[1].eval()


def _tokens(captions=CAPTIONS, context_length: int = 16):
    return open_clip.SimpleTokenizer(context_length=context_length)(captions)


def _states(model, text):
    from comco.models.text_towers import token_states

    with torch.no_grad():
        return token_states(model, text)[0]


@pytest.mark.parametrize("attention,pool,depends", [("causal", None, False), ("bidirectional", "mean", True),
                                                     ("bidirectional", "first", True)])
def test_a_token_sees_later_tokens_only_without_the_causal_mask(attention, pool, depends):
    model = _tower(attention, pool)
    a = _tokens(["sphere and cube and cone"])
    b = a.clone()
    b[0, 4] = _tokens(["torus"])[0, 1]  # a later word changed (position 4 of SOT sphere and cube ...)
    before, after = _states(model, a), _states(model, b)
    earlier = (before[0, :4] - after[0, :4]).abs().max()  # states of the tokens before the changed one
    assert (before[0, 4] - after[0, 4]).abs().max() > 1e-3  # the changed token's own state moved
    if depends:
        assert earlier > 1e-3
    else:
        assert earlier < 1e-6


@pytest.mark.parametrize("pool", ["mean", "first"])
def test_bidirectional_features_do_not_depend_on_padding(pool):
    """The padding is masked and cut: a longer context, or a batch with a longer text, gives the
    same features; and training's clip_features gives the plain forward()'s features."""
    model = _tower("bidirectional", pool)
    with torch.no_grad():
        short = model.encode_text(_tokens(CAPTIONS[:2], 16))
        alone = torch.cat([model.encode_text(_tokens([c], 16)) for c in CAPTIONS[:2]])
        batch = model.encode_text(_tokens(CAPTIONS, 16))[:2]
        image = torch.randn(3, 3, 32, 32)
        plain = model(image, _tokens(CAPTIONS, 16))
        used = clip_features(model, image, _tokens(CAPTIONS, 16))
    torch.testing.assert_close(short, alone, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(short, batch, rtol=1e-5, atol=1e-6)
    for a, b in zip(plain[:3], used):
        torch.testing.assert_close(a, b)


def test_the_pooling_is_what_it_is_named():
    mean, first = _tower("bidirectional", "mean"), _tower("bidirectional", "first")
    first.load_state_dict(mean.state_dict())  # same weights: only the pooling differs
    text = _tokens(CAPTIONS[1:2])
    with torch.no_grad():
        states = _states(mean, text)[0, :int(text.argmax(-1)) + 1]  # SOT .. EOT
        proj = mean.text_projection
        torch.testing.assert_close(mean.encode_text(text)[0], states.mean(0) @ proj, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(first.encode_text(text)[0], states[0] @ proj, rtol=1e-5, atol=1e-6)


def test_the_causal_tower_is_open_clips_as_before():
    """No option, or "causal": open_clip's CLIP with the same initial weights as ever."""
    torch.manual_seed(0)
    plain = open_clip.CLIP(**initial_module(0, dict(TINY))[0]["open_clip_cfg"])
    spec, model = initial_module(0, {**TINY, "text_attention": "causal"})
    assert type(model) is open_clip.CLIP and "text_tower" not in spec
    for key, value in plain.state_dict().items():
        assert torch.equal(value, model.state_dict()[key]), key


def test_a_bidirectional_checkpoint_loads_as_bidirectional(tmp_path):
    from comco.models import load_model
    from comco.train import save_initial

    path = save_initial(tmp_path / "m.pt", 3, {**TINY, "text_attention": "bidirectional", "text_pool": "mean"})
    loaded = load_model(f"ckpt:{path}")
    _, model = initial_module(3, {**TINY, "text_attention": "bidirectional", "text_pool": "mean"})
    text = loaded.tokenize(CAPTIONS)
    with torch.no_grad():
        torch.testing.assert_close(loaded.encode_text(text), model.eval().encode_text(text, normalize=True))
    assert loaded.model.attn_mask is None


@pytest.mark.parametrize("options,word", [({"text_attention": "sideways"}, "sideways"),
                                          ({"text_attention": "bidirectional", "text_pool": "max"}, "max"),
                                          ({"text_attention": "causal", "text_pool": "mean"}, "mean"),
                                          ({"objective": "sbert"}, "sbert")])
def test_unknown_tower_and_objective_values_are_user_errors(tiny_dataset, tmp_path, options, word):
    cfg = make_config("scratch", data=str(tiny_dataset), out=str(tmp_path), steps=2, batch_size=12, device="cpu",
                      quiet=True, options={**TINY, **options})
    with pytest.raises(UserError, match=word):
        run_training(cfg)


# ---------------------------------------------------------------- SimCSE


def test_simcse_dropout_makes_two_views_in_training_only():
    from comco.train.simcse import add_text_dropout

    model = _tower("causal")
    add_text_dropout(model)
    text = _tokens(CAPTIONS)
    model.train()
    with torch.no_grad():
        assert not torch.allclose(model.encode_text(text), model.encode_text(text))
        model.eval()
        assert torch.equal(model.encode_text(text), model.encode_text(text))


def _metrics(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("objective,attention", [("simcse", "causal"), ("simcse", "bidirectional"),
                                                ("paraphrase", "causal")])
def test_a_text_only_objective_learns_the_captions_without_images(tiny_dataset, tmp_path, objective, attention):
    from comco.models import load_model
    from comco.probes import Embedder, caption_retrieval, open_dataset

    options = {**TINY, "captions": ["and"], "objective": objective, "text_attention": attention,
               **({"text_pool": "mean"} if attention == "bidirectional" else {})}
    cfg = make_config("scratch", data=str(tiny_dataset), out=str(tmp_path), steps=40, batch_size=12, lr=1e-3,
                      warmup=5, device="cpu", quiet=True, options=options)
    run_training(cfg)
    assert not (tmp_path / "cache").exists()  # no image was decoded
    losses = [m["loss"] for m in _metrics(tmp_path)]
    assert sum(losses[-5:]) / 5 < 0.5 * sum(losses[:5]) / 5, losses
    emb = Embedder(load_model(f"ckpt:{tmp_path / 'model.pt'}"), cache_dir=None)
    c2c = caption_retrieval(open_dataset(tiny_dataset), emb, "and", n_boot=0, seed=0)
    assert c2c["n"] > 10 and c2c["acc"] > 2 * c2c["chance"], c2c


def test_a_paraphrase_pair_is_two_texts_of_one_scene_where_it_has_two():
    import numpy as np

    from comco.train.paraphrase import pair_captions

    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = pair_captions(["x and y", "y and x", "x and y"], rng)
        assert {a, b} == {"x and y", "y and x"}
    assert pair_captions(["x"], rng) == ("x", "x")  # one text only: the pair is that text twice


def test_the_paraphrase_loss_rewards_the_own_pair_and_masks_copies():
    from comco.train.paraphrase import paraphrase_loss
    from comco.train.simcse import add_text_dropout

    model = _tower("causal")
    add_text_dropout(model)
    # two 1-object scenes of one name: each is paired with itself, and the other's positive,
    # the same text as the anchor, is masked (never a negative); unmasked, their logits tie
    model.eval()  # no dropout: the two copies embed identically
    text = _tokens(["cube", "cone and ring", "cube"])  # each own positive is its own text: cosine 1
    pair = _tokens(["cube", "cone and ring", "cube"])
    loss, info = paraphrase_loss(model, text, pair)
    assert torch.isfinite(loss)
    assert info["pair_acc"] == 1.0  # with the copy masked, anchor 0 cannot pick positive 2 (a tie)
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_the_paraphrase_loss_masks_a_positive_that_copies_the_anchors_own_positive():
    """Two scenes of one set drawn in the same two orders: their positives are one text, so
    neither is the other's negative (unmasked, anchor 1's two positives tie and argmax takes 0)."""
    from comco.train.paraphrase import paraphrase_loss
    from comco.train.simcse import add_text_dropout

    model = _tower("causal")
    add_text_dropout(model)
    model.eval()
    text = _tokens(["cube and cone", "cube and cone", "ring"])
    pair = _tokens(["cone and cube", "cone and cube", "ring"])
    loss, info = paraphrase_loss(model, text, pair)
    assert torch.isfinite(loss) and info["pair_acc"] == 1.0


def test_caption_retrieval_counts_the_nearest_caption_of_the_same_set():
    from comco.probes.caption_retrieval import caption_retrieval

    class Data:
        records = [{"id": str(i), "objects": [{"name": n} for n in names], "captions": {"and": caps}}
                   for i, (names, caps) in enumerate([(("a", "b"), ["a b", "b a"]), (("c", "d"), ["c d", "d c"]),
                                                      (("e",), ["e"])])]

    class Emb:  # a b / b a close together; c d nearer a b than d c; d c nearest c d
        vectors = {"a b": [1, 0, 0], "b a": [1, 0.1, 0], "c d": [0.8, 0, 0.6], "d c": [0, 0, 1], "e": [0, 1, 0]}

        def texts(self, texts):
            import numpy as np

            v = np.array([self.vectors[t] for t in texts], float)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

    res = caption_retrieval(Data(), Emb(), "and", n_boot=0, seed=0)
    # a b -> b a, b a -> a b, c d -> a b (a miss), d c -> c d; e (no other caption of its set) left out
    assert res["n"] == 4 and res["acc"] == pytest.approx(3 / 4)
    assert res["chance"] == pytest.approx(1 / 4)


def test_caption_retrieval_never_counts_a_copy_of_the_same_text():
    """At p = 1 a scene's mention orders repeat; a copy of the query's own text is not a hit."""
    from comco.probes.caption_retrieval import caption_retrieval

    class Data:
        records = [{"id": "0", "objects": [{"name": n} for n in "abc"],
                    "captions": {"and": ["a b c", "a b c", "a c b"]}},
                   {"id": "1", "objects": [{"name": n} for n in "ade"], "captions": {"and": ["a d e"]}}]

    class Emb:  # "a b c" is nearer "a d e" (same first word) than its own other order "a c b"
        vectors = {"a b c": [1, 0, 0], "a c b": [0.6, 0.8, 0], "a d e": [0.9, 0, 0.43]}

        def texts(self, texts):
            import numpy as np

            v = np.array([self.vectors[t] for t in texts], float)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

    res = caption_retrieval(Data(), Emb(), "and", n_boot=0, seed=0)
    # both copies of "a b c" retrieve "a d e" (a miss, the copy is masked); "a c b" retrieves
    # "a b c" (a hit); "a d e" has no other caption of its set
    assert res["n"] == 3 and res["acc"] == pytest.approx(1 / 3)
    # chance: "a b c" has 1 set-mate ("a c b") among its 2 other texts; "a c b" 2 among 3
    assert res["chance"] == pytest.approx((1 / 2 + 1 / 2 + 2 / 3) / 3)


# ---------------------------------------------------------------- snapshots


def test_snapshot_steps_start_untrained_and_end_at_the_last_step():
    from comco.train.snapshots import snapshot_steps

    assert snapshot_steps(1000, 8) == [0, 125, 250, 375, 500, 625, 750, 875, 1000]
    assert snapshot_steps(10, 0) == []
    assert snapshot_steps(3, 8) == [0, 1, 2, 3]


def test_log_spaced_snapshots_fall_early_from_a_hundredth_of_the_run():
    from comco.train.snapshots import snapshot_steps

    steps = snapshot_steps(1000, 12, "log")
    assert steps == [0, 10, 15, 23, 35, 53, 81, 123, 187, 285, 433, 658, 1000]
    assert sum(0 < s <= 200 for s in steps) == 8  # 8 inside the first fifth, where the small lab's biases rise
    assert snapshot_steps(1000, 1, "log") == [0, 1000]
    assert snapshot_steps(20, 12, "log") == [0, 1, 2, 4, 6, 9, 13, 20]  # steps rounding alike are saved once
    with pytest.raises(ValueError, match="spacing"):
        snapshot_steps(1000, 4, "linear")


def test_a_run_saves_its_snapshots_and_each_is_the_model_at_that_step(tiny_dataset, tmp_path):
    from comco.models import load_checkpoint, load_model
    from comco.train.snapshots import list_snapshots

    def cfg(out, steps, **kw):
        return make_config("scratch", data=str(tiny_dataset), out=str(out), steps=steps, batch_size=12, lr=1e-3,
                           warmup=2, device="cpu", quiet=True, options={**TINY, **kw})

    run_training(cfg(tmp_path / "snap", 8, checkpoints=4))
    found = list_snapshots(tmp_path / "snap")
    assert [s for s, _ in found] == [0, 2, 4, 6, 8]
    # step 0 is the untrained model; step 4 is what a 4-step stop of the same run holds
    untrained = load_checkpoint(found[0][1])["state_dict"]
    _, initial = initial_module(0, dict(TINY))
    for key, value in initial.state_dict().items():
        assert torch.equal(value, untrained[key]), key
    run_training(make_config("scratch", data=str(tiny_dataset), out=str(tmp_path / "half"), steps=8, batch_size=12,
                             lr=1e-3, warmup=2, device="cpu", quiet=True, stop_after=4,
                             options={**TINY, "checkpoints": 4}))
    half = load_checkpoint(tmp_path / "half" / "checkpoint.pt")["state_dict"]
    at4 = load_checkpoint(found[2][1])
    assert at4["step"] == 4 and "optimizer" not in at4
    for key, value in half.items():
        assert torch.equal(value, at4["state_dict"][key]), key
    assert load_model(f"ckpt:{found[-1][1]}").encode_text(load_model(f"ckpt:{found[-1][1]}").tokenize(["cube"])).shape
    # a run without the option saves none; log spacing saves the early steps
    run_training(cfg(tmp_path / "none", 3))
    assert list_snapshots(tmp_path / "none") == []
    run_training(cfg(tmp_path / "log", 8, checkpoints=3, checkpoint_spacing="log"))
    assert [s for s, _ in list_snapshots(tmp_path / "log")] == [0, 1, 8]
    with pytest.raises(UserError, match="checkpoint_spacing"):
        run_training(cfg(tmp_path / "bad", 8, checkpoints=3, checkpoint_spacing="linear"))


def test_a_development_point_reads_the_biases_and_the_gates(tiny_dataset, tmp_path):
    from comco.models import load_model
    from comco.probes import Embedder, development_point, open_dataset
    from comco.train import save_initial

    path = save_initial(tmp_path / "m.pt", 0, dict(TINY))
    point = development_point(open_dataset(tiny_dataset), Embedder(load_model(f"ckpt:{path}"), cache_dir=None))
    assert {"TOR first, 2 objects", "TOR first, 3 objects", "set R@1", "presence TOR"} <= set(point)
    assert all(0 <= v <= 1 for k, v in point.items() if v == v), point  # NaN only where no query qualifies
    data = open_dataset(tiny_dataset)
    if data.singles:  # the IOR share the half-rise steps read: the largest's share of the present-object hits
        from comco.probes.ior import ior

        emb = Embedder(load_model(f"ckpt:{path}"), cache_dir=None)
        for g in ior(data, emb, n_boot=0, seed=0)[0]:
            hits = [m["acc"] for m in g["metrics"]["unconditional"]]
            want = hits[0] / sum(hits) if sum(hits) else float("nan")
            got = point[f"IOR largest of hits, {g['n_objects']} objects"]
            assert got == pytest.approx(want, nan_ok=True)


# ---------------------------------------------------------------- a fixed temperature


def test_a_fixed_logit_scale_is_held_and_saved_while_the_learned_one_moves(tiny_dataset, tmp_path):
    from comco.models import load_checkpoint

    def train(out, **kw):
        run_training(make_config("scratch", data=str(tiny_dataset), out=str(out), steps=12, batch_size=12, lr=1e-2,
                                 warmup=2, device="cpu", quiet=True, options={**TINY, **kw}))
        return [m["logit_scale"] for m in _metrics(out)], load_checkpoint(out / "model.pt")["state_dict"]

    fixed, state = train(tmp_path / "fixed", logit_scale=10.0)
    assert fixed and all(abs(s - 10.0) < 1e-5 for s in fixed), fixed
    assert abs(float(state["logit_scale"].exp()) - 10.0) < 1e-5
    learned, state = train(tmp_path / "learned")
    assert abs(learned[-1] - learned[0]) > 1e-3, learned  # open_clip's temperature is learned from 1/0.07
    assert abs(learned[0] - 1 / 0.07) < 0.5


@pytest.mark.parametrize("value", [0.5, 101.0, float("nan"), True, "10"])
def test_a_logit_scale_out_of_range_is_a_user_error_before_training(tiny_dataset, tmp_path, value):
    with pytest.raises(UserError, match="logit-scale"):
        make_config("scratch", data=str(tiny_dataset), out=str(tmp_path / "x"), steps=2, batch_size=12,
                    device="cpu", quiet=True, options={**TINY, "logit_scale": value})
    assert not (tmp_path / "x").exists()
