"""The one model factory for probes and training, and the comco checkpoint format.

A model is named as the command line names it:

- an open_clip name (`ViT-B-32`) with `pretrained` = a tag (`openai`, `laion2b_s34b_b79k`),
  a local weights file, or `none` (random weights, seeded, so the same call gives the
  same model and the embedding cache stays valid);
- `hf:DIR`: a local transformers CLIPModel, SiglipModel or Siglip2Model folder;
- `ckpt:PATH`: a file `comco train` wrote (see `save_checkpoint`).

torch, open_clip and transformers are imported inside functions only: importing this
module is free, so `comco --help` stays instant.

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

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from comco.errors import UserError
from comco.io import atomic_write, file_digest, folder_digest

CHECKPOINT_FORMAT = "comco-checkpoint"
CHECKPOINT_VERSION = 1
CHECKPOINT_KINDS = ("scratch", "longclip", "debias", "labclip")
RANDOM_INIT_SEED = 0
OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


@dataclass
class LoadedModel:
    """A model ready to embed: tokenizer, image transform and normalised encoders."""

    name: str
    pretrained: str | None
    identity: str  # names architecture and weights; the embedding cache key
    family: str  # "open_clip" | "hf"
    model: Any
    preprocess: Callable  # PIL image -> float tensor (3, S, S)
    context_length: int
    device: str
    _tokenize: Callable = field(repr=False)
    _encode_image: Callable = field(repr=False)
    _encode_text: Callable = field(repr=False)
    text_map: Any = None

    def tokenize(self, texts: list[str]):
        """LongTensor (len(texts), context_length); texts longer than that are truncated."""
        return self._tokenize(list(texts))

    def encode_image(self, batch):
        import torch.nn.functional as F

        return F.normalize(self._encode_image(batch.to(self.device)).float(), dim=-1)

    def encode_text(self, tokens):
        import torch.nn.functional as F

        f = F.normalize(self._encode_text(tokens.to(self.device)).float(), dim=-1)
        if self.text_map is not None:
            f = F.normalize(f @ self.text_map.T.to(f), dim=-1)
        return f

    @property
    def vit(self):
        """The open_clip VisionTransformer when it pools with a class token, else None."""
        visual = getattr(self.model, "visual", None) if self.family == "open_clip" else None
        if visual is None or getattr(visual, "class_embedding", None) is None:
            return None
        if getattr(visual, "attn_pool", None) is not None or getattr(visual, "pool_type", "tok") != "tok":
            return None
        return visual


def default_device() -> str:
    """cuda when this machine has a CUDA device, else cpu."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device(name: str) -> str:
    """A device this machine has: cpu, cuda or cuda:N (probe, eval and train share this check)."""
    import re

    if name == "cpu":
        return name
    if not re.fullmatch(r"cuda(:\d+)?", name):
        raise UserError(f"--device {name}: use cpu, cuda or cuda:N")
    import torch

    if not torch.cuda.is_available():
        raise UserError(f"--device {name}: no CUDA device here; use --device cpu")
    index = int(name.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise UserError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA devices "
                        f"(cuda:0..cuda:{torch.cuda.device_count() - 1})")
    return name


def list_models() -> list[str]:
    import open_clip

    return list(open_clip.list_models())


def load_model(name: str, pretrained: str | None = None, device: str = "cpu") -> LoadedModel:
    """The one model factory: a LoadedModel (encoders, tokenizer, transform, identity).

    Args:
        name: an open_clip architecture name, `hf:DIR` (a transformers CLIP, SigLIP, SigLIP 2
            folder) or `ckpt:PATH` (a checkpoint comco train wrote).
        pretrained: for open_clip names, a published tag, a weights file or "none" (random,
            seeded); ignored by hf: and ckpt:, which carry their own weights.
        device: "cpu", "cuda" or "cuda:N"."""
    if name.startswith("hf:"):
        return _load_hf(Path(name[3:]).expanduser(), device)
    if name.startswith("ckpt:"):
        return _load_ckpt(Path(name[5:]).expanduser(), device)
    return _load_open_clip(name, pretrained, device)


# ---------------------------------------------------------------- open_clip


