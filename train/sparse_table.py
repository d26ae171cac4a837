"""AdamW on the token table row by row: the same update, without touching the 49,408 rows a
small vocabulary never uses.

The token table of an open_clip text tower is 78 % of the lab's small scratch CLIP (6.3 M of
8.1 M parameters), but the lab's captions use about a hundred of its rows. Dense AdamW still
pays for all of them on every step: a zeroed 25 MB gradient and an update that reads and
writes four such tensors, a fifth of a CPU step. Here the table's gradient is sparse (the rows
the batch used) and the optimiser updates, with torch's own fused kernel, only the rows whose
Adam moments are not zero; every other row gets the decoupled weight decay alone, which is
all dense AdamW does to a row whose moments are zero (its Adam term is 0 / (0 + eps)). The
arithmetic per element is the fused kernel's, so the weights come out bit for bit as dense
AdamW's (tests/test_sparse_table.py) where a row is a whole number of SIMD vectors wide: the
fused kernel rounds its scalar tail otherwise, so narrower or odd tables stay dense. The
optimiser state keeps dense AdamW's layout, so checkpoints resume either way.
"""

from __future__ import annotations

import torch
from torch import nn

TABLE_NAME = "token_embedding"
ROW_MULTIPLE = 16  # floats: an AVX512 vector (two AVX2 ones); every CLIP text width is a multiple


def sparse_token_table(module: nn.Module) -> nn.Embedding | None:
    """Switch the text tower's token table to sparse gradients where RowwiseAdamW can take them;
    returns the table (to switch back with `dense_again`), or None where it stays dense."""
    table = getattr(module, TABLE_NAME, None)
    if not isinstance(table, nn.Embedding) or not table.weight.requires_grad or table.max_norm is not None:
        return None
    if getattr(table.weight, "_comco_frozen_rows", 0) > 0:  # a gradient hook masks rows: keep it dense
        return None
    if table.embedding_dim % ROW_MULTIPLE:  # rows would end in the kernel's scalar tail: not bit-exact
        return None
    table.sparse = True
    return table


def dense_again(table: nn.Embedding | None) -> None:
    if table is not None:
        table.sparse = False


class RowwiseAdamW(torch.optim.AdamW):
    """torch's AdamW, with parameters whose gradient is sparse updated row by row (see the
    module's docstring). Dense parameters take AdamW's own step unchanged."""

    def __init__(self, params, **kw):
        if kw.get("amsgrad") or kw.get("maximize"):
            raise ValueError("RowwiseAdamW supports neither amsgrad nor maximize")
        super().__init__(params, **kw)
        self._touched: dict[int, torch.Tensor] = {}

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self._touched.clear()  # which rows have moments is read again from the loaded state

    @torch.no_grad()
    def step(self, closure=None):
        sparse = [(group, p) for group in self.param_groups for p in group["params"]
                  if p.grad is not None and p.grad.is_sparse]
        grads = [p.grad for _, p in sparse]
        for _, p in sparse:
            p.grad = None  # AdamW's own step skips them
        try:
            loss = super().step(closure)
            for (group, p), grad in zip(sparse, grads):
                self._rows_step(group, p, grad)
        finally:
            for (_, p), grad in zip(sparse, grads):
                p.grad = grad
        return loss

    def _rows_step(self, group: dict, p: torch.Tensor, grad: torch.Tensor) -> None:
        state = self.state[p]
        if not state:
            state["step"] = torch.tensor(0.0, dtype=torch.float32, device=p.device)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        # summed in the order the tokens came, as the dense backward sums them (not coalesce's order)
        occurrences = grad._indices()[0] if not grad.is_coalesced() else grad.indices()[0]
        values = grad._values() if not grad.is_coalesced() else grad.values()
        used = occurrences.unique()
        touched = self._touched.get(id(p))
        if touched is None or touched.numel() != p.shape[0]:
            # rows with any non-zero moment (after a resume, from the loaded state)
            touched = (m != 0).any(dim=1) | (v != 0).any(dim=1)
            self._touched[id(p)] = touched
        touched[used] = True
        rows = touched.nonzero().squeeze(1)
        row_grad = torch.zeros((rows.numel(), *p.shape[1:]), dtype=p.dtype, device=p.device)
        row_grad.index_add_(0, torch.searchsorted(rows, occurrences), values.to(p.dtype))
        lr, wd = group["lr"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        state["step"] += 1
        kept = p[rows]  # these rows take the fused kernel's own decay with their update
        if wd != 0:
            p.mul_(1 - lr * wd)  # the decoupled decay dense AdamW gives a row whose moments are zero
        row_p, row_m, row_v = kept, m[rows], v[rows]
        torch._fused_adamw_([row_p], [row_grad], [row_m], [row_v], [], [state["step"]], lr=lr, beta1=beta1,
                            beta2=beta2, weight_decay=wd, eps=group["eps"], amsgrad=False, maximize=False)
        p[rows] = row_p
        m[rows] = row_m
        v[rows] = row_v
