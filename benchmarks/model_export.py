"""`comco model export` round trips: the largest absolute difference between the normalised
features comco computes and those transformers and open_clip compute from the exported folders,
per model kind and format, side by side in one run (a fidelity measurement, not a timed test;
tests/test_model_export*.py hold the same properties as assertions).

    nice -n 10 .venv/bin/python benchmarks/model_export.py [--b32] [--out DIR]

Models: one checkpoint of each kind `comco train` writes (scratch, longclip and debias stretched
77 -> 248, labclip), trained a few steps on a 24-image painted dataset as the tests train them,
and a scratch checkpoint with the conv image tower (open_clip only: CLIPModel has no conv tower).
`--b32` adds ViT-B-32's architecture at full size (random weights moved off their initial
values, 224 px, 77 tokens; ~600 MB per exported folder) and its LABCLIP-folded twin.

Inputs: 8 texts (punctuation, case, tabs, accents, one past the context length) and 6 crops of
docs/comco-cycles.png (Cycles renders), square so the centre crop has no margin. Two more
columns for transformers: the image features through its default torchvision backend (comco's
pixels come from PIL's bicubic, which `backend="pil"` gives), and through the PIL backend on 6
non-square crops whose margin is 3 mod 4 (transformers' centre crop lands one pixel off there).
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

TEXTS = ["a red cube and a small blue sphere", "Hello, world! 123 -- what's up?", "THE   Large\tpizza,, left of a cat.",
         "don't, can't; I'M (we'll) [they'd] {it's}", "café NAÏVE résumé Straße", "un chat à gauche d'un chien",
         "a photo of " + "very " * 60 + "long caption", "x" * 200, "a photo of " + "very, " * 150 + "long caption"]


def crops(sizes, seed=0):
    import numpy as np
    from PIL import Image

    sheet = Image.open(ROOT / "docs" / "comco-cycles.png").convert("RGB")
    rng = np.random.default_rng(seed)
    out = []
    for w, h in sizes:
        x, y = int(rng.integers(0, sheet.width - w)), int(rng.integers(0, sheet.height - h))
        out.append(sheet.crop((x, y, x + w, y + h)))
    return out


def trained(root: Path) -> dict[str, Path]:
    from support.train import make_dataset, make_tiny_checkpoint, scratch_config

    from comco.train.run import make_config, run_training

    data = make_dataset(root / "data")
    run_training(scratch_config(data, root / "scratch", steps=3))
    init = make_tiny_checkpoint(root / "init.pt")
    for kind in ("longclip", "debias"):
        run_training(make_config(kind, data=str(data), out=str(root / kind), init=f"ckpt:{init}",
                                 options={"pca_rank": 4}, batch_size=8, steps=2, warmup=1, lr=1e-3, quiet=True,
                                 device="cpu", workers=0))
    colours = make_dataset(root / "colours", n=20, colors=True, objects=(2,))
    run_training(make_config("labclip", data=str(colours), out=str(root / "labclip"), init=f"ckpt:{init}",
                             batch_size=16, steps=3, lr=1e-2, quiet=True, device="cpu"))
    paths = {kind: root / kind / "model.pt" for kind in ("scratch", "longclip", "debias", "labclip")}
    paths["scratch, conv tower"] = moved(root / "conv.pt", tower="conv")
    return paths


def moved(path: Path, tower="vit", b32=False, text_map=False) -> Path:
    """A checkpoint whose every weight is moved off its initial value (so a wrong mapping shows)."""
    import open_clip
    import torch

    from comco.models import save_checkpoint
    from comco.train.scratch import scratch_cfg

    if b32:
        cfg = copy.deepcopy(open_clip.get_model_config("ViT-B-32"))
        spec = {"open_clip_name": "ViT-B-32", "open_clip_cfg": cfg}
    else:
        cfg = scratch_cfg(resolution=32, patch_size=8, vision_width=64, vision_layers=2, text_width=64,
                          text_layers=2, embed_dim=64, context_length=16, vision_tower=tower)
        spec = {"open_clip_cfg": cfg}
    torch.manual_seed(0)
    model = open_clip.CLIP(**copy.deepcopy(cfg))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    dim = cfg["embed_dim"]
    extra = {"text_map": torch.eye(dim) + 0.3 * torch.randn(dim, dim) / dim ** 0.5} if text_map else {}
    return save_checkpoint(path, kind="labclip" if text_map else "scratch", model=model, model_spec=spec, extra=extra)


def differences(path: Path, work: Path) -> dict[str, str]:
    import open_clip
    import torch
    from transformers import CLIPModel, CLIPProcessor

    from comco import export_model
    from comco.errors import UserError
    from comco.models import load_model

    norm = torch.nn.functional.normalize
    loaded = load_model(f"ckpt:{path}")
    size = loaded.model.visual.image_size
    size = size[0] if isinstance(size, (list, tuple)) else size
    square = crops([(s, s) for s in (64, 120, 180, 224, 300, 380)])
    # margins 3 mod 4 after the resize to `size`: transformers' crop is one pixel off comco's there
    shifted = [(w, 200) for w in range(201, 400) if (int(size * w / 200) - size) % 4 == 3]
    odd = crops(shifted[::max(1, len(shifted) // 6)][:6], seed=1)
    with torch.no_grad():
        text = loaded.encode_text(loaded.tokenize(TEXTS))
        image = loaded.encode_image(torch.stack([loaded.preprocess(im) for im in square]))
        image_odd = loaded.encode_image(torch.stack([loaded.preprocess(im) for im in odd]))
    row = {}
    try:
        export_model(f"ckpt:{path}", "hf", work / "hf")
    except UserError as exc:
        row.update({"hf text": "refused", "hf image": "refused", "hf image, torchvision": "-",
                    "hf image, margin 3 mod 4": "-"})
        row["why"] = str(exc)[:60]
    else:
        model = CLIPModel.from_pretrained(work / "hf").eval()
        pil = CLIPProcessor.from_pretrained(work / "hf", backend="pil")
        default = CLIPProcessor.from_pretrained(work / "hf")
        inputs = pil(text=TEXTS, padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            t = norm(model.get_text_features(**inputs).pooler_output, dim=-1)
            feats = {}
            for name, proc, ims in (("pil", pil, square), ("tv", default, square), ("odd", pil, odd)):
                pixels = proc(images=ims, return_tensors="pt")["pixel_values"]
                feats[name] = norm(model.get_image_features(pixel_values=pixels).pooler_output, dim=-1)
        row["hf text"] = f"{(t - text).abs().max():.1e}"
        row["hf image"] = f"{(feats['pil'] - image).abs().max():.1e}"
        row["hf image, torchvision"] = f"{(feats['tv'] - image).abs().max():.1e}"
        row["hf image, margin 3 mod 4"] = f"{(feats['odd'] - image_odd).abs().max():.1e}"
    export_model(f"ckpt:{path}", "open_clip", work / "oc")
    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{work / 'oc'}")
    tokenizer = open_clip.get_tokenizer(f"local-dir:{work / 'oc'}")
    with torch.no_grad():
        t = model.eval().encode_text(tokenizer(TEXTS), normalize=True)
        i = model.encode_image(torch.stack([preprocess(im) for im in square]), normalize=True)
    row["open_clip text"] = f"{(t - text).abs().max():.1e}"
    row["open_clip image"] = f"{(i - image).abs().max():.1e}"
    # scale: how far apart two different texts' features are, on this model
    row["text[0] vs text[1]"] = f"{(text[0] - text[1]).abs().max():.1e}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--b32", action="store_true", help="add ViT-B-32's architecture at full size")
    parser.add_argument("--out", type=Path, help="keep the checkpoints and exports here (default: a temp folder)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    root = args.out or Path(tempfile.mkdtemp(prefix="model-export-"))
    paths = trained(root)
    if args.b32:
        paths["ViT-B-32 arch., random"] = moved(root / "b32.pt", b32=True)
        paths["ViT-B-32 arch., LABCLIP map"] = moved(root / "b32-lab.pt", b32=True, text_map=True)
    rows = {kind: differences(path, root / "exports" / kind.replace(" ", "_").replace(",", "").replace(".", ""))
            for kind, path in paths.items()}
    cols = ["hf text", "hf image", "open_clip text", "open_clip image", "hf image, torchvision",
            "hf image, margin 3 mod 4", "text[0] vs text[1]"]
    print(f"largest |comco - library| of the normalised features; torch {torch.__version__}, CPU, float32")
    print("| model | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for kind, row in rows.items():
        print(f"| {kind} | " + " | ".join(row.get(c, "-") for c in cols) + " |")
    for kind, row in rows.items():
        if "why" in row:
            print(f"{kind}, hf: {row['why']}...")
    print(f"checkpoints and exports in {root}")


if __name__ == "__main__":
    main()
