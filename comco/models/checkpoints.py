"""comco checkpoints (`ckpt:PATH`): what `comco train` writes, checked against their own
tensors before anything is built.

Checkpoint format (one `torch.save` dict):

    {"format": "comco-checkpoint", "version": 1,
     "kind": "scratch" | "longclip" | "debias" | "labclip",
     "model_spec": {"open_clip_name": "ViT-B-32", "pretrained": "openai"}
                   or {"open_clip_cfg": {"embed_dim": ..., "vision_cfg": {...}, "text_cfg": {...}}},
     "context_length": int,          # 248 for a stretched Long-CLIP text tower
     "state_dict": {...},            # the whole open_clip model
     "text_map": None or a D x D tensor,
     "config": {...}, "step": int, ...any training state}

`text_map` (LABCLIP) is an `nn.Linear(D, D, bias=False).weight`: encode_text returns
normalise(normalise(f) @ text_map.T).
"""

from __future__ import annotations

from pathlib import Path

from comco.errors import UserError
from comco.io import atomic_write, file_digest
from comco.models.layouts import CHECKPOINT_FORMAT, expect_layout, read_torch_file, storage_problem
from comco.models.loaded import OPENAI_MEAN, OPENAI_STD, LoadedModel
from comco.models.openclip import check_open_clip_name, wrap_open_clip

CHECKPOINT_VERSION = 1


CHECKPOINT_KINDS = ("scratch", "longclip", "debias", "labclip")


def save_checkpoint(path: str | Path, *, kind: str, model, model_spec: dict, extra: dict | None = None) -> Path:
    """Write a comco checkpoint atomically. `model` is an open_clip CLIP (or a LoadedModel).

    `extra` may carry "text_map", "config", "step" and any training state.
    """
    import torch

    if kind not in CHECKPOINT_KINDS:
        raise ValueError(f"checkpoint kind must be one of {CHECKPOINT_KINDS}, not {kind!r}")
    if not ({"open_clip_name"} <= set(model_spec) or "open_clip_cfg" in model_spec):
        raise ValueError("model_spec needs 'open_clip_name' (and 'pretrained') or 'open_clip_cfg'")
    text_map = None
    if isinstance(model, LoadedModel):
        text_map, model = model.text_map, model.model
    extra = dict(extra or {})
    text_map = extra.pop("text_map", text_map)
    payload = {
        "format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "kind": kind,
        "model_spec": dict(model_spec), "context_length": int(model.context_length),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "text_map": None if text_map is None else text_map.detach().cpu(),
        "config": extra.pop("config", {}), "step": int(extra.pop("step", 0)), **extra,
    }
    path = Path(path)
    with atomic_write(path, "wb") as f:  # a file object: the archive's inner name is fixed, so bytes repeat
        torch.save(payload, f)
    return path


def load_checkpoint(path: str | Path) -> dict:
    """The checkpoint dict; UserError when the file is missing or not a comco checkpoint
    (a file in another layout comco reads is answered with the reference that loads it)."""
    path = Path(path)
    # Training state holds plain python values and tensors only, so weights_only loading works.
    ckpt = read_torch_file(path, "ckpt:")
    expect_layout(path, ckpt, "comco")
    version = ckpt.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UserError(f"{path}: damaged comco checkpoint: version {version!r} is not a whole number")
    if version > CHECKPOINT_VERSION:
        raise UserError(f"{path} is checkpoint version {version}; this comco reads up to "
                        f"{CHECKPOINT_VERSION}: upgrade comco")
    if ckpt.get("kind") not in CHECKPOINT_KINDS:
        raise UserError(f"{path}: damaged comco checkpoint: kind {ckpt.get('kind')!r} is none of "
                        f"{', '.join(CHECKPOINT_KINDS)}")
    return ckpt


def build_open_clip(model_spec: dict, context_length: int | None = None):
    """An open_clip model (random weights) and its name, from a checkpoint's model_spec."""
    import copy

    import open_clip

    if "open_clip_cfg" in model_spec:
        cfg, name = copy.deepcopy(model_spec["open_clip_cfg"]), model_spec.get("open_clip_name", "custom")
    else:
        name = model_spec["open_clip_name"]
        check_open_clip_name(name)
        cfg = copy.deepcopy(open_clip.get_model_config(name))
    if context_length is not None:
        cfg["text_cfg"]["context_length"] = int(context_length)
    if "hf_model_name" in cfg.get("text_cfg", {}):  # the weights come from the checkpoint, never the hub
        cfg["text_cfg"]["hf_model_pretrained"] = False
    custom = cfg.pop("custom_text", False) or "hf_model_name" in cfg.get("text_cfg", {})
    tower = model_spec.get("text_tower")
    if tower and not custom:  # a bidirectional text tower (comco.models.text_towers)
        from comco.models.text_towers import bidirectional_clip, text_tower_spec

        if not isinstance(tower, dict):
            raise UserError(f"damaged comco model_spec: text_tower {tower!r} is not a table")
        text_tower_spec(tower.get("attention"), tower.get("pool"))  # a damaged entry fails in one line
        return bidirectional_clip(cfg, tower["pool"]), name, cfg
    cls = open_clip.CustomTextCLIP if custom else open_clip.CLIP
    return cls(**cfg), name, cfg