def _check_open_clip_name(name: str) -> None:
    known = list_models()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else "see `comco probe --list-models`"
        raise UserError(f"unknown model '{name}': {hint} (or use hf:DIR / ckpt:PATH)")


def _load_open_clip(name: str, pretrained: str | None, device: str) -> LoadedModel:
    import open_clip
    import torch

    _check_open_clip_name(name)
    tag = None if pretrained in (None, "", "none") else pretrained
    if tag is None:
        identity = f"open_clip/{name}/random-seed{RANDOM_INIT_SEED}/torch-{torch.__version__}"
    elif os.path.isfile(tag):
        identity = f"open_clip/{name}/file-{file_digest(Path(tag))}"
    else:
        _fetch_pretrained(name, tag)
        identity = f"open_clip/{name}/{tag}"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(RANDOM_INIT_SEED)  # random weights are reproducible, so cacheable
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(
                name, pretrained=tag, device=device, pretrained_text=False, pretrained_image=False)
        except Exception as exc:  # noqa: BLE001 - a user's file fails in many ways (empty, garbage, other model)
            if tag is not None and os.path.isfile(tag):
                first = (str(exc).strip().splitlines() or [""])[0][:120]
                why = exc.__class__.__name__ + (f": {first}" if first else "")
                if os.path.getsize(tag) == 0:
                    why = "the file is empty"
                raise UserError(f"{tag} does not hold weights for {name} ({why}); "
                                f"pass the matching --model or --pretrained none") from None
            if isinstance(exc, OSError):  # an hf text tower config that cannot be fetched
                raise UserError(f"{name} needs files from the Hugging Face hub that are not on disk "
                                f"({exc.__class__.__name__}); use another model or copy them into the HF cache"
                                ) from None
            raise
    try:
        tokenizer = open_clip.get_tokenizer(name)
    except OSError:
        raise UserError(f"the tokenizer of {name} is not on disk and cannot be fetched; "
                        "use a model with the built-in CLIP tokenizer") from None
    return _wrap_open_clip(name, pretrained or "none", identity, model, preprocess, tokenizer, device)


def _wrap_open_clip(name, pretrained, identity, model, preprocess, tokenizer, device, text_map=None) -> LoadedModel:
    model.eval()
    encode_text = model.encode_text
    if _padding_is_inert(model):
        def encode_text(tokens):
            return _encode_text_trimmed(model, tokens)
    return LoadedModel(
        name=name, pretrained=pretrained, identity=identity, family="open_clip", model=model,
        preprocess=preprocess, context_length=int(model.context_length), device=device,
        _tokenize=lambda texts: tokenizer(texts), _encode_image=model.encode_image,
        _encode_text=encode_text, text_map=text_map)


def _padding_is_inert(model) -> bool:
    """True for open_clip CLIP text towers whose output cannot depend on the padding.

    With a causal mask and pooling at the end-of-text token, tokens after it are never
    attended to, so a batch can be cut after its longest text (captions are ~10 of 77
    tokens: several times less work, same numbers). SigLIP-style towers attend both ways.
    """
    import open_clip

    return (type(model) is open_clip.CLIP and getattr(model, "attn_mask", None) is not None
            and getattr(model, "text_pool_type", "") in ("argmax", "eos"))


def _encode_text_trimmed(model, text):
    """open_clip CLIP.encode_text on text[:, :L], L = the batch's last end-of-text + 1."""
    from open_clip.transformer import text_global_pool

    eos = getattr(model, "text_eos_id", None)
    if model.text_pool_type == "argmax" or eos is None:
        last = int(text.argmax(-1).max())
    else:
        last = int(((text == eos).int().argmax(-1)).max())
    n = last + 1
    t = text[:, :n]
    cast = model.transformer.get_cast_dtype()
    x = model.token_embedding(t).to(cast) + model.positional_embedding[:n].to(cast)
    x = model.transformer(x, attn_mask=model.attn_mask[:n, :n])
    x = model.ln_final(x)
    x = text_global_pool(x, t, model.text_pool_type, eos_token_id=eos)
    if model.text_projection is not None:
        x = model.text_projection(x) if hasattr(model.text_projection, "weight") else x @ model.text_projection
    return x


