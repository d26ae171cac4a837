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
from comco.probes.retrieval import size_labels
from comco.probes.stats import mean_with_interval
from comco.record import measured_ranks


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


def input_geometry(preprocess, resolution) -> tuple[float, float, float, float, int, int]:
    """(sx, sy, dx, dy, H, W): image point (x, y) lands at (x*sx + dx, y*sy + dy) of the H x W input.

    Follows the model's own preprocessing step by step (torchvision Resize: shortest edge
    or exact size; open_clip ResizeKeepRatio; CenterCrop / CenterCropOrPad, padding when
    the crop is larger), with torchvision's rounding, so 'shortest', 'squash' and
    'longest' resize modes and non-square inputs all map boxes to the right patches.
    """
    w, h = int(resolution[0]), int(resolution[1])
    sx = sy = 1.0
    dx = dy = 0.0
    for t in getattr(preprocess, "transforms", [preprocess]):
        kind = type(t).__name__
        if kind == "Resize":
            size = [t.size] if isinstance(t.size, int) else list(t.size)
            if len(size) == 1:
                short, long = (w, h) if w <= h else (h, w)
                new_short, new_long = size[0], int(size[0] * long / short)
                if t.max_size is not None and new_long > t.max_size:
                    new_short, new_long = int(t.max_size * new_short / new_long), t.max_size
                nw, nh = (new_short, new_long) if w <= h else (new_long, new_short)
            else:
                nh, nw = size
        elif kind == "ResizeKeepRatio":
            rh, rw = h / t.size[0], w / t.size[1]
            ratio = max(rh, rw) * t.longest + min(rh, rw) * (1.0 - t.longest)
            nh, nw = round(h / ratio), round(w / ratio)
        elif kind in ("CenterCrop", "CenterCropOrPad"):
            ch, cw = (t.size, t.size) if isinstance(t.size, int) else (tuple(t.size) * 2)[:2]
            left, top = max(0, (cw - w) // 2), max(0, (ch - h) // 2)
            w, h = max(w, cw), max(h, ch)  # padding (both sides) first when the crop is larger
            dx += left - int(round((w - cw) / 2.0))
            dy += top - int(round((h - ch) / 2.0))
            w, h = cw, ch
            continue
        elif any(k in kind for k in ("Resize", "Crop", "Pad", "Affine", "Rotat", "Flip", "Perspective")):
            raise UserError(f"probe 'attention' cannot map object boxes through the preprocessing step {kind}")
        else:
            continue  # colour conversion, ToTensor, Normalize: no geometry
        sx, sy, dx, dy = sx * nw / w, sy * nh / h, dx * nw / w, dy * nh / h
        w, h = nw, nh
    return sx, sy, dx, dy, h, w


def box_weights(bbox, geometry, grid: tuple[int, int]) -> np.ndarray:
    """Share of each patch covered by the box [x0, y0, x1, y1] (image pixels) in the model input."""
    sx, sy, dx, dy, height, width = geometry
    x0, y0, x1, y1 = bbox[0] * sx + dx, bbox[1] * sy + dy, bbox[2] * sx + dx, bbox[3] * sy + dy
    gh, gw = grid
    ph, pw = height / gh, width / gw
    ys, xs = np.arange(gh) * ph, np.arange(gw) * pw
    cover_y = np.clip(np.minimum(ys + ph, y1) - np.maximum(ys, y0), 0, None) / ph
    cover_x = np.clip(np.minimum(xs + pw, x1) - np.maximum(xs, x0), 0, None) / pw
    return np.outer(cover_y, cover_x)


def attention(data, loaded, *, batch_size: int, n_boot: int, seed: int) -> list[dict]:
    import torch

    vit = loaded.vit
    if vit is None:
        raise UserError(f"probe 'attention' needs an open_clip ViT with a class token; {loaded.name} is not one")
    size = tuple(vit.image_size) if isinstance(vit.image_size, (tuple, list)) else (vit.image_size,) * 2
    grid = tuple(vit.grid_size)
    geometries = {}
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
                res = tuple(r["resolution"])
                if res not in geometries:
                    geometries[res] = input_geometry(loaded.preprocess, res)
                    if geometries[res][4:] != size:
                        raise UserError(f"probe 'attention': the preprocessing makes {geometries[res][4:]} "
                                        f"inputs but the ViT takes {size}")
                wts = box_weights(o["measured"]["bbox"], geometries[res], grid)
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
            seen = np.array(area[k]) > 0  # a box cropped out of the model's view has no ratio
            r = np.array(mass[k])[seen] / np.array(area[k])[seen]
            ratio.append({"role": label, "unit": "x",
                          **mean_with_interval(r, np.array(ids[k])[seen], n_boot=n_boot, seed=seed + 50 + rank)})
        groups.append({"key": f"{n} objects", "n_objects": n, "queries": len(ids[(n, 0)]),
                       "metrics": {"CLS attention mass in box": m_rows, "box area share (uniform attention)": a_rows,
                                   "mass / area": ratio}})
    return groups
