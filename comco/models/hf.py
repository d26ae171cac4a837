"""`hf:DIR`: a local transformers CLIPModel, SiglipModel, Siglip2Model (with its own NaFlex
input) or MetaClip2Model folder; a folder that ships its own model code (`auto_map` in its
config.json, FG-CLIP style) loads only when the user passes --trust-remote-code, and is then
called as CLIP is (get_text_features(input_ids=...), get_image_features(pixel_values=...))."""

from __future__ import annotations

import math
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

from comco.errors import UserError
from comco.io import folder_digest
from comco.models.loaded import OPENAI_MEAN, OPENAI_STD, LoadedModel

# model_type in config.json -> the transformers class that loads it
CLASSES = {"clip": "CLIPModel", "siglip": "SiglipModel", "siglip2": "Siglip2Model", "metaclip_2": "MetaClip2Model"}


SUPPORTED = ("clip (CLIPModel), siglip (SiglipModel), siglip2 (Siglip2Model), metaclip_2 (MetaClip2Model), "
             "and folders with their own model code (auto_map) under --trust-remote-code")


def _model_class(path: Path, config: dict, trust_remote_code: bool):
    """The class that loads the folder, or AutoModel for a folder with its own code."""
    import transformers

    model_type = config.get("model_type")
    remote = config.get("auto_map")
    if isinstance(remote, dict) and remote:
        # its own code, even under a known model_type (FG-CLIP says "clip"): never run it unasked
        if not trust_remote_code:
            files = sorted({str(v).split(".")[0] + ".py" for v in remote.values() if isinstance(v, str)})
            raise UserError(f"{path} ships its own model code ({', '.join(files) or 'auto_map'}); "
                            "pass --trust-remote-code to run it")
        autos = [k for k in remote if k.startswith("AutoModel") and hasattr(transformers, k)]
        return getattr(transformers, "AutoModel" if "AutoModel" in remote or not autos else autos[0])
    if model_type not in CLASSES:
        raise UserError(f"{path} holds a '{model_type}' model; hf:DIR takes the model types {SUPPORTED}")
    cls = getattr(transformers, CLASSES[model_type], None)
    if cls is None:
        raise UserError(f"{path} holds a '{model_type}' model, which transformers {transformers.__version__} "
                        f"does not have ({CLASSES[model_type]}); upgrade transformers")
    return cls


def _json_table(path: Path, what: str) -> dict:
    """A JSON file that holds one object (config.json, preprocessor_config.json), or a UserError."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        data = None
    if not isinstance(data, dict):
        raise UserError(f"{path} is not a JSON object, so the folder's {what} cannot be read; "
                        "save the model again with save_pretrained(DIR)")
    return data


def _weights_error():
    """What reading a folder's damaged, cut, empty, missing or pickled weights raises."""
    import pickle

    from safetensors import SafetensorError

    return (OSError, ValueError, TypeError, RuntimeError, EOFError, pickle.UnpicklingError, SafetensorError)


