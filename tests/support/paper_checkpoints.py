"""Tiny random checkpoints in the papers' file layouts, and their forward pass written out
from the tensors (no open_clip, no comco): what comco's features must equal.

The key names and tensor roles are those of the released files: Long-CLIP's
`torch.save(model.state_dict())` of an OpenAI-layout CLIP with `positional_embedding` and
`positional_embedding_res` (248 rows), and DeBias-CLIP's open_clip training checkpoint of a
CustomTextCLIP (`module.visual.*`, `module.text.*`, `epoch`, `optimizer`, `scaler`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

POSITIONS, KEEP, VOCAB = 248, 20, 49408
WIDTH, LAYERS, PATCH, GRID, EMBED = 128, 2, 16, 2, 64  # heads of 64 channels: 2 per tower
IMAGE = PATCH * GRID


def _block(sd: dict, prefix: str, width: int, g: torch.Generator) -> None:
    def r(*shape, std=0.02):
        return torch.randn(*shape, generator=g) * std

    for ln in ("ln_1", "ln_2"):
        sd[f"{prefix}{ln}.weight"] = 1 + r(width, std=0.1)
        sd[f"{prefix}{ln}.bias"] = r(width, std=0.1)
    sd[f"{prefix}attn.in_proj_weight"] = r(3 * width, width, std=width ** -0.5)
    sd[f"{prefix}attn.in_proj_bias"] = r(3 * width)
    sd[f"{prefix}attn.out_proj.weight"] = r(width, width, std=width ** -0.5)
    sd[f"{prefix}attn.out_proj.bias"] = r(width)
    sd[f"{prefix}mlp.c_fc.weight"] = r(4 * width, width, std=width ** -0.5)
    sd[f"{prefix}mlp.c_fc.bias"] = r(4 * width)
    sd[f"{prefix}mlp.c_proj.weight"] = r(width, 4 * width, std=(4 * width) ** -0.5)
    sd[f"{prefix}mlp.c_proj.bias"] = r(width)


def _tower_tensors(seed: int) -> tuple[dict, dict]:
    """(image tower in OpenAI's names under visual., text tower in OpenAI's names), random."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape, std=0.02):
        return torch.randn(*shape, generator=g) * std

    visual = {"visual.class_embedding": r(WIDTH, std=WIDTH ** -0.5),
              "visual.positional_embedding": r(GRID * GRID + 1, WIDTH, std=WIDTH ** -0.5),
              "visual.proj": r(WIDTH, EMBED, std=WIDTH ** -0.5),
              "visual.conv1.weight": r(WIDTH, 3, PATCH, PATCH, std=0.05),
              "visual.ln_pre.weight": 1 + r(WIDTH, std=0.1), "visual.ln_pre.bias": r(WIDTH, std=0.1),
              "visual.ln_post.weight": 1 + r(WIDTH, std=0.1), "visual.ln_post.bias": r(WIDTH, std=0.1)}
    for i in range(LAYERS):
        _block(visual, f"visual.transformer.resblocks.{i}.", WIDTH, g)
    text = {"positional_embedding": r(POSITIONS, WIDTH, std=0.3),
            "positional_embedding_res": r(POSITIONS, WIDTH, std=0.3),
            "text_projection": r(WIDTH, EMBED, std=WIDTH ** -0.5),
            "token_embedding.weight": r(VOCAB, WIDTH, std=0.3),
            "ln_final.weight": 1 + r(WIDTH, std=0.1), "ln_final.bias": r(WIDTH, std=0.1)}
    for i in range(LAYERS):
        _block(text, f"transformer.resblocks.{i}.", WIDTH, g)
    return visual, text


def longclip_state(seed: int = 0) -> dict:
    """A Long-CLIP `model.state_dict()`: OpenAI keys and the two 248-row text tables."""
    visual, text = _tower_tensors(seed)
    return {**visual, **text, "logit_scale": torch.tensor(4.6052)}


