"""The model a fine-tune starts from (`--init`), and the model_spec its checkpoints
record so that `ckpt:PATH` rebuilds exactly this architecture."""

from __future__ import annotations

import copy

from comco.errors import UserError


def load_init(init: str | None, pretrained: str | None, kind: str, device: str = "cpu"):
    """LoadedModel for --init; anything that stops it loading is the user's to fix."""
    from comco.models import ModelRef

    if not init:
        raise UserError(f"comco train {kind} needs --init MODEL (an open_clip name with --pretrained, ckpt:PATH, "
                        "longclip:PATH or debias:PATH)")
    if init.startswith("vlm:"):
        raise UserError(f"--init {init}: comco train {kind} needs an open_clip model, not a generative VLM folder")
    if init.startswith(("hf:", "st:")):  # known before loading: no folder's own code runs for nothing
        raise UserError(f"--init {init}: comco train {kind} needs an open_clip model (an open_clip name, "
                        f"ckpt:PATH, longclip:PATH or debias:PATH), not a "
                        f"{'transformers' if init.startswith('hf:') else 'sentence-transformers'} folder")
    try:
        loaded = ModelRef(init, pretrained).load(device)
    except UserError:
        raise
    except (RuntimeError, OSError, ValueError, KeyError) as exc:
        first = (str(exc).splitlines() or [exc.__class__.__name__])[0][:160]
        raise UserError(f"--init {init}: cannot be loaded ({first})") from None
    if loaded.family != "open_clip":
        raise UserError(f"--init {init}: comco train {kind} needs an open_clip model (an open_clip name, "
                        "ckpt:PATH, longclip:PATH or debias:PATH), not a transformers folder")
    return loaded


def normalisation_of(preprocess) -> dict:
    """mean/std of the transform's Normalize step (SigLIP uses 0.5, CLIP OpenAI's)."""
    for step in getattr(preprocess, "transforms", []):
        if type(step).__name__ == "Normalize":
            return {"mean": [float(v) for v in step.mean], "std": [float(v) for v in step.std]}
    return {}


def model_spec_for(loaded, init: str) -> dict:
    """A self-contained spec: the open_clip config as built (QuickGELU included), since
    after training the weights, not the pretrained tag, define the model. Models that are not
    an open_clip name (ckpt:, longclip:, debias:) bring their own."""
    import open_clip
    from open_clip.transformer import QuickGELU

    if loaded.model_spec is not None:
        return copy.deepcopy(loaded.model_spec)
    cfg = copy.deepcopy(open_clip.get_model_config(init))
    if cfg is None:
        raise UserError(f"--init {init}: no open_clip config for this name")
    if any(isinstance(m, QuickGELU) for m in loaded.model.modules()):
        cfg["quick_gelu"] = True
    spec = {"open_clip_name": init, "open_clip_cfg": cfg, "init_pretrained": loaded.pretrained}
    norm = normalisation_of(loaded.preprocess)
    if norm:
        spec["preprocess"] = norm
    return spec
