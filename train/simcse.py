"""The text tower trained on the captions alone: SimCSE's unsupervised objective
(Gao et al. 2021), the objective of one of the text-only encoders ComCO's Table 5 finds
leaning to the last-mentioned object rather than the first.

Each caption is encoded twice with dropout on (two views differing only in their dropout
masks): the two views are the positive pair, the other captions of the batch the
negatives, InfoNCE at SimCSE's temperature 0.05. Deviation, named: captions whose tokens
are identical to the anchor's (two 1-object scenes of the same name in one batch) are
masked out of the negatives instead of counted as wrong answers.

open_clip's text transformer has no dropout, so SimCSE's (p = 0.1, BERT's places: on
every residual branch and on the attention weights) is added to the training module
only; it is off in eval mode and leaves the saved weights as plain open_clip ones.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

TEMPERATURE = 0.05  # SimCSE's
DROPOUT = 0.1  # SimCSE's (BERT's hidden and attention dropout)


def add_text_dropout(module: nn.Module, p: float = DROPOUT) -> None:
    """Dropout on the text transformer's residual branches and attention weights (training mode only).

    Args:
        module: an open_clip CLIP (its text blocks are module.transformer.resblocks). p: the rate.
    """
    def drop(mod, _inputs, output):
        return F.dropout(output, p, training=mod.training)

    for block in module.transformer.resblocks:
        # ls_1 / ls_2 are the layer scales (Identity without one) on the attention and MLP branches
        block.ls_1.register_forward_hook(drop)
        block.ls_2.register_forward_hook(drop)
        if isinstance(block.attn, nn.MultiheadAttention):
            block.attn.dropout = p


def simcse_loss(module: nn.Module, text: torch.Tensor,
                temperature: float = TEMPERATURE) -> tuple[torch.Tensor, dict[str, float]]:
    """InfoNCE between two dropout views of each caption; (loss, {"view_acc": the share of
    captions whose nearest other view is their own}).

    Args:
        module: a CLIP with add_text_dropout (or its DDP wrapper). text: token ids [B, L].
    """
    from comco.train.clip_forward import text_features

    # one forward over the batch twice (as SimCSE's code does): each row draws its own dropout
    a, b = text_features(module, torch.cat([text, text])).float().chunk(2)
    logits = a @ b.T / temperature
    same = (text.unsqueeze(1) == text.unsqueeze(0)).all(-1)
    same.fill_diagonal_(False)  # identical captions are not negatives of each other
    logits = logits.masked_fill(same, float("-inf"))
    targets = torch.arange(len(text), device=text.device)
    loss = F.cross_entropy(logits, targets)
    acc = (logits.argmax(1) == targets).float().mean().item()
    return loss, {"view_acc": acc}