def _fetch_pretrained(name: str, tag: str) -> None:
    """Make sure the tag's weights are on disk; fail in one line (and fast) when they cannot be."""
    import open_clip
    from open_clip.pretrained import download_pretrained

    cfg = open_clip.get_pretrained_cfg(name, tag)
    if not cfg:
        tags = open_clip.list_pretrained_tags_by_model(name)
        listed = ", ".join(tags) if tags else "none published"
        raise UserError(f"'{tag}' is neither a weights file nor a pretrained tag of {name} "
                        f"(tags: {listed}); pass --pretrained /path/to/weights.pt or none")
    if not _weights_cached(cfg) and not _hub_reachable():
        raise UserError(f"weights {name}/{tag} are not on disk and cannot be downloaded (no network); "
                        f"pass --pretrained /path/to/weights.pt or none")
    try:
        download_pretrained(cfg)
    except Exception as exc:  # any hub/HTTP failure: the user can only fix it by supplying weights
        raise UserError(f"could not fetch weights {name}/{tag} ({exc.__class__.__name__}); "
                        f"pass --pretrained /path/to/weights.pt or none") from None


def _weights_cached(cfg: dict) -> bool:
    hub = cfg.get("hf_hub")
    if hub:
        from huggingface_hub import try_to_load_from_cache

        parts = hub.strip("/").split("/")  # "org/repo" or "org/repo/filename"
        repo = "/".join(parts[:2])
        names = parts[2:] or ["open_clip_model.safetensors", "open_clip_pytorch_model.bin"]
        return any(isinstance(try_to_load_from_cache(repo, n), str) for n in names)
    url = cfg.get("url", "")
    if url:
        cache = Path(os.path.expanduser("~/.cache/clip")) / os.path.basename(url)
        return cache.is_file()
    return False


def _hub_reachable(timeout: float = 3.0) -> bool:
    import socket

    try:
        socket.create_connection(("huggingface.co", 443), timeout=timeout).close()
        return True
    except OSError:
        return False


# ---------------------------------------------------------------- transformers


def _load_hf(path: Path, device: str) -> LoadedModel:
    import json

    if not (path / "config.json").is_file():
        raise UserError(f"{path} is not a transformers model folder (no config.json); "
                        "save one with model.save_pretrained(DIR) and pass hf:DIR")
    config = json.loads((path / "config.json").read_text())
    model_type = config.get("model_type")
    if model_type not in ("clip", "siglip", "siglip2"):
        raise UserError(f"{path} holds a '{model_type}' model; hf:DIR takes a CLIPModel or SiglipModel")
    import transformers

    cls = {"clip": transformers.CLIPModel, "siglip": transformers.SiglipModel,
           "siglip2": getattr(transformers, "Siglip2Model", transformers.SiglipModel)}[model_type]
    model = cls.from_pretrained(str(path), local_files_only=True).to(device).eval()
    try:
        tok = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except ImportError as exc:  # e.g. a SigLIP spiece.model without the sentencepiece package
        lib = "sentencepiece" if "sentencepiece" in str(exc).lower() else "a package it names"
        raise UserError(f"the tokenizer in {path} needs {lib}, which is not installed; install it "
                        "or save a fast tokenizer (tokenizer.json) there") from None
    except (OSError, ValueError, TypeError):
        raise UserError(f"{path} has no tokenizer files; save the tokenizer there too "
                        "(tokenizer.save_pretrained(DIR))") from None
    context_length = int(model.config.text_config.max_position_embeddings)
    identity = f"hf/{model_type}/{folder_digest(path)}"

    def tokenize(texts):
        out = tok(texts, padding="max_length", truncation=True, max_length=context_length, return_tensors="pt")
        return out["input_ids"]

    # CLIP pools at EOS under a causal mask and SigLIP was trained on max-length padding
    # without a mask, so neither needs an attention mask here.
    def enc_text(ids):
        return _features(model.get_text_features(input_ids=ids))

    def enc_image(x):
        return _features(model.get_image_features(pixel_values=x))

    if model_type == "siglip2":  # NaFlex: patches of the image at its own aspect ratio
        preprocess, enc_image = _naflex(path, model)
    else:
        preprocess = _hf_transform(path, model.config)
    return LoadedModel(
        name=f"hf:{path}", pretrained=None, identity=identity, family="hf", model=model,
        preprocess=preprocess, context_length=context_length, device=device,
        _tokenize=tokenize, _encode_image=enc_image, _encode_text=enc_text)


