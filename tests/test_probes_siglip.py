"""A local transformers SigLIP checkpoint through `hf:DIR` (tiny random model, offline tokenizer).

SigLIP's own tokenizer is a sentencepiece model that cannot be fetched here, so the
test trains a tiny Unigram tokenizer with the `tokenizers` library and saves it the way
SigLIP's is configured: `</s>` appended, `</s>` as padding, 64 tokens.
"""

from __future__ import annotations

import json

import pytest
from support.probes import HIDDEN, save_tokenizer

from comco.errors import UserError

pytestmark = pytest.mark.torch





def save_siglip(folder, *, max_positions=None, processor=True):
    import torch
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel

    vocab, eos = save_tokenizer(folder, max_positions or 64)
    text = {"vocab_size": vocab, "hidden_size": HIDDEN, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "pad_token_id": eos, "eos_token_id": eos, "bos_token_id": eos}
    if max_positions:
        text["max_position_embeddings"] = max_positions
    vision = {"hidden_size": HIDDEN, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "image_size": 32, "patch_size": 8}
    torch.manual_seed(0)
    model = SiglipModel(SiglipConfig(text_config=text, vision_config=vision)).eval()
    model.save_pretrained(folder)
    if processor:
        SiglipImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return model, eos


@pytest.fixture(scope="module")
def siglip(tmp_path_factory):
    folder = tmp_path_factory.mktemp("siglip")
    model, eos = save_siglip(folder)
    return folder, model, eos


def test_siglip_folder_loads_with_its_context_length_and_normalised_features(siglip):
    import torch

    from comco.models import load_model

    folder, _, _ = siglip
    m = load_model(f"hf:{folder}")
    assert m.family == "hf" and m.identity.startswith("hf/siglip/") and m.vit is None
    assert m.context_length == 64
    tokens = m.tokenize(["a cube", "a cone, a torus and a sphere"])
    assert tokens.shape == (2, 64)
    with torch.inference_mode():
        t = m.encode_text(tokens)
        i = m.encode_image(torch.randn(3, 3, 32, 32))
    assert t.shape == (2, HIDDEN) and i.shape == (3, HIDDEN)
    assert torch.allclose(t.norm(dim=-1), torch.ones(2), atol=1e-5)
    assert torch.allclose(i.norm(dim=-1), torch.ones(3), atol=1e-5)
    assert not torch.allclose(t[0], t[1], atol=1e-3)


def test_siglip_pads_to_max_length_and_pools_the_last_position(siglip):
    """No CLIP-style pooling at the end-of-text token, no trimming, no attention mask."""
    import torch
    import torch.nn.functional as F

    from comco.models import load_model

    folder, model, eos = siglip
    m = load_model(f"hf:{folder}")
    texts = ["a cube", "a cone, a torus and a sphere"]
    ids = m.tokenize(texts)
    for row, text in zip(ids, texts):
        n = int((row != eos).sum())  # the text's own tokens, then eos, then eos padding to the end
        assert n >= len(text.split()) and (row[n:] == eos).all() and (row[:n] != eos).all()
    with torch.inference_mode():
        got = m.encode_text(ids)
        tm = model.text_model
        hidden = tm.final_layer_norm(tm.encoder(inputs_embeds=tm.embeddings(input_ids=ids)).last_hidden_state)
        want = F.normalize(tm.head(hidden[:, -1]), dim=-1)  # SigLIP: the last position, padding included
        eot = (ids != eos).sum(1)  # where a CLIP-style pooler would look
        clip_style = F.normalize(tm.head(hidden[torch.arange(len(ids)), eot]), dim=-1)
        n = int(eot.max()) + 1
        trimmed = F.normalize(model.get_text_features(input_ids=ids[:, :n]).pooler_output, dim=-1)
        masked = F.normalize(model.get_text_features(
            input_ids=ids, attention_mask=(torch.arange(64) <= eot[:, None]).long()).pooler_output, dim=-1)
    assert torch.allclose(got, want, atol=1e-5)
    for other in (clip_style, trimmed, masked):  # the test can tell these apart from SigLIP's rule
        assert not torch.allclose(other, want, atol=1e-3)


def test_context_length_comes_from_the_config(tmp_path):
    import torch

    from comco.models import load_model

    _, eos = save_siglip(tmp_path, max_positions=16, processor=False)
    m = load_model(f"hf:{tmp_path}")
    assert m.context_length == 16
    ids = m.tokenize(["a cube and a sphere and a cone and a torus and a heart and a moon and a star"])
    assert ids.shape == (1, 16) and int(ids[0, -1]) == eos  # truncated, still ends with </s>
    with torch.inference_mode():
        assert m.encode_text(ids).shape == (1, HIDDEN)


def test_siglip_images_are_squashed_like_its_processor(siglip):
    """SigLIP resizes to height x width without cropping; a centre crop would lose the sides."""
    import numpy as np
    import torch
    from PIL import Image
    from transformers import SiglipImageProcessor

    from comco.models import load_model

    folder, _, _ = siglip
    m = load_model(f"hf:{folder}")
    w, h = 96, 48
    ramp = np.tile(np.linspace(0, 255, w), (h, 1))
    im = Image.fromarray(np.stack([ramp, 255 - ramp, np.full_like(ramp, 90)], -1).astype(np.uint8))
    ours = m.preprocess(im)
    theirs = SiglipImageProcessor.from_pretrained(str(folder))(im, return_tensors="pt")["pixel_values"][0]
    assert ours.shape == theirs.shape == (3, 32, 32)
    assert torch.allclose(ours, theirs, atol=0.05), float((ours - theirs).abs().max())


def test_siglip_tokenizer_without_its_library_is_one_line(siglip, tmp_path):
    """A real SigLIP folder ships spiece.model; without sentencepiece (or with a bad file) say so."""
    import shutil

    from comco.models import load_model

    folder, _, _ = siglip
    for name in ("config.json", "model.safetensors"):
        shutil.copy(folder / name, tmp_path / name)
    (tmp_path / "spiece.model").write_bytes(b"\x00not a sentencepiece model")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "SiglipTokenizer"}))
    with pytest.raises(UserError) as err:
        load_model(f"hf:{tmp_path}")
    assert "\n" not in str(err.value) and "tokenizer" in str(err.value)


def test_text_only_tor_with_a_siglip_folder(siglip, tmp_path):
    from support.probes import invoke

    folder, _, _ = siglip
    r = invoke("--text-only", "--object-set", "simco", "--objects", "3", "--tuples", "18", "--model",
               f"hf:{folder}", "--bootstrap", "20", "--no-cache", "--no-plots", "--out", tmp_path / "out", "--quiet")
    assert r.exit_code == 0, r.output + repr(r.exception)
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    (model,) = res["models"]
    assert model["identity"].startswith("hf/siglip/") and model["context_length"] == 64
    (g,) = res["probes"]["tor"][f"hf:{folder}"]
    assert g["queries"] == 18 and [s["role"] for s in g["metrics"]["unconditional"]] == ["1st", "2nd", "3rd"]
    assert all(s["n"] == 18 and 0 <= s["acc"] <= 1 for s in g["metrics"]["unconditional"])
