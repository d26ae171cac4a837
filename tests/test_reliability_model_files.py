"""Issue 25 items 5, 7 and 11: model files that are damaged, edited or degenerate end in one
UserError before any model is built for real, and the size checks cannot be walked around
(an expanded tensor of a few bytes claiming billions of rows, a text tower named after a
Hugging Face model). Every file here is a few kB; nothing large is ever allocated: a guard
fails the test if a model would be built off the meta device before the checks pass."""

from __future__ import annotations

import copy
import json
import os
import pickle
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")

from support.probes import save_tokenizer  # noqa: E402

from comco.errors import UserError  # noqa: E402
from comco.models import load_model, save_checkpoint  # noqa: E402
from comco.train.scratch import scratch_cfg  # noqa: E402

pytestmark = pytest.mark.torch

CFG = scratch_cfg(resolution=32, patch_size=8, vision_width=32, vision_layers=1, text_width=32,
                  text_layers=1, embed_dim=32, context_length=16)
CFG["text_cfg"]["vocab_size"] = 64  # a few kB of tensors; the tests feed token ids below 64


@pytest.fixture
def no_real_build(monkeypatch):
    """build_open_clip may run on the meta device only: a damaged file must be refused before
    the real model (whose size the file claims) is allocated."""
    from comco.models import checkpoints, papers

    real = checkpoints.build_open_clip

    def guarded(*args, **kwargs):
        assert torch.get_default_device().type == "meta", "a model was built for real before the checks"
        return real(*args, **kwargs)

    monkeypatch.setattr(checkpoints, "build_open_clip", guarded)
    monkeypatch.setattr(papers, "build_open_clip", guarded)


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    torch.manual_seed(0)
    model = open_clip.CLIP(**copy.deepcopy(CFG))
    path = tmp_path_factory.mktemp("ckpt") / "good.pt"
    save_checkpoint(path, kind="longclip", model=model, model_spec={"open_clip_cfg": CFG},
                    extra={"config": {"options": {"keep": 4}}})
    return path


def _edited(good, tmp_path, edit):
    ckpt = torch.load(good, weights_only=True)
    edit(ckpt)
    path = tmp_path / "edited.pt"
    torch.save(ckpt, path)
    assert path.stat().st_size < 200_000  # a tiny model: the size a file claims is in its spec
    return path


def _cfg(ckpt):
    return ckpt["model_spec"]["open_clip_cfg"]


def _expanded_vocabulary(rows):
    def edit(ckpt):  # one row of storage viewed as `rows` rows (stride 0), the spec asking for as many
        _cfg(ckpt)["text_cfg"]["vocab_size"] = rows
        ckpt["state_dict"]["token_embedding.weight"] = torch.zeros(1, 32).expand(rows, 32)
    return edit


CKPT_EDITS = {
    # item 5: the size checks cannot be bypassed
    "stride-0 tensor of 2e9 rows": (_expanded_vocabulary(2_000_000_000), "vocab_size"),
    "stride-0 tensor within the bounds": (_expanded_vocabulary(1_000_000), "expanded or overlapping"),
    "a stride-0 text_map": (lambda c: c.update(text_map=torch.zeros(1, 1).expand(32, 32)), "expanded"),
    "absurd vision width": (lambda c: _cfg(c)["vision_cfg"].update(width=2**20), "width"),
    "absurd embed_dim": (lambda c: _cfg(c).update(embed_dim=10**9), "embed_dim"),
    "absurd image size": (lambda c: _cfg(c)["vision_cfg"].update(image_size=[32, 10**6]), "image_size"),
    # item 11: damaged fields
    "version a string": (lambda c: c.update(version="1"), "version"),
    "no kind": (lambda c: c.pop("kind"), "kind"),
    "kind evil": (lambda c: c.update(kind="evil"), "kind 'evil'"),
    "text_map a list": (lambda c: c.update(text_map=[[1.0, 0.0], [0.0, 1.0]]), "text_map is a list"),
    "text_map wrong shape": (lambda c: c.update(text_map=torch.eye(5)), r"text_map is \[5, 5\]"),
    "keep abc": (lambda c: c["config"]["options"].update(keep="abc"), "keep 'abc'"),
    "keep past the context": (lambda c: c["config"]["options"].update(keep=10**6), "keep"),
}


@pytest.mark.usefixtures("no_real_build")
@pytest.mark.parametrize("case", list(CKPT_EDITS))
def test_a_damaged_or_oversized_checkpoint_is_refused_before_it_is_built(good, tmp_path, case):
    edit, words = CKPT_EDITS[case]
    with pytest.raises(UserError, match=words):
        load_model(f"ckpt:{_edited(good, tmp_path, edit)}")


