"""A local transformers SigLIP 2 (NaFlex) checkpoint through `hf:DIR` (tiny random model).

SigLIP 2 takes patches of the image at its own aspect ratio, a mask of the real ones and
the patch grid; comco packs them in one tensor per image (see comco.models.factory._naflex).
"""

from __future__ import annotations

import pytest
from support.probes import HIDDEN, save_tokenizer

pytestmark = pytest.mark.torch

PATCH, MAX_PATCHES = 8, 16


@pytest.fixture(scope="module")
def siglip2(tmp_path_factory):
    import torch
    from transformers import Siglip2Config, Siglip2ImageProcessor, Siglip2Model

    folder = tmp_path_factory.mktemp("siglip2")
    vocab, eos = save_tokenizer(folder)
    text = {"vocab_size": vocab, "hidden_size": HIDDEN, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "pad_token_id": eos, "eos_token_id": eos, "bos_token_id": eos}
    vision = {"hidden_size": HIDDEN, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "patch_size": PATCH, "num_patches": MAX_PATCHES}
    torch.manual_seed(0)
    model = Siglip2Model(Siglip2Config(text_config=text, vision_config=vision)).eval()
    model.save_pretrained(folder)
    Siglip2ImageProcessor(patch_size=PATCH, max_num_patches=MAX_PATCHES).save_pretrained(folder)
    return folder, model


def _image(w, h, seed):
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8))


def test_siglip2_images_go_in_as_its_processor_makes_them(siglip2):
    import torch
    import torch.nn.functional as F
    from transformers import Siglip2ImageProcessor

    from comco.models import load_model

    folder, model = siglip2
    m = load_model(f"hf:{folder}")
    assert m.identity.startswith("hf/siglip2/") and m.context_length == 64
    wide, square = _image(96, 40, 1), _image(48, 48, 2)
    theirs = Siglip2ImageProcessor.from_pretrained(str(folder))([wide, square], return_tensors="pt")
    # The wide image keeps its aspect ratio: fewer real patches than the maximum, the rest padding.
    shapes = theirs["spatial_shapes"]
    assert shapes[0].tolist() != shapes[1].tolist() and int(shapes[0].prod()) < MAX_PATCHES
    packed = torch.stack([m.preprocess(wide), m.preprocess(square)])
    assert packed.shape == (2, MAX_PATCHES + 1, 3 * PATCH * PATCH)
    assert torch.equal(packed[:, 1:], theirs["pixel_values"])
    assert torch.equal(packed[:, 0, :2].long(), shapes)
    with torch.inference_mode():
        ours = m.encode_image(packed)
        direct = model.get_image_features(pixel_values=theirs["pixel_values"],
                                          pixel_attention_mask=theirs["pixel_attention_mask"],
                                          spatial_shapes=shapes)
    direct = F.normalize(getattr(direct, "pooler_output", direct), dim=-1)
    assert ours.shape == (2, HIDDEN)
    assert torch.allclose(ours, direct, atol=1e-5)
    # Batched with a differently shaped image or alone: the same feature (the mask works).
    with torch.inference_mode():
        alone = m.encode_image(packed[:1])
    assert torch.allclose(alone[0], ours[0], atol=1e-5)


def test_siglip2_texts_embed(siglip2):
    import torch

    from comco.models import load_model

    folder, _ = siglip2
    m = load_model(f"hf:{folder}")
    with torch.inference_mode():
        t = m.encode_text(m.tokenize(["a cube", "a cone, a torus and a sphere"]))
    assert t.shape == (2, HIDDEN) and not torch.allclose(t[0], t[1], atol=1e-3)
