"""The papers' own checkpoint files, `longclip:PATH` and `debias:PATH`, read in their
published layouts and built as the open_clip CLIP that computes the same features.

Long-CLIP (github beichenzbc/Long-CLIP; `longclip-B.pt`, `longclip-L.pt` from the Hugging
Face repos BeichenZhang/LongCLIP-B and -L): `torch.save` of the model's state dict, OpenAI
CLIP key names (`visual.*`, `token_embedding.weight`, `transformer.resblocks.N.*`,
`ln_final.*`, `text_projection`, `logit_scale`) and two text position tables of 248 rows,
`positional_embedding` and `positional_embedding_res`. Its encode_text adds the first on
positions 0..19 and the second on 20..247 (two 0/1 masks), so one table made of the first's
rows 0..19 and the second's rows 20..247 is the same model: an open_clip CLIP with 248
positions, QuickGELU, heads of 64 channels, tokens pooled at the end-of-text id.

DeBias-CLIP (github TRAILab/DeBias-CLIP; `debias_vitb_3e.pt`): an open_clip training
checkpoint {"epoch", "name", "state_dict", "optimizer", "scaler"} of the fork's
`ViT-B-16-longclip` CustomTextCLIP (QuickGELU, 248 positions), keys prefixed "module.":
`visual.*` as in OpenAI's layout, the text tower under `text.` with
`text.positional_embedding` and `text.positional_embedding_res` (248 rows each). The
authors' loader replaces the saved `_res` table by `text.positional_embedding` when it
reads a file whose positions are stretched already (a reproduction of the released numbers
with their code records this), so the model it evaluates uses `text.positional_embedding`
at every position; comco builds that model.

Tokenizer: CLIP's BPE at 248 positions, longer texts truncated with the end-of-text id
kept last. Images: resize the shorter side (bicubic), centre-crop, OpenAI mean/std.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from comco.errors import UserError
from comco.io import file_digest
from comco.models.checkpoints import MAX_LAYERS, build_open_clip, shape_problems
from comco.models.layouts import expect_layout, read_torch_file, state_of, storage_problem
from comco.models.loaded import OPENAI_MEAN, OPENAI_STD, LoadedModel
from comco.models.openclip import wrap_open_clip

POSITIONS = 248  # both papers' text towers


KEEP = 20  # Long-CLIP's positions copied from CLIP (positional_embedding's rows)


HEAD_WIDTH = 64  # OpenAI CLIP's heads: width // 64 in both towers


PAPER = {"longclip": "Long-CLIP", "debias": "DeBias-CLIP"}


def load_paper_checkpoint(kind: str, path: Path, device: str) -> LoadedModel:
    """A LoadedModel from a Long-CLIP (`kind` "longclip") or DeBias-CLIP ("debias") file."""
    import open_clip
    import torch

    obj = read_torch_file(path, f"{kind}:")
    expect_layout(path, obj, kind)
    state = state_of(obj)
    bad = next((k for k, v in state.items() if not isinstance(v, torch.Tensor)), None)
    if bad is not None:
        raise UserError(f"{path}: damaged {PAPER[kind]} checkpoint: {bad} is not a tensor")
    problem = storage_problem(state)
    if problem:
        raise UserError(f"{path}: damaged {PAPER[kind]} checkpoint: {problem}")
    state = _from_debias(path, state) if kind == "debias" else _from_longclip(path, state)
    cfg = _architecture(path, kind, state)
    spec = {"open_clip_cfg": cfg, "source": f"{PAPER[kind]} {path.name}",
            "preprocess": {"mean": list(OPENAI_MEAN), "std": list(OPENAI_STD)}}
    with torch.device("meta"):  # every shape checked before the real model is allocated
        skeleton, _, _ = build_open_clip(spec)
    problems = shape_problems(skeleton, state)
    if problems:
        raise UserError(f"{path}: its tensors do not fit the {PAPER[kind]} architecture they describe: {problems}")
    model, _, _ = build_open_clip(spec)
    model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})
    model.to(device)
    preprocess = open_clip.image_transform(cfg["vision_cfg"]["image_size"], is_train=False,
                                           mean=OPENAI_MEAN, std=OPENAI_STD)
    tokenizer = open_clip.SimpleTokenizer(context_length=POSITIONS)
    loaded = wrap_open_clip(f"{kind}:{path}", None, f"{kind}/{file_digest(path)}", model, preprocess,
                            tokenizer, device)
    loaded.model_spec, loaded.stretched_keep = spec, KEEP
    return loaded


def _from_longclip(path: Path, state: dict) -> dict:
    """OpenAI keys with the two tables merged into one (rows 0..19 of the first, the rest of the second)."""
    import torch

    base, res = _tables(path, "longclip", state, "positional_embedding", "token_embedding.weight")
    drop = ("positional_embedding_res", "input_resolution", "context_length", "vocab_size")
    state = {k: v for k, v in state.items() if k not in drop}
    state["positional_embedding"] = torch.cat([base[:KEEP], res[KEEP:]])
    return state


def _from_debias(path: Path, state: dict) -> dict:
    """open_clip CLIP keys: the text tower's out of `text.`, its base table at every position."""
    base, _ = _tables(path, "debias", state, "text.positional_embedding", "text.token_embedding.weight")
    out = {}
    for key, value in state.items():
        if key != "text.positional_embedding_res":
            out[key.removeprefix("text.")] = value
    out["positional_embedding"] = base
    return out


