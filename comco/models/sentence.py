"""`st:DIR`: a sentence-transformers folder (SBERT, SimCSE, ...), loaded by the
sentence-transformers package itself, so its modules (transformer, pooling, dense,
normalize) run exactly as saved. Text only: ComCO's Table 5 compares such text-only
encoders with CLIP's text tower on TOR; image probes refuse them up front.
"""

from __future__ import annotations

import json
from pathlib import Path

from comco.errors import UserError
from comco.io import MAX_SMALL_BYTES, read_bounded
from comco.models.hf import check_tokenizer
from comco.models.loaded import LoadedModel

FAMILY = "sentence-transformers"
TEXT_ONLY_HINT = "st: models embed text only: use --text-only with --probes tor or size-class"


class _Texts(list):
    """The captions themselves as the 'tokens': sentence-transformers tokenises inside encode()."""

    def to(self, device):
        return self


def _no_images(_batch):
    raise UserError(f"image probes cannot run on a sentence encoder; {TEXT_ONLY_HINT}")


def load_sentence(path: Path, device: str) -> LoadedModel:
    """The folder's SentenceTransformer as a text-only LoadedModel (embeddings normalised)."""
    modules = path / "modules.json"
    if not path.is_dir():
        raise UserError(f"st:{path} is not a folder; give a folder a SentenceTransformer saved (model.save(DIR))")
    if not modules.is_file():
        raise UserError(f"st:{path} has no modules.json: it is not a sentence-transformers folder "
                        f"(save one with SentenceTransformer.save(DIR); for a transformers CLIP use hf:{path})")
    try:
        listed = json.loads(read_bounded(modules, f"st:{path}: modules.json", MAX_SMALL_BYTES).decode("utf-8"))
        if not isinstance(listed, list) or not listed:
            raise ValueError
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise UserError(f"st:{path}: modules.json is not a list of modules; the folder is damaged") from None
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(str(path), device=device, local_files_only=True, trust_remote_code=False)
    except Exception as exc:  # noqa: BLE001 - its loaders raise OSError, ValueError, KeyError, safetensors errors
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise UserError(f"st:{path} does not load as a sentence-transformers model ({first})") from None
    tok = getattr(model, "tokenizer", None)
    context = getattr(model, "max_seq_length", None) or 512
    if isinstance(context, bool) or not isinstance(context, int) or not 1 <= context <= 100_000:
        raise UserError(f"st:{path}: its max_seq_length is {context!r}, not a number of tokens in 1..100000 "
                        f"(sentence_bert_config.json); the folder is damaged or was edited")
    if tok is not None:
        check_tokenizer(path, tok, context)
    model.eval()

    def encode(texts):
        import torch

        with torch.no_grad():
            return model.encode(list(texts), convert_to_tensor=True, batch_size=max(1, len(texts)),
                                show_progress_bar=False, normalize_embeddings=False)

    return LoadedModel(name=f"st:{path}", pretrained=None, identity=f"st:{_identity(path)}", family=FAMILY,
                       model=model, preprocess=None, context_length=context, device=device,
                       _tokenize=_Texts, _encode_image=_no_images, _encode_text=encode)


def _identity(path: Path) -> str:
    """The folder's weights and module list, hashed: the embedding cache's key."""
    import hashlib

    from comco.io import file_digest

    h = hashlib.sha256()
    for p in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f"{p.relative_to(path).as_posix()}={file_digest(p)};".encode())
    return h.hexdigest()[:20]