def debias_checkpoint(seed: int = 0) -> dict:
    """A DeBias-CLIP training checkpoint: the state dict of a CustomTextCLIP under DDP."""
    visual, text = _tower_tensors(seed)
    state = {**visual, **{f"text.{k}": v for k, v in text.items()}, "logit_scale": torch.tensor(4.6052)}
    state = {f"module.{k}": v for k, v in state.items()}
    optimizer = {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.zeros(4)}},
                 "param_groups": [{"lr": 1e-6, "weight_decay": 0.01, "params": [0]}]}
    return {"epoch": 3, "name": "debias_vitb", "state_dict": state, "optimizer": optimizer,
            "scaler": {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000}}


def _layer_norm(x, sd, name):
    return F.layer_norm(x, (x.shape[-1],), sd[f"{name}.weight"], sd[f"{name}.bias"], eps=1e-5)


def _residual_block(x, sd, p, mask=None):
    """OpenAI CLIP's ResidualAttentionBlock on (batch, length, width), heads of 64 channels."""
    b, n, w = x.shape
    heads = w // 64
    h = _layer_norm(x, sd, p + "ln_1")
    q, k, v = (h @ sd[p + "attn.in_proj_weight"].T + sd[p + "attn.in_proj_bias"]).split(w, dim=-1)
    q, k, v = (t.reshape(b, n, heads, w // heads).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) / (w // heads) ** 0.5
    if mask is not None:
        scores = scores + mask
    a = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, w)
    x = x + a @ sd[p + "attn.out_proj.weight"].T + sd[p + "attn.out_proj.bias"]
    h = _layer_norm(x, sd, p + "ln_2") @ sd[p + "mlp.c_fc.weight"].T + sd[p + "mlp.c_fc.bias"]
    h = h * torch.sigmoid(1.702 * h)  # QuickGELU
    return x + h @ sd[p + "mlp.c_proj.weight"].T + sd[p + "mlp.c_proj.bias"]


def image_features(sd: dict, pixels: torch.Tensor) -> torch.Tensor:
    """OpenAI CLIP's VisionTransformer from `visual.*` tensors (not normalised)."""
    x = F.conv2d(pixels, sd["visual.conv1.weight"], stride=sd["visual.conv1.weight"].shape[-1])
    x = x.flatten(2).transpose(1, 2)
    cls = sd["visual.class_embedding"].expand(x.shape[0], 1, -1)
    x = torch.cat([cls, x], dim=1) + sd["visual.positional_embedding"]
    x = _layer_norm(x, sd, "visual.ln_pre")
    i = 0
    while f"visual.transformer.resblocks.{i}.ln_1.weight" in sd:
        x = _residual_block(x, sd, f"visual.transformer.resblocks.{i}.")
        i += 1
    return _layer_norm(x[:, 0], sd, "visual.ln_post") @ sd["visual.proj"]


def longclip_positions(base: torch.Tensor, res: torch.Tensor) -> torch.Tensor:
    """Long-CLIP's encode_text: base * mask1 + res * mask2, mask1 = the first 20 positions."""
    mask1 = torch.zeros(POSITIONS, 1)
    mask1[:KEEP] = 1
    mask2 = torch.zeros(POSITIONS, 1)
    mask2[KEEP:] = 1
    return base * mask1 + res * mask2


def text_features(sd: dict, ids: torch.Tensor, positions: torch.Tensor, prefix: str = "") -> torch.Tensor:
    """OpenAI CLIP's encode_text over all 248 positions (causal mask, end-of-text pooling)."""
    x = sd[prefix + "token_embedding.weight"][ids] + positions
    n = ids.shape[1]
    mask = torch.full((n, n), float("-inf")).triu_(1)
    i = 0
    while f"{prefix}transformer.resblocks.{i}.ln_1.weight" in sd:
        x = _residual_block(x, sd, f"{prefix}transformer.resblocks.{i}.", mask)
        i += 1
    x = _layer_norm(x, sd, prefix + "ln_final")
    return x[torch.arange(len(ids)), ids.argmax(-1)] @ sd[prefix + "text_projection"]
