"""Training precision (issue 39): bf16 autocast where the CPU multiplies bf16 natively, fp32
elsewhere, a recipe key to force either, and the precision (with the CPU, its flags, the
library builds and the thread counts) recorded where each stage's numbers were made."""

from __future__ import annotations

from pathlib import Path

import pytest

from comco.errors import UserError
from comco.train.precision import BF16_FLAGS, cpu_flags, cpu_precision, native_bf16

EPYC = ["fpu", "sse4_2", "avx2", "avx512f", "avx512_bf16", "fma"]  # an AVX512_BF16 EPYC (Zen 4)
OLDER = ["fpu", "sse4_2", "avx2", "fma"]  # an AVX2-only x86


def test_auto_is_bf16_only_where_the_cpu_has_native_bf16(tmp_path):
    assert cpu_precision("auto", EPYC) == "bf16" and cpu_precision("auto", OLDER) == "fp32"
    assert cpu_precision("auto", ["amx_bf16"]) == "bf16" and cpu_precision("auto", []) == "fp32"
    assert cpu_precision("fp32", EPYC) == "fp32" and cpu_precision("bf16", OLDER) == "bf16"  # forced
    # the fine-tunes and the LABCLIP map measured slower in bf16: auto keeps them in fp32
    assert {cpu_precision("auto", EPYC, kind=k) for k in ("longclip", "debias", "labclip")} == {"fp32"}
    assert cpu_precision("bf16", EPYC, kind="debias") == "bf16"
    with pytest.raises(UserError, match="fp16 needs a GPU"):
        cpu_precision("fp16", EPYC)
    with pytest.raises(UserError, match="one of auto, fp32, bf16, fp16"):
        cpu_precision("half", EPYC)
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu avx2 avx512_bf16 avx512f\n\n"
                    "processor\t: 1\nflags\t\t: fpu avx2 avx512_bf16 avx512f\n")
    assert cpu_flags(info) == ["avx2", "avx512_bf16", "avx512f", "fpu"] and native_bf16(cpu_flags(info))
    assert cpu_flags(tmp_path / "missing") == []
    assert set(BF16_FLAGS) == {"avx512_bf16", "amx_bf16"}


def test_the_recipe_key_reaches_every_training_stage_and_auto_follows_the_cpu(monkeypatch):
    import comco.train.precision as precision
    from comco.lab.graph import build_stages
    from comco.lab.recipe import parse_recipe

    text = (Path(__file__).resolve().parents[1] / "recipes" / "order-bias.toml").read_text(encoding="utf-8")
    trained = ("scratch", "finetune", "labclip")

    def stages(value: str | None):
        t = text if value is None else text.replace('[scales.smoke.run]\ndevice = "cpu"',
                                                    f'[scales.smoke.run]\ndevice = "cpu"\nprecision = "{value}"', 1)
        return [s for s in build_stages(parse_recipe(t, "smoke")) if s.kind in trained]

    monkeypatch.setattr(precision, "cpu_flags", lambda *a: list(EPYC))
    auto_here = stages(None)
    assert {s.kind for s in auto_here} == set(trained)
    # auto: the scratch trainings (the colour bases too) in bf16, the fine-tunes and LABCLIP maps in fp32
    # fp32 on a CPU is what every stage had before the key: no key, the same hash as then
    of = lambda ss: {s.config.get("precision", "fp32") for s in ss}  # noqa: E731
    assert of(s for s in auto_here if s.kind == "scratch") == {"bf16"}
    assert of(s for s in auto_here if s.kind != "scratch") == {"fp32"}
    forced = stages("fp32")
    assert of(forced) == {"fp32"} and not any("precision" in s.config for s in forced)
    scratch = lambda ss: {s.hash for s in ss if s.kind == "scratch"}  # noqa: E731
    assert scratch(forced).isdisjoint(scratch(auto_here))  # a precision is part of the hash
    monkeypatch.setattr(precision, "cpu_flags", lambda *a: list(OLDER))
    assert of(stages(None)) == {"fp32"} and {s.hash for s in stages(None)} == {s.hash for s in forced}
    assert of(stages("bf16")) == {"bf16"}
    with pytest.raises(UserError, match="precision"):
        stages("fp16")


@pytest.mark.torch
def test_a_bf16_training_records_its_precision_and_differs_from_fp32(tmp_path):
    """Two steps of a tiny scratch CLIP each way: the summary and the checkpoint name the
    precision, and bf16 autocast really ran (the weights differ from fp32's)."""
    import torch
    from support.train import make_dataset

    from comco.models import load_checkpoint
    from comco.train.run import make_config, run_training

    data = make_dataset(tmp_path / "data", n=16, resolution=32)
    opts = {"resolution": 32, "vision_width": 64, "text_width": 64, "embed_dim": 64, "vision_layers": 1,
            "text_layers": 1, "context_length": 32, "vision_tower": "conv"}
    weights = {}
    for p in ("fp32", "bf16"):
        cfg = make_config("scratch", data=str(data), out=str(tmp_path / p), steps=2, batch_size=8, warmup=1,
                          quiet=True, device="cpu", workers=0, precision=p, options=opts)
        summary = run_training(cfg)
        assert summary["precision"] == p
        ckpt = load_checkpoint(tmp_path / p / "model.pt")
        assert ckpt["precision"] == p
        weights[p] = ckpt["state_dict"]
    assert any(not torch.equal(weights["fp32"][k], weights["bf16"][k]) for k in weights["fp32"])


@pytest.mark.torch
def test_the_provenance_holds_what_tells_two_runs_apart():
    """Each training and probe stage records the CPU model and its kernel flags, the torch build
    (BLAS, MKL, oneDNN), numpy's BLAS, the thread counts, the numeric environment and the
    precision; the report groups stages by all of them and prints them."""
    import torch

    from comco.lab.report.provenance import machines, where_made, where_made_paragraph
    from comco.lab.stages import provenance
    from comco.report import Doc

    rec = provenance({"device": "cpu"}, {"precision": "bf16"})
    for key in ("cpu", "cpu_flags", "cpu_flags_sha", "cpu_capability", "torch", "torch_build", "numpy_blas",
                "threads", "interop_threads", "env", "precision", "device"):
        assert key in rec, key
    assert rec["precision"] == "bf16" and rec["threads"] == torch.get_num_threads()
    assert rec["torch_build"]["sha"] and rec["torch_build"].get("blas")
    assert provenance({"device": "cpu"}, {})["precision"] == "fp32"  # a probe on a CPU
    if cpu_flags():  # Linux: the flags the kernels are chosen by
        assert rec["cpu_flags_sha"] and ("avx2" in rec["cpu_flags"]) == ("avx2" in cpu_flags())
    info = {"a": {"kind": "scratch", "summary": {"machine": rec}},
            "b": {"kind": "probe", "summary": {"machine": {**rec, "precision": "fp32"}}},
            "c": {"kind": "probe", "summary": {"machine": {**rec, "precision": "fp32", "threads": 1}}}}
    groups = machines(info)
    assert sorted(g["precision"] for g in groups) == ["bf16", "fp32"]
    assert next(g for g in groups if g["precision"] == "fp32")["threads"] == sorted({1, rec["threads"]})
    doc = Doc()
    where_made_paragraph(doc, where_made(info))
    text = doc.markdown(Path("."))
    for needle in ("precision bf16", "precision fp32", rec["cpu_flags"], rec["torch_build"]["sha"],
                   "bit-identical", "verdicts"):
        assert needle in text, needle
