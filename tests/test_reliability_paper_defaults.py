"""Issue 16 item 19: each fine-tuning kind's defaults are its paper's code's: AdamW betas
(0.9, 0.999) and eps 1e-8, Long-CLIP's long + short losses 1:1 with label smoothing 0.1,
DeBias-CLIP's 0.1 short + 0.9 long. The others stay options."""

import pytest
from typer.testing import CliRunner

from comco.cli.train import app
from comco.train.run import make_config


def test_longclip_defaults_are_the_official_code_s():
    cfg = make_config("longclip", data="d", out="o")
    assert (cfg.options["short_weight"], cfg.options["long_weight"]) == (1.0, 1.0)
    assert cfg.label_smoothing == 0.1
    assert tuple(cfg.adam_betas) == (0.9, 0.999) and cfg.adam_eps == 1e-8


def test_debias_defaults_are_its_code_s():
    cfg = make_config("debias", data="d", out="o")
    assert (cfg.options["short_weight"], cfg.options["long_weight"]) == (0.1, 0.9)
    assert tuple(cfg.adam_betas) == (0.9, 0.999) and cfg.adam_eps == 1e-8


def test_scratch_keeps_open_clip_s_from_scratch_settings():
    cfg = make_config("scratch", data="d", out="o")
    assert tuple(cfg.adam_betas) == (0.9, 0.98) and cfg.adam_eps == 1e-6


def test_a_short_weight_alone_is_lambda_as_the_lab_uses_it():
    cfg = make_config("longclip", data="d", out="o", options={"short_weight": 0.3})
    assert cfg.options["short_weight"] == 0.3 and cfg.options["long_weight"] == pytest.approx(0.7)
    cfg = make_config("longclip", data="d", out="o", options={"short_weight": 0.1, "long_weight": 1.0})
    assert (cfg.options["short_weight"], cfg.options["long_weight"]) == (0.1, 1.0)


@pytest.mark.torch
def test_the_optimiser_and_the_loss_use_them():
    import torch

    from comco.train.loop import make_optimizer
    from comco.train.losses import contrastive_loss, long_short_loss

    cfg = make_config("debias", data="d", out="o")
    opt = make_optimizer([{"params": [torch.nn.Parameter(torch.zeros(2))]}], cfg)
    assert opt.defaults["betas"] == (0.9, 0.999) and opt.defaults["eps"] == 1e-8
    torch.manual_seed(0)
    image, long, short = (torch.randn(8, 16) for _ in range(3))
    scale = torch.tensor(10.0)
    both, parts = long_short_loss(image, long, short, scale, 1.0, 4, 0.1, long_weight=1.0)
    assert both.item() == pytest.approx(parts["loss_long"] + parts["loss_short"], rel=1e-5)
    lam, parts = long_short_loss(image, long, short, scale, 0.1, 4, 0.1)
    assert lam.item() == pytest.approx(0.1 * parts["loss_short"] + 0.9 * parts["loss_long"], rel=1e-5)
    assert parts["loss_long"] == pytest.approx(contrastive_loss(image, long, scale, 0.1).item(), rel=1e-5)


def test_the_options_are_on_the_command_line():
    out = CliRunner().invoke(app, ["longclip", "--help"], env={"COLUMNS": "200"}).output
    for flag in ("--short-weight", "--long-weight", "--adam-betas", "--adam-eps"):
        assert flag in out
    r = CliRunner().invoke(app, ["debias", "--data", "x", "--out", "y", "--adam-betas", "0.9"])
    assert "--adam-betas" in str(r.exception)


def test_checkpoints_from_before_the_adam_fields_still_resume_where_nothing_changed():
    import hashlib
    import json

    from comco.train.config import RUNTIME_FIELDS, differing_fields

    def before(cfg):  # the config dict and identity hash as comco wrote them before adam_* existed
        d = {k: v for k, v in cfg.to_dict().items() if k not in ("adam_betas", "adam_eps")}
        ident = {k: v for k, v in d.items() if k not in RUNTIME_FIELDS}
        return d, hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]

    scratch = make_config("scratch", data="d", out="o")  # same optimiser as before: resumes
    saved, old_hash = before(scratch)
    assert differing_fields(saved, scratch.to_dict()) == [] and scratch.identity_hash() == old_hash
    debias = make_config("debias", data="d", out="o")  # its optimiser changed: refused, and says why
    saved, old_hash = before(debias)
    assert {"adam_betas", "adam_eps"} <= set(differing_fields(saved, debias.to_dict()))
    assert debias.identity_hash() != old_hash


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["debias", "labclip"])  # AdamW with decoupled decay; LABCLIP's plain Adam
def test_the_fused_optimiser_takes_the_per_tensor_step(kind):
    """comco fuses Adam(W) on CPUs; a few steps must land where the per-tensor loop lands."""
    import torch

    from comco.train.loop import make_optimizer

    cfg = make_config(kind, data="d", out="o", weight_decay=0.1)
    torch.manual_seed(0)
    start = [torch.randn(50, 8), torch.randn(8)]
    fused = [torch.nn.Parameter(t.clone()) for t in start]
    loop = [torch.nn.Parameter(t.clone()) for t in start]
    opt_fused = make_optimizer([{"params": fused, "weight_decay": 0.1}], cfg)
    assert opt_fused.defaults["fused"] is True
    opt_loop = type(opt_fused)([{"params": loop, "weight_decay": 0.1}], lr=cfg.lr, betas=tuple(cfg.adam_betas),
                               eps=cfg.adam_eps, fused=False)
    for _ in range(3):
        grads = [torch.randn_like(t) for t in start]
        for params, opt in ((fused, opt_fused), (loop, opt_loop)):
            for p, g in zip(params, grads):
                p.grad = g.clone()
            opt.step()
    moved = False
    for a, b, s in zip(fused, loop, start):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
        moved |= not torch.equal(a.detach(), s)
    assert moved
