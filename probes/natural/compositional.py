"""Compositional benchmarks in their released file formats, scored as their authors score them.

Every benchmark but Winoground is image-to-caption selection: one image, its true caption and
one or more foils; a trial is won when the true caption's similarity is strictly above every
foil's (a tie is not a win: the authors' `argmax` over equal scores picks the first option, and a
model that cannot tell the captions apart has not chosen the right one). Winoground has its own
three scores (Thrush et al. 2022): with s(c, i) the similarity of caption c and image i,

    text  = s(c0, i0) > s(c1, i0) and s(c1, i1) > s(c0, i1)
    image = s(c0, i0) > s(c0, i1) and s(c1, i1) > s(c1, i0)
    group = text and image

Fields read (the files as their authors release them; see docs/guide/eval.md):

- SugarCrepe: `ROOT/<category>.json` (`add_att`, `add_obj`, `replace_att`, `replace_obj`,
  `replace_rel`, `swap_att`, `swap_obj`; any other JSON of the same shape, e.g. a comco export's
  `swap_size.json`, too), each `{id: {"filename", "caption", "negative_caption"}}`; images from
  `ROOT/val2017/`, `ROOT/images/` (a comco export) or ROOT. Unit: the item.
- Winoground: `ROOT/examples.jsonl` (`id`, `image_0`, `image_1`, `caption_0`, `caption_1`,
  `tag` when present) and `ROOT/images/<image_k>.png`. Unit: the example.
- ARO VG-Relation / VG-Attribution: `ROOT/visual_genome_relation.json` /
  `ROOT/visual_genome_attribution.json`, a list of `{"image_path", "bbox_x", "bbox_y", "bbox_w",
  "bbox_h", "true_caption", "false_caption", "relation_name" | "attributes"}`; images from
  `ROOT/images/<image_path>`, cropped to the box as ARO's loader crops them. Unit: the item.
- What'sUp: `ROOT/controlled_images_dataset.json` (set A) and `ROOT/controlled_clevr_dataset.json`
  (set B), lists of `{"image_path", "caption_options"}` with the true caption first; `image_path`
  is read relative to ROOT (the repository's `data/controlled_images/...`), else by its file name
  under the JSON's folder. Unit: the image.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from comco.data.export import sugarcrepe as sugarcrepe_format
from comco.data.export import winoground as winoground_format
from comco.errors import UserError

SUGARCREPE_CATEGORIES = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
ARO_FILES = {"vg-relation": "visual_genome_relation.json", "vg-attribution": "visual_genome_attribution.json"}
WHATSUP_FILES = {"A": "controlled_images_dataset.json", "B": "controlled_clevr_dataset.json"}


@dataclass(frozen=True)
class Trial:
    """One image against its captions, the true one first; `box` crops the image (x0, y0, x1, y1)."""
    image: Path
    captions: tuple[str, ...]
    category: str
    unit: str
    box: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class Quad:
    """One Winoground example: two images, two captions, caption k true of image k."""
    images: tuple[Path, Path]
    captions: tuple[str, str]
    category: str
    unit: str


@dataclass
class CompoSplit:
    benchmark: str
    root: Path
    trials: list = field(default_factory=list)
    skipped: dict = field(default_factory=dict)

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _read_json(path: Path, benchmark: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"{benchmark}: {path} is not readable JSON ({type(err).__name__}); "
                        "give the file as the benchmark releases it") from None


# ---------------------------------------------------------------- loaders

def load_sugarcrepe(root: Path) -> CompoSplit:
    split = CompoSplit("sugarcrepe", root)
    files = [root / f"{c}.json" for c in SUGARCREPE_CATEGORIES if (root / f"{c}.json").is_file()]
    files += sorted(p for p in root.glob("*.json") if p not in files)
    folders = [root / "val2017", root / sugarcrepe_format.IMAGES, root]
    for path in files:
        data = _read_json(path, "sugarcrepe")
        if not (isinstance(data, dict) and data and all(
                isinstance(v, dict) and {"filename", "caption", "negative_caption"} <= v.keys()
                for v in data.values())):
            continue  # not a SugarCrepe category file
        for key, entry in data.items():
            image = next((f / entry["filename"] for f in folders if (f / entry["filename"]).is_file()), None)
            if image is None:
                split.skip("missing_image")
                continue
            split.trials.append(Trial(image, (entry["caption"], entry["negative_caption"]), path.stem,
                                      f"{path.stem}/{key}"))
    return split


def load_winoground(root: Path) -> CompoSplit:
    split = CompoSplit("winoground", root)
    examples = root / winoground_format.EXAMPLES
    if not examples.is_file():
        raise UserError(f"winoground: missing file {examples}; expected layout: ROOT/examples.jsonl and "
                        "ROOT/images/<image_0>.png")
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
        images = tuple(root / winoground_format.IMAGES / (name + winoground_format.IMAGE_EXTENSION)
                       for name in names)
        if not all(p.is_file() for p in images):
            split.skip("missing_image")
            continue
        split.trials.append(Quad(images, captions, str(ex.get("tag") or "all"), str(ex.get("id", n))))
    return split


def _aro(name: str):
    def load(root: Path) -> CompoSplit:
        split = CompoSplit(f"aro-{name}", root)
        path = root / ARO_FILES[name]
        if not path.is_file():
            raise UserError(f"aro-{name}: missing file {path}; expected layout: ROOT/{ARO_FILES[name]} and "
                            "ROOT/images/<image_path>")
        for i, case in enumerate(_read_json(path, f"aro-{name}")):
            image = root / "images" / case["image_path"]
            if not image.is_file():
                split.skip("missing_image")
                continue
            x, y, w, h = (float(case[k]) for k in ("bbox_x", "bbox_y", "bbox_w", "bbox_h"))
            category = case.get("relation_name") if name == "vg-relation" else " ".join(case.get("attributes", []))
            split.trials.append(Trial(image, (case["true_caption"], case["false_caption"]),
                                      str(category or "all"), str(i), box=(x, y, x + w, y + h)))
        return split
    return load


def load_whatsup(root: Path) -> CompoSplit:
    split = CompoSplit("whatsup", root)
    found = {s: root / f for s, f in WHATSUP_FILES.items() if (root / f).is_file()}
    if not found:
        raise UserError(f"whatsup: none of {', '.join(WHATSUP_FILES.values())} under {root}; give the folder "
                        "that holds What'sUp's controlled_images_dataset.json")
    for subset, path in found.items():
        for i, case in enumerate(_read_json(path, "whatsup")):
            rel = Path(case["image_path"])
            image = next((p for p in (root / rel, path.parent / rel.name, root / "images" / rel.name)
                          if p.is_file()), None)
            if image is None:
                split.skip("missing_image")
                continue
            split.trials.append(Trial(image, tuple(case["caption_options"]), f"controlled {subset}",
                                      f"{subset}/{i}"))
    return split


@dataclass(frozen=True)
class CompoBenchmark:
    name: str
    load: object
    chance: dict  # metric -> chance level
    about: str
    unit: str = "items"  # what the bootstrap resamples


COMPOSITIONAL = {b.name: b for b in [
    CompoBenchmark("sugarcrepe", load_sugarcrepe, {"accuracy": 1 / 2},
                   "SugarCrepe (Hsieh et al. 2023), image vs caption and one hard negative"),
    CompoBenchmark("winoground", load_winoground, {"text": 1 / 4, "image": 1 / 4, "group": 1 / 6},
                   "Winoground (Thrush et al. 2022), two images and two captions", "examples"),
    CompoBenchmark("aro-vg-relation", _aro("vg-relation"), {"accuracy": 1 / 2},
                   "ARO VG-Relation (Yuksekgonul et al. 2023), cropped image vs swapped relation"),
    CompoBenchmark("aro-vg-attribution", _aro("vg-attribution"), {"accuracy": 1 / 2},
                   "ARO VG-Attribution (Yuksekgonul et al. 2023), cropped image vs swapped attributes"),
    CompoBenchmark("whatsup", load_whatsup, {"accuracy": 1 / 4},
                   "What'sUp controlled A/B (Kamath et al. 2023), image vs four spatial captions", "images"),
]}


def load_compositional(name: str, root: Path) -> CompoSplit:
    if name not in COMPOSITIONAL:
        raise UserError(f"unknown compositional benchmark '{name}'; choose one of: {', '.join(COMPOSITIONAL)}")
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{name}: --root {root} is not a folder")
    try:
        split = COMPOSITIONAL[name].load(root)
    except (KeyError, TypeError, ValueError) as err:
        raise UserError(f"{name}: an entry under {root} lacks a field or has a wrong type ({type(err).__name__}: "
                        f"{err}); give the files as the benchmark releases them (docs/guide/eval.md)") from None
    split = drop_unreadable(split)
    if not split.trials:
        left = ", ".join(f"{n} {why}" for why, n in split.skipped.items()) or "no entries in its format"
        raise UserError(f"{name}: nothing to score under {root} ({left}); see docs/guide/eval.md for the layout")
    return split


def drop_unreadable(split: CompoSplit) -> CompoSplit:
    """Leave out (and count) trials with an image that is not an image at all, or a box outside it."""
    from PIL import Image

    from comco.probes.natural.images import header_problem

    paths = {p for t in split.trials for p in (t.images if isinstance(t, Quad) else (t.image,))}
    bad = {p for p in paths if header_problem(p)}
    kept = []
    for t in split.trials:
        if bad & set(t.images if isinstance(t, Quad) else (t.image,)):
            split.skip("unreadable_image")
        elif isinstance(t, Trial) and t.box is not None and not _box_fits(t, Image):
            split.skip("empty_or_outside_box")
        else:
            kept.append(t)
    split.trials = kept
    return split


def _box_fits(t: Trial, Image) -> bool:
    x0, y0, x1, y1 = (round(v) for v in t.box)
    with Image.open(t.image) as im:
        w, h = im.size
    return 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h


# ---------------------------------------------------------------- scorers (pure numpy)

def selection_hits(sims: np.ndarray) -> np.ndarray:
    """sims: (trials, options), option 0 true. A win needs the true option strictly above every foil."""
    sims = np.asarray(sims, dtype=np.float64)
    return sims[:, 0] > sims[:, 1:].max(axis=1)


def winoground_hits(s: np.ndarray) -> dict[str, np.ndarray]:
    """s: (examples, 2 captions, 2 images), s[:, c, i] = similarity of caption c and image i."""
    s = np.asarray(s, dtype=np.float64)
    text = (s[:, 0, 0] > s[:, 1, 0]) & (s[:, 1, 1] > s[:, 0, 1])
    image = (s[:, 0, 0] > s[:, 0, 1]) & (s[:, 1, 1] > s[:, 1, 0])
    return {"text": text, "image": image, "group": text & image}


# ---------------------------------------------------------------- one model

def crop_images(trials: list[Trial], folder: Path) -> list[Path]:
    """Each trial's image, cropped to its box (PNG under folder) where it has one."""
    from PIL import Image

    paths = []
    for i, t in enumerate(trials):
        if t.box is None:
            paths.append(t.image)
            continue
        out = folder / f"{i}.png"
        with Image.open(t.image) as im:
            im.convert("RGB").crop(tuple(round(v) for v in t.box)).save(out)
        paths.append(out)
    return paths


