"""Long-CLIP positional stretching: a text tower with 77 positions learns to read 248.

The first `keep` positions are copied and frozen (they are well trained on short
captions, which is what CLIP is good at); the remaining ones are linearly
interpolated at ratio 4, and the last position, which has no right neighbour,
is extrapolated along its last difference. 77 positions become 4*77 - 3*keep.
"""

from __future__ import annotations

import torch
from torch import nn

from comco.errors import UserError

RATIO = 4


def stretched_length(length: int, keep: int) -> int:
    """Number of positions after stretching: keep copied + RATIO per remaining row."""
    return RATIO * length - (RATIO - 1) * keep


def stretch_table(table: torch.Tensor, keep: int) -> torch.Tensor:
    """Stretch an (L, D) positional table to (4L - 3keep, D), as Long-CLIP does.

    Row keep+4i+j (j = 0..3) = (4-j)/4 * row[keep+i] + j/4 * row[keep+i+1] for the rows
    that have a right neighbour; the last four new rows continue the last step
    (row[L-1] + j/4 * (row[L-1] - row[L-2])).
    """
    length, _ = table.shape
    if not 0 <= keep < length - 1:
        raise ValueError(f"keep must be in [0, {length - 2}], got {keep}")
    source = table.detach().to(torch.promote_types(table.dtype, torch.float32))  # fp16 tables interpolate in fp32
    left = source[keep:length - 1]  # rows with a right neighbour
    right = source[keep + 1:length]
    weights = torch.arange(RATIO, dtype=source.dtype) / RATIO  # 0, 1/4, 2/4, 3/4
    interpolated = left[:, None] * (1 - weights[None, :, None]) + right[:, None] * weights[None, :, None]
    last_step = source[length - 1] - source[length - 2]
    extrapolated = source[length - 1][None] + weights[:, None] * last_step[None]
    stretched = torch.cat([source[:keep], interpolated.reshape(-1, source.shape[1]), extrapolated])
    assert stretched.shape[0] == stretched_length(length, keep)
    return stretched.to(table.dtype)


def _text_tower(model: nn.Module) -> nn.Module:
    """The module that owns positional_embedding/attn_mask: CLIP itself or CustomTextCLIP.text."""
    if isinstance(getattr(model, "positional_embedding", None), nn.Parameter):
        return model
    text = getattr(model, "text", None)
    if text is not None and isinstance(getattr(text, "positional_embedding", None), nn.Parameter):
        return text
    raise UserError(
        f"cannot stretch the text positions of {type(model).__name__}: it has no learnt "
        "positional table (Long-CLIP stretching needs an open_clip CLIP text tower)"
    )


def freeze_rows(parameter: nn.Parameter, rows: int) -> None:
    """Zero the gradient of the first `rows` rows so an optimiser never moves them.

    With zero gradients Adam(W) makes exactly zero updates; decoupled weight decay
    would still shrink them, so the caller puts this parameter in a no-decay group.
    """
    if rows <= 0:
        return

    def mask(grad: torch.Tensor) -> torch.Tensor:
        grad = grad.clone()
        grad[:rows] = 0
        return grad

    parameter.register_hook(mask)
    parameter._comco_frozen_rows = rows  # read by param_groups() and by tests


def stretch_text_positions(model: nn.Module, keep: int = 20, freeze: bool = True) -> int:
    """Stretch the model's text positions in place; returns the new context length.
    freeze False: the `keep` copied rows are trained like the rest (Long-CLIP freezes them)."""
    tower = _text_tower(model)
    old = tower.positional_embedding
    new_table = stretch_table(old.data, keep)
    new_length = new_table.shape[0]
    tower.positional_embedding = nn.Parameter(new_table.to(old.device), requires_grad=old.requires_grad)
    if getattr(tower, "attn_mask", None) is not None:
        # causal mask: -inf above the diagonal, at the new length
        mask = torch.full((new_length, new_length), float("-inf"), device=tower.attn_mask.device)
        tower.attn_mask = mask.triu_(1).to(tower.attn_mask.dtype)
    for owner in {id(tower): tower, id(model): model}.values():
        if hasattr(owner, "context_length"):
            owner.context_length = new_length
        if hasattr(owner, "num_pos"):
            owner.num_pos = new_length
    if freeze:
        freeze_rows(tower.positional_embedding, keep)
    return new_length


def positional_parameter(model: nn.Module) -> nn.Parameter:
    return _text_tower(model).positional_embedding
