"""Issue 40 item 4: `comco model export` writes a comco checkpoint as a transformers CLIPModel
folder and as an open_clip local-dir folder; each library loads it unmodified and gives the
embeddings comco gives (to float tolerance), tokens and pixels included. What a format cannot
hold is refused in one line and leaves nothing behind."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")
transformers = pytest.importorskip("transformers")

from PIL import Image  # noqa: E402
from support.export import comco  # noqa: E402

from comco.errors import UserError  # noqa: E402
from comco.models import load_model, save_checkpoint  # noqa: E402
from comco.train.scratch import scratch_cfg  # noqa: E402

pytestmark = pytest.mark.torch

TEXTS = ["a red cube and a small blue sphere", "Hello, world! 123 -- what's up?", "THE   Large\tpizza,, left of a cat.",
         "a photo of " + "very " * 30 + "long caption"]  # the last one is cut at the context length

TOL = 2e-5  # float32 on two code paths


def _checkpoint(path, kind="scratch", tower="vit", context_length=16, text_map=False, seed=0):
    """A tiny CLIP with every weight moved off its initial value, so a wrong mapping shows."""
    cfg = scratch_cfg(resolution=32, patch_size=8, vision_width=64, vision_layers=2, text_width=64, text_layers=2,
                      embed_dim=64, context_length=context_length, vision_tower=tower)
    torch.manual_seed(seed)
    model = open_clip.CLIP(**copy.deepcopy(cfg))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    extra = {"text_map": torch.eye(64) + 0.3 * torch.randn(64, 64)} if text_map else {}
    if kind == "longclip":
        extra["config"] = {"options": {"keep": 20 if context_length >= 20 else 4}}
    save_checkpoint(path, kind=kind, model=model, model_spec={"open_clip_cfg": cfg}, extra=extra)
    return path


# Resized, then centre-cropped with a margin that is not 3 mod 4: there torchvision's crop offset,
# round(margin / 2), is one more than transformers' margin // 2, a one-pixel shift the docs name
# (docs/guide/export.md; tests/test_model_export_fidelity.py pins it down).
def _images(sizes=((32, 32), (48, 40), (70, 35))):
    rng = np.random.default_rng(0)
    return [Image.fromarray((rng.random((h, w, 3)) * 255).astype("uint8")) for w, h in sizes]


def _comco(path, images):
    loaded = load_model(f"ckpt:{path}")
    tokens = loaded.tokenize(TEXTS)
    pixels = torch.stack([loaded.preprocess(im) for im in images])
    return tokens, pixels, loaded.encode_text(tokens), loaded.encode_image(pixels)


def _features(out):
    return torch.nn.functional.normalize(out if isinstance(out, torch.Tensor) else out.pooler_output, dim=-1)


def _through_hf(folder, images):
    from transformers import CLIPModel, CLIPProcessor

    model = CLIPModel.from_pretrained(folder).eval()
    processor = CLIPProcessor.from_pretrained(folder, backend="pil")
    inputs = processor(text=TEXTS, padding="max_length", truncation=True, return_tensors="pt")
    pixels = processor(images=images, return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        text = _features(model.get_text_features(**inputs))
        image = _features(model.get_image_features(pixel_values=pixels))
    return inputs["input_ids"], pixels, text, image


def _through_open_clip(folder, images):
    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{folder}")
    tokenizer = open_clip.get_tokenizer(f"local-dir:{folder}")
    tokens = tokenizer(TEXTS)
    pixels = torch.stack([preprocess(im) for im in images])
    model.eval()
    with torch.no_grad():
        return tokens, pixels, model.encode_text(tokens, normalize=True), model.encode_image(pixels, normalize=True)


def _up_to_end_of_text(ids):
    """Each row's ids through its first end-of-text token (what the pooled feature sees)."""
    rows = []
    for row in ids.tolist():
        rows.append(row[:row.index(49407) + 1])
    return rows


@pytest.mark.parametrize("kind,text_map,context", [("scratch", False, 16), ("labclip", True, 16),
                                                    ("longclip", False, 40)])