@contextmanager
def _no_progress_bars():
    """transformers draws a "Loading weights" bar of its own on stderr; comco shows one progress
    display, and a refused folder says one line."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


def _read_weights(path: Path, cls, remote: dict):
    """cls.from_pretrained on the folder; damaged weights end in one line. torch unpickles with
    weights_only, so a pickled payload is refused, never run; the warnings a failed read
    raises on the way are dropped with it (a read that works passes them on)."""
    import pickle
    import warnings

    with warnings.catch_warnings(record=True) as said, _no_progress_bars():
        warnings.simplefilter("always")
        try:
            model = cls.from_pretrained(str(path), local_files_only=True, **remote)
        except _weights_error() as exc:
            why = "it holds a pickle of more than tensors (refused, not run)" if isinstance(
                exc, pickle.UnpicklingError) else (str(exc).strip().splitlines() or [""])[0][:120]
            raise UserError(f"{path}: its weights cannot be read ({exc.__class__.__name__}: {why}); "
                            "save the model again with save_pretrained(DIR)") from None
    for w in said:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return model


def load_hf(path: Path, device: str, trust_remote_code: bool = False) -> LoadedModel:
    if not (path / "config.json").is_file():
        raise UserError(f"{path} is not a transformers model folder (no config.json); "
                        "save one with model.save_pretrained(DIR) and pass hf:DIR")
    config = _json_table(path / "config.json", "model config")
    model_type = config.get("model_type")
    cls = _model_class(path, config, trust_remote_code)
    import transformers

    remote = {"trust_remote_code": True} if trust_remote_code else {}
    model = _read_weights(path, cls, remote).to(device).eval()
    if not (hasattr(model, "get_text_features") and hasattr(model, "get_image_features")):
        raise UserError(f"{path}: its model ({type(model).__name__}) has no get_text_features / "
                        "get_image_features, so comco cannot embed with it")
    try:
        tok = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True, **remote)
    except ImportError as exc:  # e.g. a SigLIP spiece.model without the sentencepiece package
        lib = "sentencepiece" if "sentencepiece" in str(exc).lower() else "a package it names"
        raise UserError(f"the tokenizer in {path} needs {lib}, which is not installed; install it "
                        "or save a fast tokenizer (tokenizer.json) there") from None
    except (OSError, ValueError, TypeError):
        raise UserError(f"{path} has no tokenizer files; save the tokenizer there too "
                        "(tokenizer.save_pretrained(DIR))") from None
    context_length = _context_length(model.config, tok)
    check_tokenizer(path, tok, context_length)
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

    if type(model).__name__ == "Siglip2Model":  # NaFlex: patches of the image at its own aspect ratio
        preprocess, enc_image = _naflex(path, model)
    else:
        preprocess = _hf_transform(path, model.config)
    return LoadedModel(
        name=f"hf:{path}", pretrained=None, identity=identity, family="hf", model=model,
        preprocess=preprocess, context_length=context_length, device=device,
        _tokenize=tokenize, _encode_image=enc_image, _encode_text=enc_text)


MIN_TOKENS = 32  # the smallest real tokenizer has a byte alphabet; transformers' stand-in has 2


PROBE_TEXTS = ("a red cube and a blue cone", "two green spheres on a grey floor")


def check_tokenizer(path: Path, tok, context_length: int) -> None:
    """Refuse a stand-in tokenizer: transformers builds one of two tokens from the config alone
    when the folder has no tokenizer files, and then every caption embeds the same."""
    ids = [tok(t, truncation=True, max_length=context_length)["input_ids"] for t in PROBE_TEXTS]
    if len(tok) < MIN_TOKENS or ids[0] == ids[1]:
        why = f"{len(tok)} tokens" if len(tok) < MIN_TOKENS else "two different captions get the same ids"
        raise UserError(f"{path}: its tokenizer is a stand-in that cannot tell captions apart ({why}; no "
                        "tokenizer files?); save the model's tokenizer there (tokenizer.save_pretrained(DIR))")


def _context_length(config, tok) -> int:
    """The text tower's positions (a remote-code config may keep them elsewhere: then the tokenizer's)."""
    text = getattr(config, "text_config", None)
    positions = getattr(text, "max_position_embeddings", None)
    if positions is None:
        positions = getattr(tok, "model_max_length", None)
    if not isinstance(positions, int) or not 1 <= positions <= 100_000:
        raise UserError("the folder's config names no text length (text_config.max_position_embeddings)")
    return positions


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
        _json_table(path / "preprocessor_config.json", "image preprocessing")
        try:
            processor = transformers.Siglip2ImageProcessor.from_pretrained(str(path), local_files_only=True)
        except (OSError, ValueError, TypeError) as exc:
            raise UserError(f"{path / 'preprocessor_config.json'} does not describe a SigLIP 2 image processor "
                            f"({exc.__class__.__name__}); save it again with save_pretrained(DIR)") from None
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
    from torchvision import transforms as T

    size = int(config.vision_config.image_size)
    mean, std = OPENAI_MEAN, OPENAI_STD
    squash = config.model_type.startswith("siglip")
    resize: Any = size
    interpolation = T.InterpolationMode.BICUBIC
    pp = path / "preprocessor_config.json"
    if pp.is_file():
        cfg = _json_table(pp, "image preprocessing")
        mean, std = cfg.get("image_mean", mean), cfg.get("image_std", std)
        s = cfg.get("size", size)
        if isinstance(s, dict) and "height" in s and "width" in s and not cfg.get("do_center_crop", False):
            squash, resize = True, (_pixels(pp, s["height"]), _pixels(pp, s["width"]))
        else:
            squash = False
            resize = _pixels(pp, s.get("shortest_edge", s.get("height", size)) if isinstance(s, dict) else s)
        mean, std = _channels(pp, "image_mean", mean), _channels(pp, "image_std", std, positive=True)
        interpolation = {0: T.InterpolationMode.NEAREST, 2: T.InterpolationMode.BILINEAR}.get(
            cfg.get("resample"), T.InterpolationMode.BICUBIC)
    elif squash:
        mean, std = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)
    if squash:
        geometry = [T.Resize(resize if isinstance(resize, tuple) else (size, size), interpolation=interpolation)]
    else:
        geometry = [T.Resize(resize, interpolation=interpolation), T.CenterCrop(size)]
    return T.Compose([T.Lambda(lambda im: im.convert("RGB")), *geometry, T.ToTensor(), T.Normalize(mean, std)])


MAX_PIXELS = 8192


def _pixels(path: Path, value) -> int:
    """An image side from a preprocessor config: a whole number of pixels in 1..MAX_PIXELS."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_PIXELS:
        raise UserError(f"{path}: size {value!r} is not an image side (1..{MAX_PIXELS} pixels)")
    return value


def _channels(path: Path, key: str, value, positive: bool = False) -> tuple:
    """image_mean / image_std: three numbers, one per RGB channel (std above zero)."""
    ok = isinstance(value, (list, tuple)) and len(value) == 3 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and (v > 0 or not positive)
        for v in value)
    if not ok:
        raise UserError(f"{path}: {key} {value!r} is not three numbers, one per RGB channel")
    return tuple(float(v) for v in value)
