"""The model factory and the checkpoint format (tiny models, CPU)."""

from __future__ import annotations

import json

import pytest
from support.probes import tiny_open_clip

from comco.errors import UserError

pytestmark = pytest.mark.torch





def test_unknown_model_suggests_close_names():
    from comco.models import load_model

    with pytest.raises(UserError, match=r"unknown model 'ViT-B-23'.*ViT-B-32"):
        load_model("ViT-B-23", "none")


def test_weights_not_on_disk_say_how_to_pass_a_file(monkeypatch):
    from comco.models import load_model, openclip

    monkeypatch.setattr(openclip, "_weights_cached", lambda cfg: False)
    monkeypatch.setattr(openclip, "_hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(UserError, match=r"not on disk.*--pretrained /path/to/weights.pt or none"):
        load_model("ViT-B-32", "openai")
    with pytest.raises(UserError, match=r"neither a weights file nor a pretrained tag"):
        load_model("ViT-B-32", "no-such-tag")


def test_random_weights_are_reproducible_and_named():
    import torch

    from comco.models import load_model

    a, b = load_model("ViT-S-32", "none"), load_model("ViT-S-32", None)
    assert a.identity == b.identity and "random" in a.identity
    assert a.context_length == 77 and a.vit is not None
    tokens = a.tokenize(["a red cube and a blue cone"])
    assert tokens.shape == (1, 77)
    with torch.inference_mode():
        fa, fb = a.encode_text(tokens), b.encode_text(tokens)
    assert torch.equal(fa, fb)
    assert torch.allclose(fa.norm(dim=-1), torch.ones(1))


def test_trimmed_text_encoding_equals_full_context():
    import torch
    import torch.nn.functional as F
    from open_clip import SimpleTokenizer

    from comco.models.openclip import wrap_open_clip as _wrap_open_clip

    model, _ = tiny_open_clip()
    loaded = _wrap_open_clip("tiny", None, "tiny", model, None, SimpleTokenizer(), "cpu")
    tokens = loaded.tokenize(["a cube", "a photo of a sphere, a cone and a torus on the floor"])
    with torch.inference_mode():
        full = F.normalize(model.encode_text(tokens), dim=-1)
        assert torch.allclose(loaded.encode_text(tokens), full, atol=1e-6)


def test_checkpoint_roundtrip_stretched_context_and_text_map(tmp_path):
    import torch
    import torch.nn.functional as F

    from comco.models import load_checkpoint, load_model, save_checkpoint

    model, spec = tiny_open_clip(context_length=248)
    text_map = torch.linalg.qr(torch.randn(16, 16))[0]
    path = save_checkpoint(tmp_path / "m.pt", kind="labclip", model=model, model_spec=spec,
                           extra={"text_map": text_map, "step": 7, "config": {"lr": 1e-6}, "optimizer": {"t": 1}})
    ckpt = load_checkpoint(path)
    assert (ckpt["format"], ckpt["version"], ckpt["kind"], ckpt["step"]) == ("comco-checkpoint", 1, "labclip", 7)
    assert ckpt["context_length"] == 248 and ckpt["optimizer"] == {"t": 1}
    loaded = load_model(f"ckpt:{path}")
    assert loaded.context_length == 248 and loaded.identity.startswith("ckpt/labclip/")
    tokens = loaded.tokenize(["a cube and a cone"])
    assert tokens.shape == (1, 248)
    with torch.inference_mode():
        raw = F.normalize(model.eval().encode_text(tokens), dim=-1)
        assert torch.allclose(loaded.encode_text(tokens), F.normalize(raw @ text_map.T, dim=-1), atol=1e-5)
        img = torch.randn(2, 3, 32, 32)
        assert torch.allclose(loaded.encode_image(img), F.normalize(model.encode_image(img), dim=-1), atol=1e-5)


def test_not_a_checkpoint_is_a_user_error(tmp_path):
    import torch

    from comco.models import load_model

    (tmp_path / "text.pt").write_text("hello")
    torch.save({"state_dict": {}}, tmp_path / "plain.pt")
    for name in ("text.pt", "plain.pt", "missing.pt"):
        with pytest.raises(UserError, match="comco checkpoint|not found"):
            load_model(f"ckpt:{tmp_path / name}")


def _char_tokenizer(folder):
    """A CLIP BPE tokenizer with single-byte tokens only (no download)."""
    from open_clip.tokenizer import bytes_to_unicode
    from transformers import CLIPTokenizer

    chars = list(bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars + [c + "</w>" for c in chars])}
    vocab["<|startoftext|>"], vocab["<|endoftext|>"] = len(vocab), len(vocab) + 1
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tok = CLIPTokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))
    tok.save_pretrained(folder)
    return len(vocab)


def test_hf_clip_folder(tmp_path):
    import torch
    from transformers import CLIPConfig, CLIPModel

    from comco.models import load_model

    vocab = _char_tokenizer(tmp_path)
    cfg = CLIPConfig(
        text_config={"vocab_size": vocab, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "max_position_embeddings": 64, "eos_token_id": vocab - 1,
                     "bos_token_id": vocab - 2, "pad_token_id": vocab - 1},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 32, "patch_size": 16},
        projection_dim=16)
    CLIPModel(cfg).save_pretrained(tmp_path)
    m = load_model(f"hf:{tmp_path}")
    assert m.context_length == 64 and m.family == "hf" and m.identity.startswith("hf/clip/")
    assert load_model(f"hf:{tmp_path}").identity == m.identity
    from PIL import Image

    x = m.preprocess(Image.new("RGBA", (50, 40), (200, 10, 10, 255)))
    assert tuple(x.shape) == (3, 32, 32)
    with torch.inference_mode():
        t = m.encode_text(m.tokenize(["a cube", "a cone and a cube"]))
        i = m.encode_image(x[None])
    assert t.shape == (2, 16) and i.shape == (1, 16)
    assert torch.allclose(t.norm(dim=-1), torch.ones(2), atol=1e-5)
    assert not torch.allclose(t[0], t[1])


def test_hf_folder_errors(tmp_path):
    from comco.models import load_model

    with pytest.raises(UserError, match="no config.json"):
        load_model(f"hf:{tmp_path}")
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(UserError, match=r"takes the model types clip \(CLIPModel\), siglip \(SiglipModel\)"):
        load_model(f"hf:{tmp_path}")