MAX_LAYERS = 256  # per tower; the largest CLIPs have 48. Bounds the module count before anything is built


MAX_CONTEXT = 4096


# The sizes a config may ask for, each far above the largest CLIP's (widths 1,792, vocabularies
# 262,144 for SigLIP 2, images 1,024 px): a spec past them is damaged, not a model.
BOUNDS = {"width": 16_384, "embed_dim": 16_384, "head_width": 16_384, "heads": 1_024, "vocab_size": 2_097_152,
          "image_size": 8_192, "patch_size": 1_024, "mlp_ratio": 64}


def _bounded(path: Path, where: str, cfg: dict) -> None:
    """Every size `cfg` names is a number in 1..its bound (image_size may be a pair)."""
    for key, bound in BOUNDS.items():
        if key not in cfg:
            continue
        value = cfg[key]
        values = value if isinstance(value, (list, tuple)) and key == "image_size" else [value]
        if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= bound
                                 for v in values):
            raise UserError(f"{path}: damaged comco checkpoint: {where}{key} {value!r} (1..{bound:,})")


def _check_spec(path: Path, ckpt: dict) -> None:
    """A checkpoint's model_spec and tensors, before a model is built from them."""
    import torch

    spec, sd = ckpt.get("model_spec"), ckpt.get("state_dict")
    cfg = spec.get("open_clip_cfg") if isinstance(spec, dict) else None
    if not isinstance(spec, dict) or not (isinstance(cfg, dict) or isinstance(spec.get("open_clip_name"), str)):
        raise UserError(f"{path}: damaged comco checkpoint: no model_spec with an open_clip_cfg or open_clip_name")
    if not isinstance(sd, dict) or not sd or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise UserError(f"{path}: damaged comco checkpoint: no state_dict of tensors")
    ctx = ckpt.get("context_length")
    if ctx is not None and not (isinstance(ctx, int) and 1 <= ctx <= MAX_CONTEXT):
        raise UserError(f"{path}: damaged comco checkpoint: context_length {ctx!r} (1..{MAX_CONTEXT})")
    _bounded(path, "open_clip_cfg.", cfg or {})
    for tower in ("vision_cfg", "text_cfg"):
        part = (cfg or {}).get(tower, {})
        if not isinstance(part, dict):
            raise UserError(f"{path}: damaged comco checkpoint: open_clip_cfg.{tower} is not a table")
        _bounded(path, f"open_clip_cfg.{tower}.", part)
        layers = part.get("layers", 1)
        count = sum(layers) if isinstance(layers, (list, tuple)) else layers
        if not isinstance(count, int) or not 0 <= count <= MAX_LAYERS:
            raise UserError(f"{path}: damaged comco checkpoint: {tower} layers {layers!r} (at most {MAX_LAYERS})")
    text_map = ckpt.get("text_map")
    if text_map is not None and not isinstance(text_map, torch.Tensor):
        raise UserError(f"{path}: damaged comco checkpoint: text_map is a {type(text_map).__name__}, "
                        "not a D x D tensor")
    tensors = dict(sd, **({} if text_map is None else {"text_map": text_map}))
    problem = storage_problem(tensors)
    if problem:
        raise UserError(f"{path}: damaged comco checkpoint: {problem}")


