"""A loaded model, whatever its family: encoders, tokenizer, image transform, identity."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)


OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


@dataclass
class LoadedModel:
    """A model ready to embed: tokenizer, image transform and normalised encoders."""

    name: str
    pretrained: str | None
    identity: str  # names architecture and weights; the embedding cache key
    family: str  # "open_clip" | "hf"
    model: Any
    preprocess: Callable  # PIL image -> float tensor (3, S, S)
    context_length: int
    device: str
    _tokenize: Callable = field(repr=False)
    _encode_image: Callable = field(repr=False)
    _encode_text: Callable = field(repr=False)
    text_map: Any = None
    # how a checkpoint of this model rebuilds its architecture (models that are not an
    # open_clip name: ckpt:, longclip:, debias:); comco train records it
    model_spec: dict | None = None
    # text positions already stretched Long-CLIP style, the first `stretched_keep` copied:
    # fine-tuning goes on at this length instead of stretching again
    stretched_keep: int | None = None

    def tokenize(self, texts: list[str]):
        """LongTensor (len(texts), context_length); texts longer than that are truncated."""
        return self._tokenize(list(texts))

    def encode_image(self, batch):
        import torch.nn.functional as F

        return F.normalize(self._encode_image(batch.to(self.device)).float(), dim=-1)

    def encode_text(self, tokens):
        import torch.nn.functional as F

        f = F.normalize(self._encode_text(tokens.to(self.device)).float(), dim=-1)
        if self.text_map is not None:
            f = F.normalize(f @ self.text_map.T.to(f), dim=-1)
        return f

    @property
    def vit(self):
        """The open_clip VisionTransformer when it pools with a class token, else None."""
        visual = getattr(self.model, "visual", None) if self.family == "open_clip" else None
        if visual is None or getattr(visual, "class_embedding", None) is None:
            return None
        if getattr(visual, "attn_pool", None) is not None or getattr(visual, "pool_type", "tok") != "tok":
            return None
        return visual
