"""Where the class token looks: last-layer CLS attention mass inside each object's box.

For open_clip ViTs that pool with a class token. The last block's input is captured
with a hook and its attention recomputed with weights (heads averaged). A patch
counts with the share of its area the box covers, so boxes smaller than a patch still
register. `area` is the mass uniform attention would give: mass / area > 1 means the
model looks at the object more than its size alone explains.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from comco.errors import UserError
from comco.probes.embed import load_image_tensor
from comco.probes.probe_data import measured_ranks
from comco.probes.retrieval import size_labels
from comco.probes.stats import mean_with_interval


def cls_attention(vit, batch) -> np.ndarray:
    """(B, gh, gw) last-layer attention of the class token over patches (rows sum to 1 with CLS)."""
    import torch

    block = vit.transformer.resblocks[-1]
    seen = {}
    hook = block.register_forward_pre_hook(lambda mod, args: seen.__setitem__("x", args[0]))
    try:
        with torch.inference_mode():
            vit(batch)
            x = block.ln_1(seen["x"])  # (B, L, D) batch-first, or (L, B, D): attn takes either as built
            _, w = block.attn(x, x, x, need_weights=True, average_attn_weights=True)
    finally:
        hook.remove()
    gh, gw = vit.grid_size
    prefix = w.shape[-1] - gh * gw  # class token (and any register tokens)
    return w[:, 0, prefix:].reshape(-1, gh, gw).float().cpu().numpy()


def box_weights(bbox, resolution, size: int, grid: tuple[int, int]) -> np.ndarray:
    """Share of each patch covered by the box, after open_clip's resize + centre crop."""
    w, h = resolution
    s = size / min(w, h)
    ox, oy = (w * s - size) / 2, (h * s - size) / 2
    x0, y0, x1, y1 = (bbox[0] * s - ox, bbox[1] * s - oy, bbox[2] * s - ox, bbox[3] * s - oy)
    gh, gw = grid
    ph, pw = size / gh, size / gw
    ys, xs = np.arange(gh) * ph, np.arange(gw) * pw
    cover_y = np.clip(np.minimum(ys + ph, y1) - np.maximum(ys, y0), 0, None) / ph
    cover_x = np.clip(np.minimum(xs + pw, x1) - np.maximum(xs, x0), 0, None) / pw
    return np.outer(cover_y, cover_x)


def attention(data, loaded, *, batch_size: int, n_boot: int, seed: int) -> list[dict]:
    import torch

    vit = loaded.vit
    if vit is None:
        raise UserError(f"probe 'attention' needs an open_clip ViT with a class token; {loaded.name} is not one")
    size = vit.image_size[0] if isinstance(vit.image_size, (tuple, list)) else int(vit.image_size)
    grid = tuple(vit.grid_size)
    mass, area, ids = defaultdict(list), defaultdict(list), defaultdict(list)
    recs = data.records
    for i in range(0, len(recs), batch_size):
        chunk = recs[i:i + batch_size]
        x = torch.stack([load_image_tensor(data.image_path(r), loaded.preprocess) for r in chunk])
        att = cls_attention(vit, x.to(loaded.device))
        total = att.sum((1, 2))
        for a, t, r in zip(att, total, chunk):
            n = len(r["objects"])
            for o, rank in zip(r["objects"], measured_ranks(r)):
                wts = box_weights(o["measured"]["bbox"], r["resolution"], size, grid)
                mass[(n, rank)].append(float((a * wts).sum() / t))
                area[(n, rank)].append(float(wts.sum() / wts.size))
                ids[(n, rank)].append(r["id"])
    groups = []
    for n in sorted({k[0] for k in mass}):
        m_rows, a_rows, ratio = [], [], []
        for rank, label in enumerate(size_labels(n)):
            k = (n, rank)
            m_rows.append({"role": label, **mean_with_interval(mass[k], ids[k], n_boot=n_boot, seed=seed + rank)})
            a_rows.append({"role": label, **mean_with_interval(area[k], ids[k], n_boot=0)})
            r = np.array(mass[k]) / np.maximum(np.array(area[k]), 1e-9)
            ratio.append({"role": label, "unit": "x",
                          **mean_with_interval(r, ids[k], n_boot=n_boot, seed=seed + 50 + rank)})
        groups.append({"key": f"{n} objects", "n_objects": n, "queries": len(ids[(n, 0)]),
                       "metrics": {"CLS attention mass in box": m_rows, "box area share (uniform attention)": a_rows,
                                   "mass / area": ratio}})
    return groups
