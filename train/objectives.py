"""The objectives a scratch CLIP can be trained with (`scratch.objective`), by name, and
which of them train the text tower alone. No torch here: the recipe checks and the report
read these names."""

from __future__ import annotations

# name -> how the report describes it
OBJECTIVES = {
    "clip": "contrastive",  # the image-text InfoNCE of CLIP
    "simcse": "SimCSE, text only",  # comco.train.simcse: two dropout views of a caption
    "paraphrase": "paraphrase pairs, text only",  # comco.train.paraphrase: two mention orders of a scene
    # the field's fixes (issue 39, comco.train.fixes)
    "siglip": "SigLIP sigmoid loss",
    "negclip": "NegCLIP hard negatives (reorderings as foils)",
    "negclip-orderpos": "NegCLIP hard negatives, reorderings as positives",
    "orderaug": "contrastive, every mention order a positive",
}
# trained without images: the image tower stays untrained, the gates are the text side's
TEXT_ONLY = ("simcse", "paraphrase")


def is_text_only(objective: str | None) -> bool:
    return (objective or "clip") in TEXT_ONLY
