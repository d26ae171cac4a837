"""The compositional benchmarks' released files, read into trials (compositional.py scores them).

Each loader takes the benchmark's folder as its authors lay it out and returns a CompoSplit:
`Trial` (one image, its true caption first, then the foils), `Triplet` (SugarCrepe++: one image,
two true captions, one negative) or `Quad` (Winoground and EqBen: two images, two captions,
caption k true of image k). What a loader cannot use (a missing image, a foil that is the true
caption word for word) is counted in `skipped`, never dropped silently. Fields read and folders
searched are in docs/guide/eval.md; the benchmarks' own code is the reference for each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from comco.data.export import sugarcrepe as sugarcrepe_format
from comco.data.export import winoground as winoground_format
from comco.errors import UserError

SUGARCREPE_CATEGORIES = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
SUGARCREPE_PP_CATEGORIES = ("replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
ARO_FILES = {"vg-relation": "visual_genome_relation.json", "vg-attribution": "visual_genome_attribution.json"}
ORDER_FILES = {"coco-order": "coco_karpathy_test.json", "flickr30k-order": "flickr30k_test.json"}
# What'sUp's six subsets (Kamath et al. 2023): file -> (category, image path of an entry's id or None)
WHATSUP_FILES = {
    "controlled_images_dataset.json": ("controlled A", None),
    "controlled_clevr_dataset.json": ("controlled B", None),
    "coco_qa_one_obj.json": ("COCO-spatial one object", "val2017/{:012d}.jpg"),
    "coco_qa_two_obj.json": ("COCO-spatial two objects", "val2017/{:012d}.jpg"),
    "vg_qa_one_obj.json": ("GQA-spatial one object", "vg_images/{}.jpg"),
    "vg_qa_two_obj.json": ("GQA-spatial two objects", "vg_images/{}.jpg"),
}
# What'sUp's controlled pairs: the prepositions whose images of one object pair form a pair
WHATSUP_PAIRS = {"controlled A": (("left", "right"), ("on", "under")),
                 "controlled B": (("left", "right"), ("in-front", "behind"))}
VALSE_MIN_VOTES = 2  # VALSE's valid foils: at least 2 of 3 annotators chose the caption, not the foil


@dataclass(frozen=True)
class Trial:
    """One image against its captions, the true one first; `box` crops the image (x0, y0, x1, y1);
    `group` places it in What'sUp's pairs and sets: (subset, object pair, preposition)."""
    image: Path
    captions: tuple[str, ...]
    category: str
    unit: str
    box: tuple[float, float, float, float] | None = None
    group: tuple[str, str, str] | None = None

    @property
    def images(self) -> tuple[Path]:
        return (self.image,)


@dataclass(frozen=True)
class Triplet:
    """SugarCrepe++: one image, its two true captions and one negative (p1, p2, n)."""
    image: Path
    captions: tuple[str, str, str]
    category: str
    unit: str
    box = None

    @property
    def images(self) -> tuple[Path]:
        return (self.image,)


@dataclass(frozen=True)
class Quad:
    """Winoground / EqBen: two images, two captions, caption k true of image k."""
    images: tuple[Path, Path]
    captions: tuple[str, str]
    category: str
    unit: str
    box = None


@dataclass
class CompoSplit:
    benchmark: str
    root: Path
    trials: list = field(default_factory=list)
    skipped: dict = field(default_factory=dict)

    def skip(self, why: str, n: int = 1) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + n

    def select(self, image: Path | None, options, category: str, unit: str, **extra) -> None:
        """Add an image-to-caption trial (true caption first); a foil identical to the true caption
        is left out and counted (no model can tell them apart; the authors' argmax counts the tie
        for whichever comes first)."""
        if image is None:
            self.skip("missing_image")
            return
        true, *foils = (str(o) for o in options)
        kept = [f for f in foils if f.strip() != true.strip()]
        if len(kept) < len(foils):
            self.skip("foil_identical_to_caption", len(foils) - len(kept))
        if not kept:
            self.skip("no_distinct_foil")
            return
        self.trials.append(Trial(image, (true, *kept), category, unit, **extra))


def read_json(path: Path, benchmark: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"{benchmark}: {path} is not readable JSON ({type(err).__name__}); "
                        "give the file as the benchmark releases it") from None


def find(folders, name: str) -> Path | None:
    return next((f / name for f in folders if (f / name).is_file()), None)


def _files(root: Path, names) -> list[Path]:
    """The named files first (in the authors' order), then any other JSON, from ROOT or ROOT/data."""
    found = []
    for folder in (root, root / "data"):
        found += [folder / f"{n}.json" for n in names if (folder / f"{n}.json").is_file()]
        found += sorted(p for p in folder.glob("*.json") if p not in found)
    return found


# ---------------------------------------------------------------- SugarCrepe and SugarCrepe++

def load_sugarcrepe(root: Path, **_) -> CompoSplit:
    """`{id: {"filename", "caption", "negative_caption"}}` per category file (main_eval.py's data/)."""
    split = CompoSplit("sugarcrepe", root)
    folders = [root / "val2017", root / sugarcrepe_format.IMAGES, root]
    for path in _files(root, SUGARCREPE_CATEGORIES):
        data = read_json(path, "sugarcrepe")
        if not (isinstance(data, dict) and data and all(
                isinstance(v, dict) and {"filename", "caption", "negative_caption"} <= v.keys()
                for v in data.values())):
            continue  # not a SugarCrepe category file
        for key, entry in data.items():
            split.select(find(folders, entry["filename"]), (entry["caption"], entry["negative_caption"]),
                         path.stem, f"{path.stem}/{key}")
    return split


def load_sugarcrepe_pp(root: Path, **_) -> CompoSplit:
    """SugarCrepe++'s data/: a list of `{"id", "filename", "caption", "caption2", "negative_caption"}`
    per category file, the COCO val2017 images in `images/` (its download script's folder)."""
    split = CompoSplit("sugarcrepe-pp", root)
    folders = [root / "images", root / "val2017", root]
    keys = {"filename", "caption", "caption2", "negative_caption"}
    for path in _files(root, SUGARCREPE_PP_CATEGORIES):
        data = read_json(path, "sugarcrepe-pp")
        if not (isinstance(data, list) and data and all(isinstance(v, dict) and keys <= v.keys() for v in data)):
            continue  # not a SugarCrepe++ category file
        for i, entry in enumerate(data):
            image = find(folders, entry["filename"])
            if image is None:
                split.skip("missing_image")
                continue
            split.trials.append(Triplet(image, (entry["caption"], entry["caption2"], entry["negative_caption"]),
                                        path.stem, f"{path.stem}/{entry.get('id', i)}"))
    return split


# ---------------------------------------------------------------- Winoground and EqBen

def load_winoground(root: Path, **_) -> CompoSplit:
    """The Hugging Face release: `examples.jsonl` and `images/<image_k>.png` (ROOT or ROOT/data)."""
    split = CompoSplit("winoground", root)
    base = next((f for f in (root, root / "data") if (f / winoground_format.EXAMPLES).is_file()), None)
    if base is None:
        raise UserError(f"winoground: missing file {root / winoground_format.EXAMPLES}; expected layout: "
                        "ROOT/examples.jsonl and ROOT/images/<image_0>.png (or both under ROOT/data)")
    examples = base / winoground_format.EXAMPLES
    for n, line in enumerate(examples.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            ex = json.loads(line)
            names = (ex["image_0"], ex["image_1"])
            captions = (ex["caption_0"], ex["caption_1"])
        except (json.JSONDecodeError, KeyError, TypeError):
            raise UserError(f"winoground: {examples} line {n} lacks id, image_0, image_1, caption_0 or "
                            "caption_1") from None
        images = tuple(base / winoground_format.IMAGES / (name + winoground_format.IMAGE_EXTENSION)
                       for name in names)
        if not all(p.is_file() for p in images):
            split.skip("missing_image")
            continue
        split.trials.append(Quad(images, captions, str(ex.get("tag") or "all"), str(ex.get("id", n))))
    return split


def _eqben_entries(node):
    """Every `{image0, caption0, image1, caption1}` in EqBen's annotation, however nested (the Kubric
    and SD lists, the AG video -> subject -> frames and the YouCook2 / GEBC video -> frames dicts)."""
    if isinstance(node, dict):
        if {"image0", "image1", "caption0", "caption1"} <= node.keys():
            yield node
            return
        for value in node.values():
            yield from _eqben_entries(value)
    elif isinstance(node, list):
        for value in node:
            yield from _eqben_entries(value)


def load_eqben(root: Path, **_) -> CompoSplit:
    """EqBen's Winoground-style annotation JSONs (`image0`, `caption0`, `image1`, `caption1`, paths
    relative to the image root; a caption list gives its first caption, as EqBen's AG loader takes);
    the subset is the first folder of `image0` (eqbenag, eqbenkubric_loc, ...)."""
    split = CompoSplit("eqben", root)
    files = sorted(root.glob("*.json")) + sorted((root / "annotation").glob("*.json"))
    if not files:
        raise UserError(f"eqben: no annotation JSON under {root}; give the folder that holds EqBen's "
                        "annotation file and its image folders")
    for path in files:
        for i, entry in enumerate(_eqben_entries(read_json(path, "eqben"))):
            captions = tuple(c[0] if isinstance(c, list) else c for c in (entry["caption0"], entry["caption1"]))
            images = tuple(find((root, root / "images", root / "image"), str(entry[k])) for k in ("image0", "image1"))
            if None in images:
                split.skip("missing_image")
                continue
            subset = Path(str(entry["image0"])).parts[0] if len(Path(str(entry["image0"])).parts) > 1 else "all"
            split.trials.append(Quad(images, captions, subset, f"{path.stem}/{i}"))
    return split


# ---------------------------------------------------------------- ARO

def load_aro(name: str):
    def load(root: Path, **_) -> CompoSplit:
        """ARO's VG files: a list of `{"image_path", "bbox_*", "true_caption", "false_caption",
        "relation_name" | "attributes"}`, images in `images/`, each cropped to its box."""
        split = CompoSplit(f"aro-{name}", root)
        path = root / ARO_FILES[name]
        if not path.is_file():
            raise UserError(f"aro-{name}: missing file {path}; expected layout: ROOT/{ARO_FILES[name]} and "
                            "ROOT/images/<image_path>")
        for i, case in enumerate(read_json(path, f"aro-{name}")):
            image = root / "images" / case["image_path"]
            x, y, w, h = (float(case[k]) for k in ("bbox_x", "bbox_y", "bbox_w", "bbox_h"))
            # the authors' category keys: the relation, or the two attributes joined by "_"
            category = case["relation_name"] if name == "vg-relation" else "_".join(case["attributes"][:2])
            split.select(image if image.is_file() else None, (case["true_caption"], case["false_caption"]),
                         str(category), str(i), box=(x, y, x + w, y + h))
        return split
    return load


def load_order(name: str):
    def load(root: Path, tagger=None, seed: int = 0, **_) -> CompoSplit:
        """BLIP's retrieval test JSON, each caption against ARO's four word-order foils."""
        import numpy as np

        from comco.probes.natural import word_order

        split = CompoSplit(f"aro-{name}", root)
        path = root / ORDER_FILES[name]
        if not path.is_file():
            raise UserError(f"aro-{name}: missing file {path}; expected layout: ROOT/{ORDER_FILES[name]} (BLIP's "
                            "retrieval test split) and the images at ROOT/<image>")
        data = read_json(path, f"aro-{name}")
        tag = tagger or word_order.spacy_tagger()
        for i, ann in enumerate(data):
            image = root / ann["image"]
            captions = ann["caption"] if isinstance(ann["caption"], list) else [ann["caption"]]
            for j, caption in enumerate(captions):
                rng = np.random.default_rng([seed, i, j])
                split.select(image if image.is_file() else None, word_order.options(caption, tag, rng),
                             "all", str(ann["image"]))
        return split
    return load


# ---------------------------------------------------------------- What'sUp

def whatsup_group(subset: str, image_path: str) -> tuple[str, str, str]:
    """(subset, object pair, preposition) from a controlled image's name, as What'sUp's evaluation
    keys it: `mug_left_of_plate.jpeg` -> ("controlled A", "mug/plate", "left")."""
    parts = Path(image_path).stem.split("_")
    return subset, f"{parts[0]}/{parts[-1]}", parts[1] if len(parts) > 1 else ""


def load_whatsup(root: Path, **_) -> CompoSplit:
    split = CompoSplit("whatsup", root)
    found = {f: root / f for f in WHATSUP_FILES if (root / f).is_file()}
    if not found:
        raise UserError(f"whatsup: none of {', '.join(WHATSUP_FILES)} under {root}; give the folder that holds "
                        "What'sUp's JSON files (its data/ folder)")
    for name, path in found.items():
        subset, pattern = WHATSUP_FILES[name]
        for case in read_json(path, "whatsup"):
            if pattern is None:  # controlled: {"image_path", "caption_options"}, the true caption first
                rel = Path(case["image_path"])
                image = next((p for p in (root / rel, path.parent / rel.name, root / "images" / rel.name,
                                          root / rel.parent.name / rel.name) if p.is_file()), None)
                split.select(image, case["caption_options"], subset, f"{subset}/{rel.name}",
                             group=whatsup_group(subset, rel.name))
            else:  # COCO / GQA spatial: [image id, true caption, false caption]
                image_id, true, false = case[0], case[1], case[2]
                image = root / pattern.format(int(image_id) if "{:012d}" in pattern else image_id)
                split.select(image if image.is_file() else None, (true, false), subset, f"{subset}/{image_id}")
    return split


# ---------------------------------------------------------------- VALSE

def load_valse(root: Path, **_) -> CompoSplit:
    """VALSE's data/: one JSON per piece, `{id: {"dataset", "image_file", "caption", "foil", "mturk"}}`;
    only the valid foils (mturk caption votes >= 2, as VALSE's README defines them) are scored."""
    split = CompoSplit("valse", root)
    for path in _files(root, ()):
        data = read_json(path, "valse")
        if not (isinstance(data, dict) and data and all(
                isinstance(v, dict) and {"image_file", "caption", "foil"} <= v.keys() for v in data.values())):
            continue
        for key, entry in data.items():
            votes = (entry.get("mturk") or {}).get("caption")
            if votes is None or votes < VALSE_MIN_VOTES:
                split.skip("not_a_valid_foil")
                continue
            name, source = entry["image_file"], str(entry.get("dataset", ""))
            folders = (root / "images", root / source, root / "images" / source, root)
            split.select(find(folders, name), (entry["caption"], entry["foil"]), path.stem, f"{path.stem}/{key}")
    return split