def _tables(path: Path, kind: str, state: dict, name: str, tokens: str):
    """The base and `_res` position tables, checked against the text tower's width."""
    if tokens not in state or state[tokens].ndim != 2 or 0 in state[tokens].shape:
        raise UserError(f"{path}: damaged {PAPER[kind]} checkpoint: no non-empty 2-d {tokens}")
    width = state[tokens].shape[1]
    tables = state.get(name), state.get(name + "_res")
    for key, table in zip((name, name + "_res"), tables):
        if table is None or tuple(table.shape) != (POSITIONS, width):
            shape = "missing" if table is None else f"{list(table.shape)}"
            raise UserError(f"{path}: its positional table {key} is {shape}, but a {PAPER[kind]} text "
                            f"tower of width {width} has {POSITIONS} positions: [{POSITIONS}, {width}]")
    return tables


def _blocks(state: dict, prefix: str) -> int:
    found = {int(m.group(1)) for k in state if (m := re.match(re.escape(prefix) + r"(\d+)\.", k))}
    return len(found)


def _architecture(path: Path, kind: str, state: dict) -> dict:
    """The open_clip config the (converted) tensors describe, OpenAI-style (heads of 64, MLP x4)."""
    need = ("visual.conv1.weight", "visual.positional_embedding", "visual.proj", "ln_final.weight", "text_projection")
    missing = [k for k in need if k not in state]
    if missing:
        what = "a ResNet image tower (comco reads ViT towers)" if "visual.layer1.0.conv1.weight" in state else (
            f"no {missing[0]}")
        raise UserError(f"{path}: not a {PAPER[kind]} ViT checkpoint: {what}")
    for key, dims in (("visual.conv1.weight", 4), ("visual.positional_embedding", 2), ("visual.proj", 2),
                      ("ln_final.weight", 1), ("text_projection", 2)):
        if state[key].ndim != dims or 0 in state[key].shape:
            raise UserError(f"{path}: damaged {PAPER[kind]} checkpoint: {key} is {list(state[key].shape)}, "
                            f"a {PAPER[kind]} model has a non-empty {dims}-d tensor there")
    conv = state["visual.conv1.weight"]
    vision_width, patch = int(conv.shape[0]), int(conv.shape[-1])
    if tuple(conv.shape[1:]) != (3, patch, patch):
        raise UserError(f"{path}: damaged {PAPER[kind]} checkpoint: visual.conv1.weight is {list(conv.shape)}, "
                        "the patch embedding of RGB images: [width, 3, patch, patch]")
    rows = int(state["visual.positional_embedding"].shape[0])
    grid = math.isqrt(max(rows - 1, 0))
    if rows < 2 or grid * grid + 1 != rows:
        raise UserError(f"{path}: its positional table visual.positional_embedding has {rows} rows; a ViT "
                        "has a square grid of patches plus the class token (n * n + 1)")
    text_width = int(state["ln_final.weight"].shape[0])
    for tower, width in (("image", vision_width), ("text", text_width)):
        if width % HEAD_WIDTH:
            raise UserError(f"{path}: its {tower} tower is {width} wide, not a multiple of the "
                            f"{HEAD_WIDTH}-channel heads of a {PAPER[kind]} model")
    layers = _blocks(state, "visual.transformer.resblocks."), _blocks(state, "transformer.resblocks.")
    if not all(1 <= n <= MAX_LAYERS for n in layers):
        raise UserError(f"{path}: damaged {PAPER[kind]} checkpoint: {layers[0]} image and {layers[1]} text "
                        f"layers (1..{MAX_LAYERS} each)")
    return {
        "embed_dim": int(state["text_projection"].shape[1]), "quick_gelu": True,
        "vision_cfg": {"image_size": patch * grid, "patch_size": patch, "width": vision_width,
                       "layers": layers[0], "head_width": HEAD_WIDTH},
        "text_cfg": {"context_length": POSITIONS, "vocab_size": int(state["token_embedding.weight"].shape[0]),
                     "width": text_width, "heads": text_width // HEAD_WIDTH, "layers": layers[1]},
    }