def test_hf_round_trip_gives_comcos_tokens_pixels_and_embeddings(tmp_path, capsys, kind, text_map, context):
    path = _checkpoint(tmp_path / "model.pt", kind=kind, text_map=text_map, context_length=context)
    images = _images()
    tokens, pixels, text, image = _comco(path, images)
    code, out, err = comco(capsys, "model", "export", f"ckpt:{path}", "--to", "hf", "--out", tmp_path / "hf")
    assert code == 0, err
    assert out.strip().splitlines()[-1] == f"open {tmp_path / 'hf'}"
    assert ("folded" in out) == text_map
    hf_ids, hf_pixels, hf_text, hf_image = _through_hf(tmp_path / "hf", images)
    assert _up_to_end_of_text(hf_ids) == _up_to_end_of_text(tokens)
    assert hf_ids.shape == tokens.shape  # the text tower's own length, long captions cut as comco cuts them
    assert (hf_pixels - pixels).abs().max() < 1e-6
    assert (hf_text - text).abs().max() < TOL
    assert (hf_image - image).abs().max() < TOL


@pytest.mark.parametrize("tower,text_map", [("vit", False), ("conv", False), ("vit", True)])
def test_open_clip_round_trip_gives_comcos_tokens_pixels_and_embeddings(tmp_path, capsys, tower, text_map):
    path = _checkpoint(tmp_path / "model.pt", tower=tower, text_map=text_map,
                       kind="labclip" if text_map else "scratch")
    images = _images()
    tokens, pixels, text, image = _comco(path, images)
    code, _, err = comco(capsys, "model", "export", f"ckpt:{path}", "--to", "open_clip", "--out", tmp_path / "oc")
    assert code == 0, err
    oc_tokens, oc_pixels, oc_text, oc_image = _through_open_clip(tmp_path / "oc", images)
    assert torch.equal(oc_tokens, tokens)
    assert (oc_pixels - pixels).abs().max() < 1e-6
    assert (oc_text - text).abs().max() < TOL
    assert (oc_image - image).abs().max() < TOL


def test_a_wrong_mapping_would_show(tmp_path):
    """The round trip is sensitive: q and k swapped in one layer moves the text embedding."""
    from transformers import CLIPModel

    from comco.models import build_open_clip
    from comco.models.export import hf_config, hf_state_dict

    path = _checkpoint(tmp_path / "model.pt")
    loaded = load_model(f"ckpt:{path}")
    _, _, cfg = build_open_clip(loaded.model_spec, 16)
    good = hf_state_dict(loaded.model.state_dict(), (2, 2))
    q, k = "text_model.encoder.layers.0.self_attn.q_proj.weight", "text_model.encoder.layers.0.self_attn.k_proj.weight"
    assert not torch.equal(good[q], good[k])
    right, wrong = CLIPModel(hf_config(cfg)).eval(), CLIPModel(hf_config(cfg)).eval()
    right.load_state_dict(good)
    wrong.load_state_dict(dict(good, **{q: good[k], k: good[q]}))
    ids = torch.tensor([[49406, 320, 736, 11353, 49407] + [49407] * 11])
    with torch.no_grad():
        a, b = _features(right.get_text_features(input_ids=ids)), _features(wrong.get_text_features(input_ids=ids))
    assert (a - b).abs().max() > 1e-3


def test_what_a_format_cannot_hold_is_one_line_and_nothing_written(tmp_path, capsys):
    conv = _checkpoint(tmp_path / "conv.pt", tower="conv")
    code, out, err = comco(capsys, "model", "export", f"ckpt:{conv}", "--to", "hf", "--out", tmp_path / "hf")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "conv image tower" in err and "--to open_clip" in err
    assert not (tmp_path / "hf").exists() and not list(tmp_path.glob(".hf.*"))


@pytest.mark.parametrize("args,words", [
    (["--to", "onnx"], "--to onnx"),
    (["--to", "hf", "--model-is", "x"], None),
])
def test_user_mistakes_are_one_line(tmp_path, capsys, args, words):
    path = _checkpoint(tmp_path / "m.pt")
    code, _, err = comco(capsys, "model", "export", f"ckpt:{path}", *args, "--out", tmp_path / "x")
    assert code == 2 and (words is None or words in err)
    assert not (tmp_path / "x").exists()


def test_references_and_folders_that_are_not_exportable(tmp_path, capsys):
    from comco import export_model

    path = _checkpoint(tmp_path / "m.pt")
    with pytest.raises(UserError, match="ckpt:PATH"):
        export_model("ViT-B-32", "hf", tmp_path / "a")
    with pytest.raises(UserError, match="no such file|not found|missing|does not exist"):
        export_model(f"ckpt:{tmp_path / 'absent.pt'}", "hf", tmp_path / "b")
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="not an empty folder"):
        export_model(f"ckpt:{path}", "open_clip", full)
    assert (full / "keep.txt").read_text() == "mine" and len(list(full.iterdir())) == 1
    with pytest.raises(UserError, match="lies under the file"):
        export_model(f"ckpt:{path}", "hf", full / "keep.txt" / "x")
