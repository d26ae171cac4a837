"""The text tower trained on the captions alone with paraphrase pairs: the objective of
sentence-transformers' paraphrase models (SBERT trained with its
MultipleNegativesRankingLoss: an anchor sentence, a sentence that says the same, the other
pairs' sentences of the batch as negatives, cosine similarity scaled by 20), the second
text-only objective beside SimCSE's (comco.train.simcse).

Here a pair is two captions of the same scene in two mention orders (the same objects,
told in another order): the tower must learn which objects a caption names, without an
image. The captions come from the same order-biased stream as the contrastive models'
(at p = 1 both captions of a pair name the largest object first), so this asks whether
an order bias in the captions alone makes the text tower lean on the first mention.
Deviations, named: the pair's second caption is another text of the scene where it has
one (a 1-object scene, or a 2-object one at p = 1, has one text only: its pair is that
text twice, told apart by dropout, as in SimCSE); SimCSE's dropout (comco.train.simcse)
is on, as in the BERT models SBERT trains; and negatives whose text is identical to the
anchor's are masked out, as in comco.train.simcse.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

SCALE = 20.0  # sentence-transformers' MultipleNegativesRankingLoss default (temperature 0.05)


def pair_captions(options: list[str], rng: np.random.Generator) -> tuple[str, str]:
    """(anchor, positive): two of a scene's captions, different texts where it has two."""
    anchor = options[int(rng.integers(len(options)))]
    others = [c for c in options if c != anchor]
    return anchor, (others[int(rng.integers(len(others)))] if others else anchor)


def paraphrase_loss(module: nn.Module, text: torch.Tensor, pair: torch.Tensor,
                    scale: float = SCALE) -> tuple[torch.Tensor, dict[str, float]]:
    """Cross-entropy of each anchor over the batch's positives (its own the target);
    (loss, {"pair_acc": the share of anchors whose nearest positive is their own}).

    Args:
        module: a CLIP with comco.train.simcse.add_text_dropout (or its DDP wrapper).
        text, pair: token ids [B, L] of the anchors and their positives.
    """
    from comco.train.clip_forward import text_features

    a, b = text_features(module, torch.cat([text, pair])).float().chunk(2)
    logits = scale * (a @ b.T)  # text_features are unit vectors: cosine x scale
    # another pair's positive that is the anchor's own text, or its own positive's, is not a negative
    same = (text.unsqueeze(1) == pair.unsqueeze(0)).all(-1) | (pair.unsqueeze(1) == pair.unsqueeze(0)).all(-1)
    same.fill_diagonal_(False)
    logits = logits.masked_fill(same, float("-inf"))
    targets = torch.arange(len(text), device=text.device)
    loss = F.cross_entropy(logits, targets)
    return loss, {"pair_acc": (logits.argmax(1) == targets).float().mean().item()}
