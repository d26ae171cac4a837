"""The one model factory for probes and training: `load_model` names a model as the command
line does and hands it to its family's loader.

- an open_clip name (`ViT-B-32`) with `pretrained` = a tag (`openai`, `laion2b_s34b_b79k`),
  a local weights file, or `none` (comco/models/openclip.py);
- `hf:DIR`: a local transformers folder (comco/models/hf.py);
- `st:DIR`: a sentence-transformers folder, text only (comco/models/sentence.py);
- `vlm:DIR`: a generative VLM has no embeddings: refused here; ModelRef.load gives its
  LoadedVLM (comco/models/vlm.py) to the probes that ask it questions;
- `ckpt:PATH`: a file `comco train` wrote (comco/models/checkpoints.py, its format);
- `longclip:PATH` / `debias:PATH`: the Long-CLIP and DeBias-CLIP release files
  (comco/models/papers.py, their layouts).

torch, open_clip and transformers are imported inside functions only: importing this
package is free, so `comco --help` stays instant.
"""

from __future__ import annotations

from pathlib import Path

from comco.errors import UserError
from comco.models.checkpoints import load_ckpt
from comco.models.hf import load_hf
from comco.models.loaded import LoadedModel
from comco.models.openclip import load_open_clip
from comco.models.papers import load_paper_checkpoint
from comco.models.sentence import load_sentence


def default_device() -> str:
    """cuda when this machine has a CUDA device, else cpu."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device(name: str) -> str:
    """A device this machine has: cpu, cuda or cuda:N, or auto (cuda when there is one, else cpu);
    probe, eval and train share this check."""
    import re

    if name == "auto":
        return default_device()
    if name == "cpu":
        return name
    if not re.fullmatch(r"cuda(:\d+)?", name):
        raise UserError(f"--device {name}: use auto, cpu, cuda or cuda:N")
    import torch

    if not torch.cuda.is_available():
        raise UserError(f"--device {name}: no CUDA device here; use --device cpu")
    index = int(name.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise UserError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA devices "
                        f"(cuda:0..cuda:{torch.cuda.device_count() - 1})")
    return name


def load_model(name: str, pretrained: str | None = None, device: str = "cpu",
               trust_remote_code: bool = False) -> LoadedModel:
    """The one model factory: a LoadedModel (encoders, tokenizer, transform, identity).

    Args:
        name: an open_clip architecture name, `hf:DIR` (a transformers CLIP, SigLIP, SigLIP 2,
            MetaCLIP 2 folder), `ckpt:PATH` (a checkpoint comco train wrote), `longclip:PATH`
            or `debias:PATH` (the papers' release files).
        pretrained: for open_clip names, a published tag, a weights file or "none" (random,
            seeded); ignored by the prefixed references, which carry their own weights.
        device: "cpu", "cuda" or "cuda:N".
        trust_remote_code: let an hf: folder run the model code it ships (never by default)."""
    prefix, _, rest = name.partition(":")
    if prefix == "hf":
        return load_hf(Path(rest).expanduser(), device, trust_remote_code)
    if prefix == "ckpt":
        return load_ckpt(Path(rest).expanduser(), device)
    if prefix == "vlm":
        from comco.models.vlm import VLM_PROBES_HINT

        raise UserError(f"{name} is a generative VLM and embeds nothing: this needs an embedding model "
                        f"({VLM_PROBES_HINT})")
    if prefix == "st":
        return load_sentence(Path(rest).expanduser(), device)
    if prefix in ("longclip", "debias"):
        return load_paper_checkpoint(prefix, Path(rest).expanduser(), device)
    return load_open_clip(name, pretrained, device)