def test_the_undamaged_checkpoint_still_loads(good):
    loaded = load_model(f"ckpt:{good}")
    tokens = torch.tensor([[1, 5, 9, 63] + [0] * 12])
    assert loaded.stretched_keep == 4 and loaded.encode_text(tokens).shape == (1, 32)


@pytest.fixture(scope="module")
def hf_text_ckpt(tmp_path_factory):
    """A checkpoint whose text tower names a (local, tiny) Hugging Face BERT: the case that
    skipped the meta-device check."""
    root = tmp_path_factory.mktemp("hftext")
    bert = root / "bert"
    vocab, _ = save_tokenizer(bert, 16)
    (bert / "config.json").write_text(json.dumps({
        "model_type": "bert", "vocab_size": vocab, "hidden_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 16}))
    cfg = copy.deepcopy(CFG)
    cfg["text_cfg"] = {"hf_model_name": str(bert), "hf_tokenizer_name": str(bert), "hf_proj_type": "linear",
                       "hf_pooler_type": "mean_pooler", "hf_model_pretrained": False}
    cfg["custom_text"] = True
    torch.manual_seed(0)
    model = open_clip.CustomTextCLIP(**copy.deepcopy({k: v for k, v in cfg.items() if k != "custom_text"}))
    path = root / "hf-text.pt"
    save_checkpoint(path, kind="scratch", model=model, model_spec={"open_clip_cfg": cfg})
    return path


HF_TEXT_EDITS = {
    "vision tower reshaped": (
        lambda c: c["state_dict"].update({"visual.conv1.weight": torch.zeros(64, 3, 8, 8)}),
        "does not match its tensors"),
    "vision width past the bound": (lambda c: _cfg(c)["vision_cfg"].update(width=2**20), "width"),
    "a stride-0 text tensor": (
        lambda c: c["state_dict"].update({k: v[:1].clone().expand_as(v) for k, v in c["state_dict"].items()
                                          if k.endswith("word_embeddings.weight")}),
        "expanded or overlapping"),
}


@pytest.mark.usefixtures("no_real_build")
@pytest.mark.parametrize("case", list(HF_TEXT_EDITS))
def test_a_checkpoint_with_an_hf_text_tower_is_checked_too(hf_text_ckpt, tmp_path, case):
    edit, words = HF_TEXT_EDITS[case]
    with pytest.raises(UserError, match=words):
        load_model(f"ckpt:{_edited(hf_text_ckpt, tmp_path, edit)}")


def test_a_checkpoint_with_an_hf_text_tower_loads_and_refuses_a_stand_in_tokenizer(hf_text_ckpt, tmp_path):
    loaded = load_model(f"ckpt:{hf_text_ckpt}")
    f = loaded.encode_text(loaded.tokenize(["a red cube", "a blue cone"]))
    assert f.shape == (2, 32) and not torch.allclose(f[0], f[1])
    bare = tmp_path / "bert-without-tokenizer"
    bare.mkdir()
    shutil.copy(Path(_cfg(torch.load(hf_text_ckpt, weights_only=True))["text_cfg"]["hf_model_name"]) / "config.json",
                bare)
    edited = _edited(hf_text_ckpt, tmp_path, lambda c: _cfg(c)["text_cfg"].update(hf_tokenizer_name=str(bare)))
    with pytest.raises(UserError, match="stand-in"):
        load_model(f"ckpt:{edited}")


# -- longclip: (item 11) tensors of the wrong rank, an empty patch


def _longclip_state(width=64) -> dict:
    """The keys Long-CLIP's layout is told by, at a tiny size (a few kB)."""
    return {"positional_embedding": torch.zeros(248, width), "positional_embedding_res": torch.zeros(248, width),
            "token_embedding.weight": torch.zeros(8, width), "visual.conv1.weight": torch.zeros(width, 3, 4, 4),
            "visual.positional_embedding": torch.zeros(5, width), "visual.proj": torch.zeros(width, 16),
            "ln_final.weight": torch.ones(width), "text_projection": torch.zeros(width, 16)}


LONGCLIP_EDITS = {
    "1-d text_projection": ("text_projection", torch.zeros(64), "text_projection is"),
    "0-d visual positions": ("visual.positional_embedding", torch.tensor(1.0), "visual.positional_embedding is"),
    "0-d ln_final": ("ln_final.weight", torch.tensor(1.0), "ln_final.weight is"),
    "1-d patch embedding": ("visual.conv1.weight", torch.zeros(64), "visual.conv1.weight is"),
    "0x0 patch": ("visual.conv1.weight", torch.zeros(64, 3, 0, 0), "visual.conv1.weight is"),
    "non-square patch": ("visual.conv1.weight", torch.zeros(64, 3, 4, 2), "visual.conv1.weight is"),
    "0-d token table": ("token_embedding.weight", torch.tensor(1.0), "token_embedding.weight"),
    "stride-0 token table": ("token_embedding.weight", torch.zeros(1, 64).expand(10**6, 64), "expanded"),
}


@pytest.mark.usefixtures("no_real_build")
@pytest.mark.parametrize("case", list(LONGCLIP_EDITS))
def test_a_damaged_longclip_file_is_one_user_error(tmp_path, case):
    key, value, words = LONGCLIP_EDITS[case]
    state = _longclip_state()
    state[key] = value
    path = tmp_path / "longclip.pt"
    torch.save(state, path)
    with pytest.raises(UserError, match=words):
        load_model(f"longclip:{path}")


# -- hf: (items 7 and 11)


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    from transformers import CLIPConfig, CLIPModel

    folder = tmp_path_factory.mktemp("hf") / "clip"
    vocab, eos = save_tokenizer(folder, 16)
    text = {"vocab_size": vocab, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
            "num_attention_heads": 2, "max_position_embeddings": 16, "eos_token_id": eos, "pad_token_id": eos,
            "bos_token_id": eos}
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "image_size": 32, "patch_size": 8}
    torch.manual_seed(0)
    CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)).save_pretrained(folder)
    return folder


