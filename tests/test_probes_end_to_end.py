"""`comco probe` end to end: a tiny rendered dataset, a random ViT-S-32, every probe."""

from __future__ import annotations

import json

import pytest
from support.probes import invoke, make_dataset, tiny_open_clip

from comco.errors import UserError

pytestmark = pytest.mark.torch







@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "tiny", n=6, objects=(3, 4))


def test_probe_random_vit_s_32_end_to_end(dataset, tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = [dataset, "--model", "ViT-S-32", "--pretrained", "none", "--templates", "and", "--max-distractors", "2",
            "--bootstrap", "50", "--cache", cache, "--out", out, "--quiet"]
    r = invoke(*args)
    assert r.exit_code == 0, r.output + repr(r.exception)
    res = json.loads((out / "results.json").read_text())
    assert set(res["probes"]) == {"tor", "ior", "ior_slot", "i2tor", "matching", "toc", "ioc", "attention"}
    assert res["skipped"] == {"binding": "no colours (plan with --colors)",
                              "pairs": "no pair records (render the dataset with --pairs FACTOR)"}
    assert res["dataset"]["hash"] and res["models"][0]["identity"].startswith("open_clip/ViT-S-32/random")
    for probe_name, per_model in res["probes"].items():
        for g in per_model["ViT-S-32 (none)"]:
            for stats in g["metrics"].values():
                for s in stats:
                    assert {"n", "lo", "hi", "role"} <= set(s), probe_name
    tor3 = next(g for g in res["probes"]["tor"]["ViT-S-32 (none)"] if g["n_objects"] == 3)
    assert tor3["queries"] == 3 * 6 and tor3["skipped"] == 0  # 3 of 6 images hold 3 objects, 6 orders each
    uncond = tor3["metrics"]["unconditional"]
    assert sum(s["acc"] for s in uncond) <= 1.0 + 1e-9
    att = res["probes"]["attention"]["ViT-S-32 (none)"][0]["metrics"]["CLS attention mass in box"]
    assert all(0 <= s["mean"] <= 1 for s in att)
    md = (out / "tor.md").read_text()
    assert "| ViT-S-32 (none) |" in md and "*published:* CLIP openAI" in md
    assert (out / "ior.csv").read_text().startswith("probe,group,metric,source,model,role,value,lo,hi,n")
    assert sorted(p.name for p in (out / "plots").iterdir()) == sorted(f"{p}.png" for p in res["probes"])
    assert all(f"](plots/{p}.png)" in (out / "report.md").read_text() for p in res["probes"])

    again = invoke(*args)
    assert again.exit_code == 0
    cache_stats = json.loads((out / "results.json").read_text())["models"][0]["cache"]
    assert cache_stats["text_encoded"] == 0 and cache_stats["image_encoded"] == 0
    assert cache_stats["text_hits"] > 0 and cache_stats["image_hits"] > 0


@pytest.fixture(scope="module")
def tiny_ckpts(tmp_path_factory):
    """Two tiny open_clip checkpoints with different random weights (fast stand-ins for real models)."""
    import torch

    from comco.models import save_checkpoint

    folder = tmp_path_factory.mktemp("ckpt")
    paths = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        model, spec = tiny_open_clip()
        paths.append(save_checkpoint(folder / f"tiny{seed}.pt", kind="scratch", model=model, model_spec=spec))
    return paths


def test_two_models_share_one_table(dataset, tmp_path, tiny_ckpts):
    a, b = (f"ckpt:{p}" for p in tiny_ckpts)
    r = invoke(dataset, "--model", a, "--model", b, "--probes", "tor,ior", "--templates", "and",
               "--bootstrap", "0", "--no-cache", "--no-plots", "--out", tmp_path, "--quiet")
    assert r.exit_code == 0, repr(r.exception)
    for name in ("tor", "ior"):
        section = (tmp_path / f"{name}.md").read_text().split("## ")[1]
        assert f"| {a} |" in section and f"| {b} |" in section
    res = json.loads((tmp_path / "results.json").read_text())
    assert [m["label"] for m in res["models"]] == [a, b]
    assert res["models"][0]["identity"] != res["models"][1]["identity"]


@pytest.mark.parametrize("args, message", [
    (["{tmp}", "--model", "ViT-S-32"], "not a comco dataset"),
    (["{ds}", "--model", "ViT-S-32", "--probes", "tor,colour"], "unknown probe 'colour'; probes: tor, ior"),
    (["{ds}", "--model", "ViT-Q-99", "--probes", "tor"], "unknown model 'ViT-Q-99'"),
    (["{nosingles}", "--model", "ViT-S-32", "--probes", "ior"], "--singles"),
    (["{ds}", "--model", "ViT-S-32", "--probes", "binding"], "--colors"),
])
def test_bad_input_is_one_line_user_error(dataset, tmp_path, args, message):
    nosingles = make_dataset(tmp_path / "nosingles", n=2, objects=(3,), singles=False)
    args = [a.format(tmp=tmp_path, ds=dataset, nosingles=nosingles) for a in args]
    r = invoke(*args, "--out", tmp_path / "out", "--quiet", "--no-cache")
    assert isinstance(r.exception, UserError), r.output
    assert message in str(r.exception) and "\n" not in str(r.exception)


def test_text_only_from_an_object_set(tmp_path, tiny_ckpts):
    r = invoke("--text-only", "--object-set", "simco", "--objects", "3", "--tuples", "18", "--model",
               f"ckpt:{tiny_ckpts[0]}", "--bootstrap", "20", "--no-cache", "--no-plots", "--out", tmp_path, "--quiet")
    assert r.exit_code == 0, repr(r.exception)
    (g,) = json.loads((tmp_path / "results.json").read_text())["probes"]["tor"][f"ckpt:{tiny_ckpts[0]}"]
    assert g["queries"] == 18 and [s["role"] for s in g["metrics"]["unconditional"]] == ["1st", "2nd", "3rd"]
