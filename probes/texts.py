"""Captions the probes write themselves: single-object gallery texts, text-only tuples,
matching captions. They use the dataset's caption templates (comco.plan.captions), so a
probe caption reads exactly like a dataset caption of the same template.
"""

from __future__ import annotations

import numpy as np

from comco.errors import UserError

# The 91 object categories of the COCO paper (Lin et al. 2014, in id order 1..91). Ids 1..90
# are the id space of the 2014 annotations, which keep ten of them unannotated (street sign,
# hat, shoe, eye glasses, plate, mirror, window, desk, door, blender); hair brush (91) is in
# the paper's list only. The 80 annotated classes are the list without those eleven.
COCO_PAPER_91 = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "street sign", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep",
    "cow", "elephant", "bear", "zebra", "giraffe", "hat", "backpack", "umbrella", "shoe", "eye glasses",
    "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite", "baseball bat",
    "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle", "plate", "wine glass", "cup", "fork",
    "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza",
    "donut", "cake", "chair", "couch", "potted plant", "bed", "mirror", "dining table", "window", "desk",
    "toilet", "door", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone", "microwave", "oven",
    "toaster", "sink", "refrigerator", "blender", "book", "clock", "vase", "scissors", "teddy bear",
    "hair drier", "toothbrush", "hair brush",
)
_UNANNOTATED = {"street sign", "hat", "shoe", "eye glasses", "plate", "mirror", "window", "desk", "door",
                "blender", "hair brush"}
# Name lists for `probe --text-only --gallery NAME` (instead of an object set's names).
NAME_LISTS = {
    "coco90": COCO_PAPER_91[:90],  # ids 1..90: the 2014 annotations' category ids
    "coco91": COCO_PAPER_91,  # the paper's whole list
    "coco80": tuple(n for n in COCO_PAPER_91 if n not in _UNANNOTATED),  # the annotated classes
}


def name_list(name: str) -> list[str]:
    """A fixed gallery of object names for text-only TOR ("coco90", "coco91", "coco80").

    Args:
        name: the --gallery value."""
    if name not in NAME_LISTS:
        raise UserError(f"--gallery {name}: use one of {', '.join(NAME_LISTS)} (or leave it out for the set's names)")
    return list(NAME_LISTS[name])


def template_book(info: dict | None = None):
    from comco.plan import captions

    config = (info or {}).get("config") or {}
    extra, text = config.get("templates"), config.get("templates_text")
    try:
        return captions.load_templates(extra, text=text)
    except UserError:
        return captions.load_templates()  # the dataset's template file moved; built-ins still apply


def get_template(book, name: str):
    if name not in book.templates:
        raise UserError(f"unknown caption template '{name}'; known: {', '.join(book.templates)}")
    return book.templates[name]


def write(template, names: list[str], object_set, colors: list[str | None] | None = None) -> str:
    """The template's caption naming `names` in this order (list form; a long template's summary)."""
    from comco.plan import captions

    objs = [{"name": n, "color": c} for n, c in zip(names, colors or [None] * len(names))]
    if object_set is None:
        raise UserError("captions with articles need the dataset's object set; its manifest did not load")
    return captions.write_list_caption(template, objs, object_set)


def balanced_tuples(n_names: int, k: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Ordered k-tuples of distinct indices where every index is equally often at each position.

    Cyclic windows over a fresh random permutation: each round of n_names tuples puts
    every name once at every position (a Latin rectangle), with no index-order confound.
    `count` is rounded up to whole rounds so the balance is exact.
    """
    if k > n_names:
        raise UserError(f"cannot name {k} distinct objects from a set of {n_names}")
    rounds = max(1, -(-count // n_names))
    out = []
    for _ in range(rounds):
        perm = rng.permutation(n_names)
        for j in range(n_names):
            out.append([perm[(j + p) % n_names] for p in range(k)])
    return np.asarray(out, dtype=np.int64)
