"""Damaged inputs for the hostile sweep (tests/test_reliability_sweep.py), each a few kB:
model files (ckpt:, longclip:, hf:), datasets with an unusable image, Latin-1 benchmark
captions, a random-bytes mesh. `BUILT` maps a placeholder to the function that writes it
under a test's tmp_path and returns what the command line names."""

from __future__ import annotations

import copy
import json
import os
import pickle
from pathlib import Path


def _checkpoint(tmp: Path, edit, kind: str = "scratch") -> str:
    import open_clip
    import torch

    from comco.models import save_checkpoint
    from comco.train.scratch import scratch_cfg

    cfg = scratch_cfg(resolution=32, patch_size=8, vision_width=32, vision_layers=1, text_width=32,
                      text_layers=1, embed_dim=32, context_length=16)
    cfg["text_cfg"]["vocab_size"] = 64
    torch.manual_seed(0)
    path = tmp / "model.pt"
    save_checkpoint(path, kind=kind, model=open_clip.CLIP(**copy.deepcopy(cfg)), model_spec={"open_clip_cfg": cfg},
                    extra={"config": {"options": {"keep": 4}}})
    ckpt = torch.load(path, weights_only=True)
    edit(ckpt, torch)
    torch.save(ckpt, path)
    return f"ckpt:{path}"


def _stride0(ckpt, torch):  # 2e9 rows viewed on one row of storage: 512 GB if built for real
    ckpt["model_spec"]["open_clip_cfg"]["text_cfg"]["vocab_size"] = 2_000_000_000
    ckpt["state_dict"]["token_embedding.weight"] = torch.zeros(1, 32).expand(2_000_000_000, 32)


def _longclip_0d(tmp: Path) -> str:
    import torch

    state = {"positional_embedding": torch.zeros(248, 64), "positional_embedding_res": torch.zeros(248, 64),
             "token_embedding.weight": torch.zeros(8, 64), "visual.conv1.weight": torch.tensor(1.0),
             "visual.positional_embedding": torch.tensor(1.0), "visual.proj": torch.zeros(64),
             "ln_final.weight": torch.tensor(1.0), "text_projection": torch.zeros(64)}
    torch.save(state, tmp / "longclip.pt")
    return f"longclip:{tmp / 'longclip.pt'}"


def _hf(tmp: Path, edit, tokenizer: bool = True) -> str:
    import torch
    from transformers import CLIPConfig, CLIPModel
    from transformers.utils import logging as hf_logging

    from support.probes import save_tokenizer

    folder = tmp / "clip"
    vocab, eos = save_tokenizer(folder, 16) if tokenizer else (64, 2)
    text = {"vocab_size": vocab, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
            "num_attention_heads": 2, "max_position_embeddings": 16, "eos_token_id": eos, "pad_token_id": eos,
            "bos_token_id": eos}
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "image_size": 32, "patch_size": 8}
    torch.manual_seed(0)
    hf_logging.disable_progress_bar()  # the sweep counts stderr lines: no "Writing model shards" bar
    try:
        CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)).save_pretrained(folder)
    finally:
        hf_logging.enable_progress_bar()
    edit(folder)
    return f"hf:{folder}"


class _Payload:
    def __reduce__(self):
        return (os.system, ("echo the payload ran",))


def _pickled(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload()))


def _dataset(tmp: Path, damage, which: int = 1) -> str:
    from comco.io import read_jsonl
    from support.probes import make_dataset

    root = make_dataset(tmp / "ds", n=3, resolution=32, singles=False)
    damage(root / list(read_jsonl(root / "scenes.jsonl"))[which]["image"])
    return str(root)


def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def _urban1k_latin1(tmp: Path) -> str:
    from support.natural import write_urban1k

    root = write_urban1k(tmp / "urban1k", n=2)
    (root / "caption" / "2.txt").write_bytes("Un caf\xe9 au coin de la rue.\n".encode("latin-1"))
    return str(root)


MESH_SET = '''name = "junk"
[[objects]]
name = "crate"
plural = "crates"
article = "a"
dimensions_m = [0.4, 0.2, 0.2]
size_class = "small"
colorable = true
source = "mesh:crate.obj"
'''


def _random_obj(tmp: Path) -> str:
    folder = tmp / "junk-set"
    folder.mkdir()
    (folder / "objects.toml").write_text(MESH_SET)
    (folder / "crate.obj").write_bytes(os.urandom(3000))
    return str(folder)


def _write(name: str, data: bytes):
    return lambda folder: (folder / name).write_bytes(data)


BUILT = {
    "{ckpt-stride0}": lambda t: _checkpoint(t, _stride0),
    "{ckpt-kind-evil}": lambda t: _checkpoint(t, lambda c, _: c.update(kind="evil")),
    "{ckpt-version-string}": lambda t: _checkpoint(t, lambda c, _: c.update(version="1")),
    "{ckpt-text-map-list}": lambda t: _checkpoint(t, lambda c, _: c.update(text_map=[[1.0]])),
    "{ckpt-keep-abc}": lambda t: _checkpoint(t, lambda c, _: c["config"]["options"].update(keep="abc"), "longclip"),
    "{longclip-0d}": _longclip_0d,
    "{hf-empty-config}": lambda t: _hf(t, _write("config.json", b""), tokenizer=False),
    "{hf-pickled-weights}": lambda t: _hf(t, _pickled, tokenizer=False),
    "{hf-no-tokenizer}": lambda t: _hf(t, lambda folder: None, tokenizer=False),  # transformers' 2-token stand-in
    "{hf-size-5}": lambda t: _hf(t, _write("preprocessor_config.json", json.dumps({"size": -5}).encode())),
    "{ds-cut-image}": lambda t: _dataset(t, _cut),
    "{ds-missing-image}": lambda t: _dataset(t, Path.unlink),
    "{urban1k-latin1}": _urban1k_latin1,
    "{random-obj-set}": _random_obj,
}
