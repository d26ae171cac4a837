"""The field's compositional training fixes as scratch objectives (issue 39), beside the
plain contrastive loss (comco.train.losses.contrastive_loss):

- `siglip`: SigLIP's pairwise sigmoid loss in place of the softmax (Zhai et al. 2023; its
  big_vision code): -sum_ij log sigmoid(z_ij (t x_i.y_j + b)) / B with z_ii = 1, z_ij = -1,
  a learnable temperature t = exp(t') and bias b, initialised t' = log 10, b = -10.
- `negclip`: NegCLIP's hard negatives (Yuksekgonul et al. 2023): each caption brings one
  foil into the batch, scored against every image in the image-to-text direction only
  (its code appends the negatives to the texts; the text-to-image term is over the true
  captions). A foil here is one of: an object swapped for one absent from the caption, two
  attribute words exchanged (comco.train.negatives.swap_words, where the caption has two
  different ones), or the mentions shuffled into another order, NegCLIP's word-order
  shuffle at the level of this data's mention lists. The last is no foil here: "cube and
  cone" describes the image of a cube and a cone as truly as "cone and cube" does, so
  NegCLIP teaches the model to tell true descriptions of its image apart by order.
- `negclip-orderpos`: the same swaps without the shuffles, and the caption itself in a
  uniformly drawn mention order: reorderings are positives.
- `orderaug`: the contrastive loss on the caption in a uniformly drawn mention order (every
  mention order of the image's objects a positive): the data fix.

The captions are the lab's "and" template (mentions joined by " and "); a caption without
that joint is one mention.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from comco.train.negatives import ATTRIBUTES, swap_words

JOINT = " and "
SIGLIP_INIT_SCALE = math.log(10.0)  # t' (t = exp t'), big_vision's siglip init
SIGLIP_INIT_BIAS = -10.0
FOIL_KINDS = ("swap", "attribute", "shuffle")
# objective -> (foil kinds drawn from, reorder the positive)
NEGCLIP = {"negclip": (FOIL_KINDS, False), "negclip-orderpos": (("swap", "attribute"), True)}


def mentions(caption: str) -> list[str]:
    return caption.split(JOINT)


def reorder(caption: str, rng: np.random.Generator) -> str:
    """The caption's mentions in a uniformly drawn order (possibly the same one)."""
    parts = mentions(caption)
    return JOINT.join(parts[i] for i in rng.permutation(len(parts)))


def vocabulary(captions) -> list[str]:
    """The mentions (object names, with their attributes) the captions use, sorted."""
    return sorted({m for c in captions for m in mentions(c)})


def _attribute_words(caption: str) -> set[str]:
    return {w.lower() for w in caption.replace(",", " ").split() if w.lower() in ATTRIBUTES}


def foil_kinds(caption: str, vocab: list[str], kinds=FOIL_KINDS) -> list[str]:
    """The kinds of foil this caption has: a swap needs a mention absent from it, an
    attribute swap two different attribute words, a shuffle two different mentions."""
    parts = mentions(caption)
    out = []
    if "swap" in kinds and any(m not in parts for m in vocab):
        out.append("swap")
    if "attribute" in kinds and len(_attribute_words(caption)) >= 2:
        out.append("attribute")
    if "shuffle" in kinds and len(set(parts)) >= 2:
        out.append("shuffle")
    return out


def foil(caption: str, vocab: list[str], rng: np.random.Generator, kinds=FOIL_KINDS) -> tuple[str, str] | None:
    """(kind, foil) of one kind drawn uniformly among those the caption has; None if none."""
    available = foil_kinds(caption, vocab, kinds)
    if not available:
        return None
    kind = available[int(rng.integers(len(available)))]
    parts = mentions(caption)
    if kind == "swap":
        absent = [m for m in vocab if m not in parts]
        parts[int(rng.integers(len(parts)))] = absent[int(rng.integers(len(absent)))]
        return kind, JOINT.join(parts)
    if kind == "attribute":
        return kind, swap_words(caption, rng)
    while True:  # a different order (two or more different mentions: one exists)
        shuffled = [parts[i] for i in rng.permutation(len(parts))]
        if shuffled != parts:
            return kind, JOINT.join(shuffled)


def siglip_loss(image: torch.Tensor, text: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """SigLIP's loss on unit features: -sum of log sigmoid(z * (scale * cos + bias)) over the
    B x B pairs, divided by B (big_vision's `sigmoid` loss); `scale` is t = exp(t')."""
    image = F.normalize(image.float(), dim=-1)
    text = F.normalize(text.float(), dim=-1)
    logits = scale.float() * image @ text.T + bias.float()
    labels = 2 * torch.eye(len(image), device=image.device) - 1
    return -F.logsigmoid(labels * logits).sum() / len(image)


def negclip_loss(image: torch.Tensor, text: torch.Tensor, foils: torch.Tensor, scale: torch.Tensor,
                 has_foil: torch.Tensor | None = None) -> torch.Tensor:
    """NegCLIP's loss: image-to-text cross-entropy over the captions and the foils, text-to-image
    over the captions (as its code). `has_foil` False rows (captions without a foil) leave
    their foil out of every image's candidates."""
    image = F.normalize(image.float(), dim=-1)
    text = F.normalize(text.float(), dim=-1)
    foils = F.normalize(foils.float(), dim=-1)
    scale = scale.float()
    targets = torch.arange(len(image), device=image.device)
    foil_logits = scale * image @ foils.T
    if has_foil is not None:
        foil_logits = foil_logits.masked_fill(~has_foil.to(image.device)[None, :], float("-inf"))
    image_to_text = torch.cat([scale * image @ text.T, foil_logits], dim=1)
    text_to_image = scale * text @ image.T
    return (F.cross_entropy(image_to_text, targets) + F.cross_entropy(text_to_image, targets)) / 2
