"""The papers' release files (`longclip:PATH`, `debias:PATH`): tiny random files in the
published layouts load, and comco's features equal the papers' forward pass computed from
the same tensors (tests/support/paper_checkpoints.py); bad files end in one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from support import paper_checkpoints as paper  # noqa: E402
from support.probes import invoke, make_dataset  # noqa: E402

from comco.errors import UserError  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("single_thread")]

TEXTS = ["a cube", "a photo of a red cube, a green cone and a blue torus on a grey floor",
         "A grey floor. " + "There is a red cube next to a green cone. " * 30]  # > 248 tokens: truncated


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("papers")
    torch.save(paper.longclip_state(seed=1), folder / "longclip-B.pt")
    torch.save(paper.debias_checkpoint(seed=2), folder / "debias_vitb_3e.pt")
    return folder


def _features(loaded):
    tokens = loaded.tokenize(TEXTS)
    pixels = torch.randn(3, 3, paper.IMAGE, paper.IMAGE, generator=torch.Generator().manual_seed(5))
    with torch.inference_mode():
        return tokens, pixels, loaded.encode_text(tokens), loaded.encode_image(pixels)


def test_longclip_file_computes_the_papers_features(files):
    from comco.models import load_model

    loaded = load_model(f"longclip:{files / 'longclip-B.pt'}")
    assert loaded.context_length == 248 and loaded.identity.startswith("longclip/sha256-")
    tokens, pixels, text, image = _features(loaded)
    assert tokens.shape == (3, 248) and tokens[2, -1] == 49407  # the end-of-text id kept last when truncated
    sd = paper.longclip_state(seed=1)
    positions = paper.longclip_positions(sd["positional_embedding"], sd["positional_embedding_res"])
    with torch.inference_mode():
        want_text = F.normalize(paper.text_features(sd, tokens, positions), dim=-1)
        want_image = F.normalize(paper.image_features(sd, pixels), dim=-1)
        one_table = F.normalize(paper.text_features(sd, tokens, sd["positional_embedding"]), dim=-1)
    assert torch.allclose(text, want_text, atol=2e-5) and torch.allclose(image, want_image, atol=2e-5)
    assert not torch.allclose(text[1:], one_table[1:], atol=1e-3)  # the _res rows matter past position 20


def test_debias_file_computes_the_features_of_the_authors_loader(files):
    from comco.models import load_model

    loaded = load_model(f"debias:{files / 'debias_vitb_3e.pt'}")
    assert loaded.context_length == 248 and loaded.identity.startswith("debias/sha256-")
    tokens, pixels, text, image = _features(loaded)
    sd = {k.removeprefix("module."): v for k, v in paper.debias_checkpoint(seed=2)["state_dict"].items()}
    base, res = sd["text.positional_embedding"], sd["text.positional_embedding_res"]
    with torch.inference_mode():
        # the authors' loader sets _res to the base table, so their masks add up to the base table
        want_text = F.normalize(paper.text_features(sd, tokens, paper.longclip_positions(base, base), "text."), dim=-1)
        want_image = F.normalize(paper.image_features(sd, pixels), dim=-1)
        split = F.normalize(paper.text_features(sd, tokens, paper.longclip_positions(base, res), "text."), dim=-1)
    assert torch.allclose(text, want_text, atol=2e-5) and torch.allclose(image, want_image, atol=2e-5)
    assert not torch.allclose(text[1:], split[1:], atol=1e-3)


def test_a_file_is_answered_with_the_reference_that_loads_it(files):
    from comco.models import load_model

    with pytest.raises(UserError, match=r"holds a DeBias-CLIP checkpoint, not a Long-CLIP checkpoint; pass "
                                        r"--model debias:"):
        load_model(f"longclip:{files / 'debias_vitb_3e.pt'}")
    with pytest.raises(UserError, match=r"holds a Long-CLIP checkpoint, not a comco checkpoint; "
                                        r"pass --model longclip:"):
        load_model(f"ckpt:{files / 'longclip-B.pt'}")


def _bad(tmp_path, name, edit):
    sd = paper.longclip_state(seed=3)
    edit(sd)
    torch.save(sd, tmp_path / name)
    return tmp_path / name


@pytest.mark.parametrize("edit, words", [
    (lambda sd: sd.update(positional_embedding_res=sd["positional_embedding_res"][:77]),
     "positional table positional_embedding_res is [77, 128], but a Long-CLIP text tower of width 128 has 248"),
    (lambda sd: sd.update(positional_embedding=sd["positional_embedding"][:, :64]),
     "positional table positional_embedding is [248, 64]"),
    (lambda sd: sd.update({"visual.positional_embedding": sd["visual.positional_embedding"][:4]}),
     "visual.positional_embedding has 4 rows"),
    (lambda sd: sd.update({"visual.proj": sd["visual.proj"][:64]}),
     "visual.proj is [64, 64], the spec needs [128, 64]"),
])
def test_tables_and_tensors_that_do_not_fit_are_one_line(tmp_path, edit, words):
    from comco.models import load_model

    with pytest.raises(UserError) as err:
        load_model(f"longclip:{_bad(tmp_path, 'bad.pt', edit)}")
    assert words in str(err.value) and "\n" not in str(err.value)


def _comco(*args):
    return subprocess.run([sys.executable, "-m", "comco.cli", *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "tiny", n=3, objects=(3,))


def test_probe_reads_a_longclip_file(files, dataset, tmp_path):
    ref = f"longclip:{files / 'longclip-B.pt'}"
    r = invoke(dataset, "--model", ref, "--probes", "tor", "--templates", "and", "--bootstrap", "0",
               "--no-cache", "--no-plots", "--out", tmp_path / "out", "--quiet")
    assert r.exit_code == 0, r.output + repr(r.exception)
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["models"][0]["label"] == ref and results["models"][0]["identity"].startswith("longclip/")
    (g,) = results["probes"]["tor"][ref]
    assert g["queries"] == 3 * 6


def test_a_file_torch_cannot_read_lists_the_layouts(tmp_path):
    from comco.models import load_model

    (tmp_path / "notes.pt").write_text("not a checkpoint")
    with pytest.raises(UserError, match=r"is not a file torch reads \(\w+\); comco reads comco checkpoints"):
        load_model(f"longclip:{tmp_path / 'notes.pt'}")


@pytest.mark.parametrize("case", ["no known layout", "short table"])
def test_probe_ends_a_bad_file_with_exit_2_and_one_line(dataset, tmp_path, case):
    if case == "no known layout":
        torch.save({"weights": [1, 2, 3]}, tmp_path / "other.pt")
        model, words = f"debias:{tmp_path / 'other.pt'}", (
            "none of the layouts comco reads: comco checkpoints (ckpt:PATH), Long-CLIP .pt files (longclip:PATH), "
            "DeBias-CLIP .pt files (debias:PATH), open_clip / OpenAI weights (--model NAME --pretrained PATH)")
    else:
        bad = _bad(tmp_path, "short-table.pt", lambda sd: sd.update(
            positional_embedding_res=sd["positional_embedding_res"][:77]))
        model, words = f"longclip:{bad}", "positional table positional_embedding_res is [77, 128]"
    r = _comco("probe", dataset, "--model", model, "--probes", "tor", "--no-cache", "--out", tmp_path / "out")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], r.stderr


def test_train_goes_on_from_a_longclip_file_at_its_248_positions(files, tiny_dataset, tmp_path):
    from comco.models import load_checkpoint, load_model
    from comco.train.run import make_config, run_training

    cfg = make_config("debias", data=str(tiny_dataset), out=str(tmp_path), init=f"longclip:{files / 'longclip-B.pt'}",
                      options={"pca_rank": 4}, batch_size=4, steps=1, warmup=0, lr=1e-3, quiet=True,
                      device="cpu", workers=0)
    assert run_training(cfg)["step"] == 1
    ckpt = load_checkpoint(tmp_path / "model.pt")
    table = ckpt["state_dict"]["positional_embedding"]
    sd = paper.longclip_state(seed=1)
    assert ckpt["context_length"] == 248 and table.shape == (248, paper.WIDTH)  # not stretched again
    assert torch.equal(table[:20], sd["positional_embedding"][:20])  # the copied rows stay frozen
    assert not torch.equal(table[20:], sd["positional_embedding_res"][20:])  # the rest trained
    assert ckpt["model_spec"]["source"] == "Long-CLIP longclip-B.pt"
    assert load_model(f"ckpt:{tmp_path / 'model.pt'}").context_length == 248
