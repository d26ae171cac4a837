"""Zero-shot classification on an ImageNet-style folder, as CLIP's and open_clip's code does it.

ROOT holds one subfolder per class (sorted by name, as torchvision's ImageFolder orders them);
class names are the folder names with `_` read as a space, or one line each of a classnames file
in that same sorted order (open_clip's IMAGENET_CLASSNAMES follows the sorted wnid folders).
Each class's weight is the mean of its normalised prompt embeddings, normalised again; an image is
assigned the class of highest cosine. A class is in an image's top k when fewer than k other
classes score at least as high as the true one (a tie is not a win).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from comco.errors import UserError

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff", ".gif", ".ppm", ".pgm", ".jfif"}
NAMED_TEMPLATES = ("openai", "simple")  # open_clip.zero_shot_metadata OPENAI_/SIMPLE_IMAGENET_TEMPLATES
NAMED_CLASSNAMES = ("imagenet",)  # open_clip.zero_shot_metadata IMAGENET_CLASSNAMES (sorted wnid order)
KS = (1, 5)


@dataclass
class ZeroShotSplit:
    root: Path
    classes: list[str]  # display names, in folder order
    folders: list[str]
    images: list[Path]
    labels: np.ndarray
    unreadable: int = 0


def load_folder(root: Path, classnames: Path | None = None) -> ZeroShotSplit:
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"zeroshot: --root {root} is not a folder; give an ImageNet-style folder "
                        "(one subfolder of images per class)")
    folders = sorted(p.name for p in root.iterdir() if p.is_dir())
    if len(folders) < 2:
        raise UserError(f"zeroshot: {root} has {len(folders)} class subfolders; zero-shot needs two or more")
    if classnames is not None and str(classnames) in NAMED_CLASSNAMES and not Path(classnames).exists():
        names = named_classnames(str(classnames))
        if len(names) != len(folders):
            raise UserError(f"zeroshot: --classnames {classnames} has {len(names)} names for {len(folders)} class "
                            "folders; give the full ImageNet-1k val folder (1000 wnid folders) or a file")
    elif classnames is not None:
        if not Path(classnames).is_file():
            raise UserError(f"zeroshot: --classnames {classnames} is not a file; give one class name a line, "
                            "or imagenet (open_clip's IMAGENET_CLASSNAMES)")
        names = [ln.strip() for ln in Path(classnames).read_text(encoding="utf-8").splitlines() if ln.strip()]
        if len(names) != len(folders):
            raise UserError(f"zeroshot: --classnames has {len(names)} names for {len(folders)} class folders; "
                            "give one name a line, in the folders' sorted order")
    else:
        names = [f.replace("_", " ") for f in folders]
    from comco.probes.natural.images import header_problem

    images, labels, unreadable = [], [], 0
    for k, folder in enumerate(folders):
        for p in sorted((root / folder).iterdir()):
            if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES:
                if header_problem(p):  # counted and reported, never dropped silently
                    unreadable += 1
                    continue
                images.append(p)
                labels.append(k)
    if not images:
        raise UserError(f"zeroshot: no images in the class folders under {root}")
    return ZeroShotSplit(root, names, folders, images, np.array(labels), unreadable)


def named_classnames(name: str) -> list[str]:
    """open_clip's class names by name: imagenet -> IMAGENET_CLASSNAMES (1000, the sorted wnid order)."""
    from open_clip import zero_shot_metadata as meta

    return list(meta.IMAGENET_CLASSNAMES)


def templates(name_or_file: str) -> tuple[str, list]:
    """(label, prompt makers): open_clip's by name, or a file with one `{}` template a line."""
    if name_or_file in NAMED_TEMPLATES:
        from open_clip import zero_shot_metadata as meta

        found = meta.OPENAI_IMAGENET_TEMPLATES if name_or_file == "openai" else meta.SIMPLE_IMAGENET_TEMPLATES
        return f"open_clip {name_or_file.upper()}_IMAGENET_TEMPLATES ({len(found)})", list(found)
    path = Path(name_or_file)
    if not path.is_file():
        raise UserError(f"--prompts {name_or_file}: give openai, simple or a file with one template a line "
                        "('a photo of a {}.')")
    lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if not lines or any("{}" not in ln for ln in lines):
        raise UserError(f"--prompts {path}: every line needs a {{}} where the class name goes")
    return f"{path.name} ({len(lines)})", [ln.format for ln in lines]


def class_weights(text_emb: np.ndarray, n_classes: int) -> np.ndarray:
    """text_emb: (classes * templates, d) class-major -> (classes, d), each the normalised mean."""
    t = text_emb.reshape(n_classes, -1, text_emb.shape[-1]).astype(np.float64)
    t = t / np.linalg.norm(t, axis=-1, keepdims=True)
    w = t.mean(axis=1)
    return w / np.linalg.norm(w, axis=-1, keepdims=True)


def topk_hits(logits: np.ndarray, labels: np.ndarray, ks=KS) -> dict[int, np.ndarray]:
    """Hit at k: fewer than k other classes score >= the true class."""
    logits = np.asarray(logits, dtype=np.float64)
    true = logits[np.arange(len(labels)), labels]
    rivals = (logits >= true[:, None]).sum(axis=1) - 1
    return {k: rivals < k for k in ks}


def evaluate_zeroshot(embedder, split: ZeroShotSplit, makers: list, n_boot: int = 1000) -> dict:
    from comco.probes.stats import accuracy

    texts = [make(c) for c in split.classes for make in makers]
    weights = class_weights(embedder.texts(texts), len(split.classes))
    img = embedder.images(split.images).astype(np.float64)
    hits = topk_hits(img @ weights.T, split.labels)
    n = len(split.classes)
    return {f"top{k}": accuracy(h, chance=min(k, n) / n, n_boot=n_boot) for k, h in hits.items()}
