"""ShareGPT4V, the one reader of its JSON (comco.train.data trains from it): (image path,
long caption) pairs from its LLaVA-style JSON.

The file (e.g. `share-captioner_coco_lcs_sam_1246k_1107.json`) is a list of
`{"id", "image": "coco/train2017/....jpg", "conversations": [{"from": "human", ...},
{"from": "gpt", "value": CAPTION}]}`; image paths are relative to the data root.
The caption is the first `gpt` turn, line breaks turned into spaces (as Long-CLIP
does). Entries whose image file is missing are counted in `skipped`, never dropped
without a count.
"""

from __future__ import annotations

from pathlib import Path

from comco.errors import UserError
from comco.probes.natural.split import ImageCaptions, NaturalSplit, field_of, read_json, require_file

SHAREGPT4V_LAYOUT = (
    "a JSON list of {image, conversations: [{from: human, value}, {from: gpt, value}]}, "
    "image paths relative to IMAGE_ROOT"
)


def _caption(entry: dict, path: Path) -> str:
    for turn in field_of(entry, "conversations", path, "sharegpt4v"):
        if isinstance(turn, dict) and turn.get("from") == "gpt":
            return " ".join(str(turn.get("value", "")).split())
    return ""


def load_sharegpt4v(json_path: Path, image_root: Path, check_images: bool = True) -> NaturalSplit:
    """All entries as a NaturalSplit (one caption per image).

    check_images=False skips the per-file existence check (1.2 M stat calls on a
    network disk); the training loader then meets missing files while decoding.
    """
    json_path, image_root = Path(json_path), Path(image_root)
    require_file(json_path, "sharegpt4v", SHAREGPT4V_LAYOUT)
    entries = read_json(json_path, "sharegpt4v")
    if not isinstance(entries, list):
        raise UserError(f"sharegpt4v: {json_path} should hold a JSON list; expected: {SHAREGPT4V_LAYOUT}")
    pairs = NaturalSplit("sharegpt4v", "train", image_root, [])
    for entry in entries:
        image = image_root / field_of(entry, "image", json_path, "sharegpt4v")
        caption = _caption(entry, json_path)
        if check_images:
            pairs.add(image, [caption])
        elif caption:
            pairs.items.append(ImageCaptions(image, (caption,)))
        else:
            pairs.skip("no_caption", image.name)
    return pairs