def _naflex(path: Path, model) -> tuple[Callable, Callable]:
    """SigLIP 2's processor and image encoder, with the image input packed in one tensor.

    Its processor resizes an image, keeping its aspect ratio, to at most max_num_patches
    patches, flattens them and pads to max_num_patches; the model takes the patches, a
    mask of the real ones and the patch grid (h, w). The rest of comco stacks one tensor
    per image, so row 0 carries (h, w) and rows 1.. the patches; the real patches come
    first, so the mask is the first h * w rows.
    """
    import torch
    import transformers

    vision = model.config.vision_config
    if (path / "preprocessor_config.json").is_file():
        processor = transformers.Siglip2ImageProcessor.from_pretrained(str(path), local_files_only=True)
    else:
        processor = transformers.Siglip2ImageProcessor(patch_size=vision.patch_size, max_num_patches=vision.num_patches)

    def preprocess(im):
        out = processor(images=im.convert("RGB"), return_tensors="pt")
        patches, shape = out["pixel_values"][0], out["spatial_shapes"][0]
        head = torch.zeros(1, patches.shape[1], dtype=patches.dtype)
        head[0, :2] = shape.to(patches.dtype)
        return torch.cat([head, patches])

    def enc_image(x):
        shapes = x[:, 0, :2].round().long()
        patches = x[:, 1:]
        mask = torch.arange(patches.shape[1], device=x.device)[None, :] < (shapes[:, 0] * shapes[:, 1])[:, None]
        return _features(model.get_image_features(pixel_values=patches, pixel_attention_mask=mask.long(),
                                                  spatial_shapes=shapes))

    return preprocess, enc_image


def _features(out):
    """transformers 5 returns a model output whose pooler_output is the projected feature."""
    return out if hasattr(out, "dim") else out.pooler_output


def _hf_transform(path: Path, config) -> Callable:
    """The model's own image processor as torchvision steps.

    CLIP processors resize the shortest edge and centre-crop; SigLIP processors resize to
    height x width (squashing a non-square image) and do not crop.
    """
    import json

    from torchvision import transforms as T

    size = int(config.vision_config.image_size)
    mean, std = OPENAI_MEAN, OPENAI_STD
    squash = config.model_type.startswith("siglip")
    resize: Any = size
    interpolation = T.InterpolationMode.BICUBIC
    pp = path / "preprocessor_config.json"
    if pp.is_file():
        cfg = json.loads(pp.read_text())
        mean, std = tuple(cfg.get("image_mean", mean)), tuple(cfg.get("image_std", std))
        s = cfg.get("size", size)
        if isinstance(s, dict) and "height" in s and "width" in s and not cfg.get("do_center_crop", False):
            squash, resize = True, (int(s["height"]), int(s["width"]))
        else:
            squash = False
            resize = int(s.get("shortest_edge", s.get("height", size))) if isinstance(s, dict) else int(s)
        interpolation = {0: T.InterpolationMode.NEAREST, 2: T.InterpolationMode.BILINEAR}.get(
            cfg.get("resample"), T.InterpolationMode.BICUBIC)
    elif squash:
        mean, std = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)
    if squash:
        geometry = [T.Resize(resize if isinstance(resize, tuple) else (size, size), interpolation=interpolation)]
    else:
        geometry = [T.Resize(resize, interpolation=interpolation), T.CenterCrop(size)]
    return T.Compose([T.Lambda(lambda im: im.convert("RGB")), *geometry, T.ToTensor(), T.Normalize(mean, std)])


