"""open_clip models: an architecture name with a published tag, a weights file or "none"
(random weights, seeded, so the same call gives the same model and the embedding cache
stays valid); weights come from the open_clip / Hugging Face cache, never silently from the net."""

from __future__ import annotations

import difflib
import logging
import os
from contextlib import contextmanager
from pathlib import Path

from comco.errors import UserError
from comco.io import file_digest
from comco.models.loaded import LoadedModel

RANDOM_INIT_SEED = 0


def list_models() -> list[str]:
    import open_clip

    return list(open_clip.list_models())


def check_open_clip_name(name: str) -> None:
    known = list_models()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else "see `comco probe --list-models`"
        raise UserError(f"unknown model '{name}': {hint} (or use hf:DIR / ckpt:PATH)")


class _RandomWeightsWarning(logging.Filter):
    """open_clip says "No pretrained weights loaded" on the root logger for every random
    model; comco says it once, in its own words, where the user asked for it (the CLI)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("No pretrained weights loaded")


@contextmanager
def _without_random_weights_warning():
    root, quiet = logging.getLogger(), _RandomWeightsWarning()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)


def load_open_clip(name: str, pretrained: str | None, device: str) -> LoadedModel:
    import open_clip
    import torch

    check_open_clip_name(name)
    tag = None if pretrained in (None, "", "none") else pretrained
    if tag is None:
        identity = f"open_clip/{name}/random-seed{RANDOM_INIT_SEED}/torch-{torch.__version__}"
    elif os.path.isfile(tag):
        identity = f"open_clip/{name}/file-{file_digest(Path(tag))}"
    else:
        _fetch_pretrained(name, tag)
        identity = f"open_clip/{name}/{tag}"
    with torch.random.fork_rng(devices=[]), _without_random_weights_warning():
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
    return wrap_open_clip(name, pretrained or "none", identity, model, preprocess, tokenizer, device)


def wrap_open_clip(name, pretrained, identity, model, preprocess, tokenizer, device, text_map=None) -> LoadedModel:
    model.eval()
    encode_text = model.encode_text
    if padding_is_inert(model):
        def encode_text(tokens):
            return encode_text_trimmed(model, tokens)
    return LoadedModel(
        name=name, pretrained=pretrained, identity=identity, family="open_clip", model=model,
        preprocess=preprocess, context_length=int(model.context_length), device=device,
        _tokenize=lambda texts: tokenizer(texts), _encode_image=model.encode_image,
        _encode_text=encode_text, text_map=text_map)


def padding_is_inert(model) -> bool:
    """True for open_clip CLIP text towers whose output cannot depend on the padding.

    With a causal mask and pooling at the end-of-text token, tokens after it are never
    attended to, so a batch can be cut after its longest text (captions are ~10 of 77
    tokens: several times less work, same numbers). SigLIP-style towers attend both ways.
    """
    import open_clip

    return (type(model) is open_clip.CLIP and getattr(model, "attn_mask", None) is not None
            and getattr(model, "text_pool_type", "") in ("argmax", "eos"))


def encode_text_trimmed(model, text):
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