class _Payload:
    def __reduce__(self):  # what a hostile pytorch_model.bin would run if it were unpickled freely
        return (os.system, ("touch PWNED",))


def _write(name: str, data: bytes):
    return lambda d: (d / name).write_bytes(data)


def _cut_weights(d):
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])


def _pickled_weights(d):
    (d / "model.safetensors").unlink()
    (d / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload()))


def _no_tokenizer(d):
    for f in d.iterdir():
        if "token" in f.name:
            f.unlink()


HF_EDITS = {
    "empty config.json": (_write("config.json", b""), "config.json is not a JSON object"),
    "binary config.json": (_write("config.json", bytes(range(256))), "config.json is not a JSON object"),
    "a list in config.json": (_write("config.json", b"[1, 2]"), "config.json is not a JSON object"),
    "cut weights": (_cut_weights, "weights cannot be read"),
    "empty weights": (_write("model.safetensors", b""), "weights cannot be read"),
    "missing weights": (lambda d: (d / "model.safetensors").unlink(), "weights cannot be read"),
    "pickled weights": (_pickled_weights, "refused, not run"),
    "preprocessor size -5": (_write("preprocessor_config.json", b'{"size": -5, "crop_size": 32}'), "size -5"),
    "preprocessor mean of two": (_write("preprocessor_config.json", b'{"size": 32, "image_mean": [0.5, 0.5]}'),
                                 "image_mean"),
    "binary preprocessor": (_write("preprocessor_config.json", b"\xff\xfe\x00"), "not a JSON object"),
    # item 7: transformers builds a 2-token stand-in tokenizer instead of raising
    "no tokenizer files": (_no_tokenizer, "stand-in"),
}


@pytest.mark.parametrize("case", list(HF_EDITS))
def test_a_damaged_hf_folder_is_one_user_error(hf_folder, tmp_path, monkeypatch, case):
    edit, words = HF_EDITS[case]
    folder = tmp_path / "clip"
    shutil.copytree(hf_folder, folder)
    edit(folder)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=words):
        load_model(f"hf:{folder}")
    assert not (tmp_path / "PWNED").exists()


def test_the_undamaged_hf_folder_tells_captions_apart(hf_folder):
    loaded = load_model(f"hf:{hf_folder}")
    f = loaded.encode_text(loaded.tokenize(["a red cube", "a blue cone"]))
    assert f.shape == (2, 16) and not torch.allclose(f[0], f[1])


def _unknown_words_tokenizer(d):
    """40 tokens, none an English word: every caption of seven words is seven unknowns."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    _no_tokenizer(d)
    vocab = {"<unk>": 0, "<pad>": 1, **{f"w{i}": i + 2 for i in range(40)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                            model_max_length=16).save_pretrained(d)


def test_a_tokenizer_that_gives_two_captions_the_same_ids_is_refused(hf_folder, tmp_path):
    folder = tmp_path / "clip"
    shutil.copytree(hf_folder, folder)
    _unknown_words_tokenizer(folder)
    with pytest.raises(UserError, match="same ids"):
        load_model(f"hf:{folder}")