# ---------------------------------------------------------------- comco checkpoints


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
    """The checkpoint dict; UserError when the file is missing or not a comco checkpoint."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise UserError(f"checkpoint {path} not found; pass ckpt:PATH to a file `comco train` wrote")
    try:
        # Training state holds plain python values and tensors only, so weights_only loading works.
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - garbage bytes fail in many ways inside the unpickler
        raise UserError(f"{path} is not a comco checkpoint ({exc.__class__.__name__}); "
                        "pass ckpt:PATH to a file `comco train` wrote") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        raise UserError(f"{path} is not a comco checkpoint (no format '{CHECKPOINT_FORMAT}'); "
                        "for open_clip weights use --model NAME --pretrained PATH")
    if ckpt.get("version", 0) > CHECKPOINT_VERSION:
        raise UserError(f"{path} is checkpoint version {ckpt['version']}; this comco reads up to "
                        f"{CHECKPOINT_VERSION}: upgrade comco")
    return ckpt


def build_open_clip(model_spec: dict, context_length: int | None = None):
    """An open_clip model (random weights) and its name, from a checkpoint's model_spec."""
    import copy

    import open_clip

    if "open_clip_cfg" in model_spec:
        cfg, name = copy.deepcopy(model_spec["open_clip_cfg"]), model_spec.get("open_clip_name", "custom")
    else:
        name = model_spec["open_clip_name"]
        _check_open_clip_name(name)
        cfg = copy.deepcopy(open_clip.get_model_config(name))
    if context_length is not None:
        cfg["text_cfg"]["context_length"] = int(context_length)
    custom = cfg.pop("custom_text", False) or "hf_model_name" in cfg.get("text_cfg", {})
    cls = open_clip.CustomTextCLIP if custom else open_clip.CLIP
    return cls(**cfg), name, cfg


MAX_LAYERS = 256  # per tower; the largest CLIPs have 48. Bounds the module count before anything is built
MAX_CONTEXT = 4096


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
    for tower in ("vision_cfg", "text_cfg"):
        part = (cfg or {}).get(tower, {})
        if not isinstance(part, dict):
            raise UserError(f"{path}: damaged comco checkpoint: open_clip_cfg.{tower} is not a table")
        layers = part.get("layers", 1)
        count = sum(layers) if isinstance(layers, (list, tuple)) else layers
        if not isinstance(count, int) or not 0 <= count <= MAX_LAYERS:
            raise UserError(f"{path}: damaged comco checkpoint: {tower} layers {layers!r} (at most {MAX_LAYERS})")


def _matches_tensors(path: Path, ckpt: dict) -> None:
    """Build the architecture on the meta device (no memory) and compare every tensor's shape
    with the file's: sizes that disagree (an edited or damaged checkpoint, absurd widths) end
    here, before the real model is allocated."""
    import torch

    try:
        with torch.device("meta"):
            model, _, _ = build_open_clip(ckpt["model_spec"], ckpt.get("context_length"))
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - open_clip rejects a bad config in many ways
        first = (str(exc).strip().splitlines() or [""])[0][:120]
        raise UserError(f"{path}: damaged comco checkpoint: its open_clip_cfg does not build "
                        f"({exc.__class__.__name__}: {first})") from None
    want = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    have = {k: tuple(v.shape) for k, v in ckpt["state_dict"].items()}
    problems = [f"{k} missing" for k in want if k not in have]
    problems += [f"{k} is {list(have[k])}, the spec needs {list(want[k])}"
                 for k in want if k in have and have[k] != want[k]]
    problems += [f"{k} is not in the spec" for k in have if k not in want]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(f"{path}: damaged comco checkpoint: its model_spec does not match its tensors: "
                        f"{problems[0]}{more}")


def _load_ckpt(path: Path, device: str) -> LoadedModel:
    import open_clip

    ckpt = load_checkpoint(path)
    _check_spec(path, ckpt)
    hf_text = "hf_model_name" in ((ckpt["model_spec"].get("open_clip_cfg") or {}).get("text_cfg") or {})
    if not hf_text:  # an hf text tower would fetch its config to build even on meta; its load stays strict
        _matches_tensors(path, ckpt)
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
        tokenizer = open_clip.HFTokenizer(hf_tok, context_length=model.context_length)
    else:
        tokenizer = open_clip.SimpleTokenizer(context_length=model.context_length)
    text_map = ckpt.get("text_map")
    if text_map is not None:
        text_map = text_map.float().to(device)
    identity = f"ckpt/{ckpt['kind']}/{file_digest(path)}"
    return _wrap_open_clip(f"ckpt:{path}", None, identity, model, preprocess, tokenizer, device, text_map)
