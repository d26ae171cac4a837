"""`--model st:DIR`: a tiny random BERT saved by the tests in sentence-transformers' layout
(transformer + mean pooling), loaded by that package, for the text-only probes; image probes,
eval and training refuse it, and damaged folders are one line."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.torch
COMCO = [sys.executable, "-m", "comco.cli"]


def save_sentence_model(folder: Path) -> Path:
    """A 2-layer, 32-wide random BERT with a word-level tokenizer over the simco names, saved with
    SentenceTransformer.save (modules.json, the transformer folder, the pooling config)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    from comco.manifest import load_object_set

    with warnings.catch_warnings():  # sentence_transformers.models moved in 6.x; the old path still works
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers import models as st_models

    words = sorted({w for n in load_object_set("simco").names for w in n.split()} |
                   {"a", "an", "and", "photo", "of", "the", ",", ".", "this", "is", "with"})
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2),
                                                                                             ("[SEP]", 3)])
    raw = folder / "bert"
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", model_max_length=64)
    fast.save_pretrained(raw)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64)).save_pretrained(raw)
    body = st_models.Transformer(str(raw), max_seq_length=64)
    model = SentenceTransformer(modules=[body, st_models.Pooling(32, "mean")])
    model.save(str(folder / "st"))
    return folder / "st"


@pytest.fixture(scope="module")
def st_folder(tmp_path_factory) -> Path:
    return save_sentence_model(tmp_path_factory.mktemp("st"))


def test_the_folder_loads_through_sentence_transformers_and_embeds_as_it_does(st_folder):
    from sentence_transformers import SentenceTransformer

    from comco.models import load_model

    loaded = load_model(f"st:{st_folder}")
    texts = ["a cube and a cone", "a cone and a cube", "a photo of a sphere"]
    ours = loaded.encode_text(loaded.tokenize(texts)).numpy()
    theirs = SentenceTransformer(str(st_folder), device="cpu").encode(texts, normalize_embeddings=True)
    assert np.allclose(ours, theirs, atol=1e-5)
    assert not np.allclose(ours[0], ours[1])  # word order reaches the embedding (position embeddings)
    assert loaded.family == "sentence-transformers" and loaded.identity.startswith("st:")


def test_text_only_tor_runs_and_image_probes_eval_and_train_refuse(st_folder, tmp_path, tiny_dataset):
    out = tmp_path / "tor"
    r = subprocess.run([*COMCO, "probe", "--text-only", "--object-set", "simco", "--model", f"st:{st_folder}",
                        "--tuples", "18", "--objects", "3", "--bootstrap", "20", "--no-cache", "--no-plots",
                        "--quiet", "--out", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    groups = json.loads((out / "results.json").read_text())["probes"]["tor"][f"st:{st_folder}"]
    assert groups and groups[0]["n_objects"] == 3
    for args, message in (
        (["probe", tiny_dataset, "--probes", "matching", "--model", f"st:{st_folder}", "--out", tmp_path / "x"],
         "embeds text only and cannot run matching"),
        (["eval", "retrieval", "--benchmark", "coco", "--root", tmp_path, "--model", f"st:{st_folder}",
          "--out", tmp_path / "x"], "embeds text only"),
        (["train", "longclip", "--data", tiny_dataset, "--init", f"st:{st_folder}", "--out", tmp_path / "x"],
         "sentence-transformers folder"),
    ):
        r = subprocess.run([*COMCO, *map(str, args)], capture_output=True, text=True)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert message in r.stderr, r.stderr
        assert not (tmp_path / "x").exists()


def test_damaged_sentence_folders_are_one_line(st_folder, tmp_path):
    import shutil

    cases = {}
    cases["empty"] = tmp_path / "empty"
    cases["empty"].mkdir()
    bad = tmp_path / "bad-modules"
    shutil.copytree(st_folder, bad)
    (bad / "modules.json").write_bytes(b"\xff\x00 not json")
    cases["bad modules.json"] = bad
    cut = tmp_path / "cut-weights"
    shutil.copytree(st_folder, cut)
    for w in cut.rglob("model.safetensors"):
        w.write_bytes(w.read_bytes()[:100])
    cases["cut weights"] = cut
    for why, folder in cases.items():
        r = subprocess.run([*COMCO, "probe", "--text-only", "--object-set", "simco", "--model", f"st:{folder}",
                            "--tuples", "6", "--objects", "2", "--no-cache", "--quiet", "--out", tmp_path / "o"],
                           capture_output=True, text=True)
        assert r.returncode == 2, (why, r.stderr[-1500:])
        assert len(r.stderr.strip().splitlines()) == 1 and f"st:{folder}" in r.stderr, (why, r.stderr)
        assert not (tmp_path / "o").exists()
