"""Which of the file layouts comco reads a `.pt` file is in, told from its keys.

`ckpt:`, `longclip:` and `debias:` each expect one layout; a file in another known
layout is answered with the reference that loads it, and a file in none of them with
the list of what comco reads.
"""

from __future__ import annotations

from pathlib import Path

from comco.errors import UserError

CHECKPOINT_FORMAT = "comco-checkpoint"


LAYOUTS = ("comco checkpoints (ckpt:PATH), Long-CLIP .pt files (longclip:PATH), DeBias-CLIP .pt files "
           "(debias:PATH), open_clip / OpenAI weights (--model NAME --pretrained PATH) and transformers "
           "folders (hf:DIR)")


NAMES = {"comco": "a comco checkpoint", "longclip": "a Long-CLIP checkpoint", "debias": "a DeBias-CLIP checkpoint",
         "open_clip": "open_clip / OpenAI CLIP weights"}


def reference(layout: str, path: Path) -> str:
    """How the command line names a file of this layout."""
    prefix = {"comco": "ckpt:", "longclip": "longclip:", "debias": "debias:"}.get(layout)
    return f"--model {prefix}{path}" if prefix else f"--model NAME --pretrained {path}"


def read_torch_file(path: Path, prefix: str):
    """The object a `.pt` file holds (tensors memory-mapped where the file allows it)."""
    import torch

    if not path.is_file():
        raise UserError(f"{path} not found; pass {prefix}PATH to an existing file")
    try:  # mmap: a training checkpoint's optimiser state is never read into memory
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # noqa: BLE001 - an old (non-zip) file cannot be mapped; the plain read decides
        pass
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - garbage bytes fail in many ways inside the unpickler
        raise UserError(f"{path} is not a file torch reads ({exc.__class__.__name__}); "
                        f"comco reads {LAYOUTS}") from None


def storage_problem(tensors: dict) -> str:
    """"" when every tensor's bytes are in the file, else the first that is not in words.

    A tensor is a view on a storage: an expanded (stride-0) or otherwise overlapping view of
    a few bytes can claim billions of rows, pass every shape check and then make the model
    that copies it allocate its full size. A tensor whose storage holds fewer bytes than its
    shape needs is refused, so building a model from checked tensors never allocates much
    more than the file holds."""
    for key, t in tensors.items():
        need = t.numel() * t.element_size()
        have = t.untyped_storage().nbytes() - t.storage_offset() * t.element_size()
        if need > have:
            return (f"{key} claims shape {list(t.shape)} ({need:,} bytes) but the file holds "
                    f"{max(have, 0):,} bytes for it (an expanded or overlapping view)")
    return ""


def state_of(obj) -> dict | None:
    """The state dict inside a file's object (a training checkpoint's "state_dict", or the object
    itself), without DistributedDataParallel's "module." prefix; None when there is none."""
    state = obj.get("state_dict", obj) if isinstance(obj, dict) else None
    if not isinstance(state, dict) or not state or not all(isinstance(k, str) for k in state):
        return None
    return {k.removeprefix("module."): v for k, v in state.items()}


def layout_of(obj) -> str | None:
    """"comco", "longclip", "debias", "open_clip" or None, from the object's keys."""
    if isinstance(obj, dict) and obj.get("format") == CHECKPOINT_FORMAT:
        return "comco"
    state = state_of(obj)
    if state is None:
        return None
    if "text.positional_embedding_res" in state:
        return "debias"
    if "positional_embedding_res" in state:
        return "longclip"
    if "positional_embedding" in state or "text.positional_embedding" in state:
        return "open_clip"
    return None


def expect_layout(path: Path, obj, want: str) -> None:
    """UserError unless the file is in the layout `want`, naming the reference that loads it."""
    got = layout_of(obj)
    if got == want:
        return
    if got is None:
        raise UserError(f"{path} is in none of the layouts comco reads: {LAYOUTS}")
    raise UserError(f"{path} holds {NAMES[got]}, not {NAMES[want]}; pass {reference(got, path)}")