def _matches_tensors(path: Path, ckpt: dict) -> int:
    """Build the architecture on the meta device (no memory) and compare every tensor's shape
    with the file's, both towers and the LABCLIP map: sizes that disagree (an edited or
    damaged checkpoint, absurd widths) end here, before the real model is allocated.
    Returns the model's text length."""
    import torch

    try:
        with torch.device("meta"):
            model, _, cfg = build_open_clip(ckpt["model_spec"], ckpt.get("context_length"))
    except UserError:
        raise
    except OSError as exc:  # an hf text tower whose config is neither on disk nor reachable
        raise UserError(f"{path}: its text tower names a Hugging Face model whose config is not on disk "
                        f"({exc.__class__.__name__}); copy it into the HF cache") from None
    except Exception as exc:  # noqa: BLE001 - open_clip rejects a bad config in many ways
        first = (str(exc).strip().splitlines() or [""])[0][:120]
        raise UserError(f"{path}: damaged comco checkpoint: its open_clip_cfg does not build "
                        f"({exc.__class__.__name__}: {first})") from None
    problems = shape_problems(model, ckpt["state_dict"])
    if problems:
        raise UserError(f"{path}: damaged comco checkpoint: its model_spec does not match its tensors: {problems}")
    text_map = ckpt.get("text_map")
    dim = cfg["embed_dim"]  # both towers' features
    if text_map is not None and tuple(text_map.shape) != (dim, dim):
        raise UserError(f"{path}: damaged comco checkpoint: text_map is {list(text_map.shape)}, the model's "
                        f"text features need [{dim}, {dim}]")
    return int(model.context_length)


def shape_problems(model, state: dict) -> str:
    """"" when `state` has exactly the model's tensors at their shapes, else the first difference
    (and how many more) in words."""
    want = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    have = {k: tuple(v.shape) for k, v in state.items()}
    problems = [f"{k} missing" for k in want if k not in have]
    problems += [f"{k} is {list(have[k])}, the spec needs {list(want[k])}"
                 for k in want if k in have and have[k] != want[k]]
    problems += [f"{k} is not in the spec" for k in have if k not in want]
    if not problems:
        return ""
    return problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")


def load_ckpt(path: Path, device: str) -> LoadedModel:
    import open_clip

    ckpt = load_checkpoint(path)
    _check_spec(path, ckpt)
    context_length = _matches_tensors(path, ckpt)
    stretched = ckpt["kind"] in ("longclip", "debias")  # its text positions were stretched already
    keep = _stretched_keep(path, ckpt, context_length) if stretched else None
    model, name, cfg = build_open_clip(ckpt["model_spec"], ckpt.get("context_length"))
    try:
        model.load_state_dict(ckpt["state_dict"])
    except RuntimeError as exc:
        last = str(exc).strip().splitlines()[-1].strip()[:160]
        raise UserError(f"{path}: damaged comco checkpoint: {last}") from None
    model.to(device)
    size = model.visual.image_size
    pre = ckpt["model_spec"].get("preprocess", {})
    preprocess = open_clip.image_transform(size, is_train=False, mean=pre.get("mean", OPENAI_MEAN),
                                           std=pre.get("std", OPENAI_STD))
    hf_tok = cfg.get("text_cfg", {}).get("hf_tokenizer_name")
    if hf_tok:
        tokenizer = _hf_tokenizer(path, hf_tok, model.context_length)
    else:
        tokenizer = open_clip.SimpleTokenizer(context_length=model.context_length)
    text_map = ckpt.get("text_map")
    if text_map is not None:
        text_map = text_map.float().to(device)
    identity = f"ckpt/{ckpt['kind']}/{file_digest(path)}"
    loaded = wrap_open_clip(f"ckpt:{path}", None, identity, model, preprocess, tokenizer, device, text_map)
    loaded.model_spec = ckpt["model_spec"]
    loaded.stretched_keep = keep
    return loaded


def _hf_tokenizer(path: Path, name: str, context_length: int):
    """open_clip's wrapper of the Hugging Face tokenizer an hf text tower names, refused when it
    is not on disk or is transformers' stand-in (comco.models.hf.check_tokenizer)."""
    from open_clip.tokenizer import HFTokenizer

    from comco.models.hf import check_tokenizer

    try:
        tokenizer = HFTokenizer(name, context_length=context_length)
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: its text tower's tokenizer {name} is not on disk ({exc.__class__.__name__}); "
                        "copy it into the HF cache") from None
    check_tokenizer(Path(name), tokenizer.tokenizer, context_length)
    return tokenizer


def _stretched_keep(path: Path, ckpt: dict, context_length: int) -> int:
    """How many text positions the stretch kept (config.options.keep, Long-CLIP's 20 by default)."""
    config = ckpt.get("config")
    options = config.get("options") if isinstance(config, dict) else None
    keep = options.get("keep", 20) if isinstance(options, dict) else 20
    if not isinstance(keep, int) or isinstance(keep, bool) or not 1 <= keep <= context_length:
        raise UserError(f"{path}: damaged comco checkpoint: config.options.keep {keep!r} "
                        f"(1..{context_length} text positions)")
    return keep
