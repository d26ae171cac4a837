"""The token table trained row by row (train/sparse_table.py) must give dense AdamW's weights
and optimiser state bit for bit, and checkpoints must resume across the two."""

import pytest

torch = pytest.importorskip("torch")

from support.train import scratch_config  # noqa: E402

from comco.train.sparse_table import RowwiseAdamW  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("single_thread")]


def _toy(sparse: bool):
    torch.manual_seed(0)
    table = torch.nn.Embedding(40, 32, sparse=sparse)  # rows a whole number of SIMD vectors wide
    head = torch.nn.Linear(32, 3)
    return table, head


def _train_toy(sparse: bool, steps: int = 12):
    table, head = _toy(sparse)
    groups = [{"params": [table.weight, head.weight], "weight_decay": 0.1},
              {"params": [head.bias], "weight_decay": 0.0}]
    kw = {"lr": 0.05, "betas": (0.9, 0.98), "eps": 1e-6, "fused": True}
    opt = RowwiseAdamW(groups, **kw) if sparse else torch.optim.AdamW(groups, **kw)
    gen = torch.Generator().manual_seed(1)
    for step in range(steps):
        # rows 0-9 only in the first steps: afterwards their moments must keep moving them,
        # as dense AdamW does; rows 30-39 never appear (decay alone); repeats sum in order
        low = 0 if step < 4 else 10
        tokens = torch.randint(low, 30, (5, 7), generator=gen)
        loss = head(table(tokens)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return table, head, opt


def test_rowwise_adamw_is_dense_adamw_bit_for_bit():
    dense = _train_toy(sparse=False)
    rows = _train_toy(sparse=True)
    for a, b in zip(dense[:2], rows[:2]):
        for pa, pb in zip(a.parameters(), b.parameters()):
            assert torch.equal(pa, pb)
    sa, sb = dense[2].state_dict()["state"], rows[2].state_dict()["state"]
    assert sa.keys() == sb.keys()
    for i in sa:
        for name in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(sa[i][name], sb[i][name]), (i, name)
    # the rows no batch used moved by the decay alone, the early rows kept moving after their last use
    assert not torch.equal(rows[0].weight[35], _toy(False)[0].weight[35])


def test_rowwise_adamw_refuses_what_it_does_not_implement():
    table, _ = _toy(True)
    with pytest.raises(ValueError, match="amsgrad"):
        RowwiseAdamW([table.weight], lr=0.1, amsgrad=True)


def _dense_only(monkeypatch):
    import comco.train.sparse_table as sparse_table

    monkeypatch.setattr(sparse_table, "sparse_token_table", lambda module: None)


def _same(a_path, b_path):
    from comco.models import load_checkpoint

    a, b = load_checkpoint(a_path), load_checkpoint(b_path)
    for key, value in a["state_dict"].items():
        assert torch.equal(value, b["state_dict"][key]), key
    return a, b


def test_scratch_training_gives_the_dense_weights_and_a_plain_table(tiny_dataset, tmp_path, monkeypatch):
    from comco.train.loop import Trainer
    from comco.train.run import build_task

    cfg = scratch_config(tiny_dataset, tmp_path / "rows", steps=6)
    task = build_task(cfg)
    trainer = Trainer(task, cfg)
    assert isinstance(trainer.optimizer, RowwiseAdamW) and trainer.table is not None
    trainer.run()
    assert task.module.token_embedding.sparse is False  # evaluation after training sees a plain table
    with monkeypatch.context() as m:
        _dense_only(m)
        from comco.train.run import run_training

        run_training(scratch_config(tiny_dataset, tmp_path / "dense", steps=6))
    a, b = _same(tmp_path / "rows" / "model.pt", tmp_path / "dense" / "model.pt")
    for i, state in a["optimizer"]["state"].items():
        for name, value in state.items():
            assert torch.equal(value, b["optimizer"]["state"][i][name]), (i, name)


def test_a_dense_checkpoint_resumes_row_by_row(tiny_dataset, tmp_path, monkeypatch):
    from comco.train.run import run_training

    with monkeypatch.context() as m:
        _dense_only(m)
        run_training(scratch_config(tiny_dataset, tmp_path / "straight", steps=8, checkpoint_every=100))
        run_training(scratch_config(tiny_dataset, tmp_path / "paused", steps=8, stop_after=3))
    run_training(scratch_config(tiny_dataset, tmp_path / "paused", steps=8,
                                resume=str(tmp_path / "paused" / "checkpoint.pt")))
    _same(tmp_path / "straight" / "model.pt", tmp_path / "paused" / "model.pt")


@pytest.mark.parametrize("kind", ["longclip", "debias"])
def test_fine_tunes_give_the_dense_weights(kind, tiny_dataset, tmp_path, monkeypatch):
    """Two text passes a step (long and short captions): their gradients still sum as dense."""
    from support.train import make_tiny_checkpoint

    from comco.models import load_checkpoint
    from comco.train.run import make_config, run_training

    init = make_tiny_checkpoint(tmp_path / "tiny.pt")

    def tune(out):
        return run_training(make_config(kind, data=str(tiny_dataset), out=str(out), init=f"ckpt:{init}",
                                        options={"pca_rank": 4}, batch_size=8, steps=4, warmup=1, lr=1e-3,
                                        weight_decay=0.1, quiet=True, device="cpu", workers=0))

    tune(tmp_path / "rows")
    with monkeypatch.context() as m:
        _dense_only(m)
        tune(tmp_path / "dense")
    a, _ = _same(tmp_path / "rows" / "model.pt", tmp_path / "dense" / "model.pt")
    before = load_checkpoint(init)["state_dict"]["token_embedding.weight"]
    assert not torch.equal(a["state_dict"]["token_embedding.weight"], before)  # the table did train


def test_a_table_whose_rows_are_not_whole_vectors_stays_dense():
    """The fused kernel rounds a row's scalar tail otherwise: no bit-exact promise, so no switch."""
    from comco.train.sparse_table import sparse_token_table

    odd, whole = torch.nn.Module(), torch.nn.Module()
    odd.token_embedding, whole.token_embedding = torch.nn.Embedding(40, 6), torch.nn.Embedding(40, 32)
    assert sparse_token_table(odd) is None and odd.token_embedding.sparse is False
    assert sparse_token_table(whole) is whole.token_embedding and whole.token_embedding.sparse is True