def evaluate_compositional(embedder, split: CompoSplit, image_paths: list[Path] | None = None) -> dict:
    """{metric: {category: hits}} as 0/1 lists with their units, for one model."""
    trials = split.trials
    if isinstance(trials[0], Quad):
        img = embedder.images([p for q in trials for p in q.images]).reshape(len(trials), 2, -1)
        txt = embedder.texts([c for q in trials for c in q.captions]).reshape(len(trials), 2, -1)
        hits = winoground_hits(np.einsum("ncd,nid->nci", txt, img))
    else:
        img = embedder.images(image_paths or [t.image for t in trials])
        widths = {len(t.captions) for t in trials}
        sims = np.full((len(trials), max(widths)), -np.inf)
        txt = embedder.texts([c for t in trials for c in t.captions])
        start = 0
        for i, t in enumerate(trials):
            k = len(t.captions)
            sims[i, :k] = txt[start:start + k] @ img[i]
            start += k
        hits = {"accuracy": selection_hits(sims)}
    return {m: [bool(h) for h in v] for m, v in hits.items()}


def summarise(split: CompoSplit, hits: dict[str, list[bool]], chance: dict, n_boot: int = 1000) -> dict:
    """Per metric: the whole benchmark and each category, each with n, a 95 % interval over the
    benchmark's sampling unit, and chance."""
    from comco.probes.stats import accuracy

    units = np.array([t.unit for t in split.trials])
    categories = np.array([t.category for t in split.trials])
    out = {}
    for metric, h in hits.items():
        h = np.asarray(h, dtype=np.float64)
        rows = {"all": accuracy(h, units, chance=chance[metric], n_boot=n_boot)}
        for c in dict.fromkeys(categories.tolist()):
            keep = categories == c
            rows[c] = accuracy(h[keep], units[keep], chance=chance[metric], n_boot=n_boot)
        out[metric] = rows
    return out
