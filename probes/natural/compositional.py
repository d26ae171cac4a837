"""Compositional benchmarks in their released file formats, scored as their authors score them.

Image-to-caption selection (SugarCrepe, ARO, What'sUp, VALSE): one image, its true caption and
one or more foils; a trial is won when the true caption's similarity is strictly above every
foil's (a tie is not a win: the authors' `argmax` over equal scores picks the first option, and a
model that cannot tell the captions apart has not chosen the right one). Chance is 1 / options.

Winoground and EqBen (Thrush et al. 2022; Wang et al. 2023), with s(c, i) the similarity of
caption c and image i:

    text  = s(c0, i0) > s(c1, i0) and s(c1, i1) > s(c0, i1)          chance 1/4
    image = s(c0, i0) > s(c0, i1) and s(c1, i1) > s(c1, i0)          chance 1/4
    group = text and image                                           chance 1/6

SugarCrepe++ (Dumpala et al. 2024), image I, true captions p1, p2, negative n:

    ITT = s(I, p1) > s(I, n) and s(I, p2) > s(I, n)                  chance 1/3
    TOT = s(p1, p2) > s(p1, n) and s(p1, p2) > s(p2, n)              chance 1/3 (text encoder only)

The authors' summaries beside the pooled accuracy: ARO's macro accuracy (the mean of the
per-relation accuracies without ARO's symmetric relations; the mean of the per-attribute-pair
accuracies over pairs with at least 25 items) and What'sUp's pair and set accuracies (both
images of a preposition pair right; all four images of an object pair right).

The file layouts are read in compo_formats.py; docs/guide/eval.md lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from comco.errors import UserError
from comco.probes.natural import compo_formats as fmt
from comco.probes.natural.compo_formats import (  # noqa: F401  (the names callers use)
    ARO_FILES,
    SUGARCREPE_CATEGORIES,
    WHATSUP_FILES,
    CompoSplit,
    Quad,
    Trial,
    Triplet,
)

# The relations ARO's notebook leaves out of VG-Relation's macro accuracy (its `symmetric` list).
ARO_SYMMETRIC = frozenset((
    "adjusting", "attached to", "between", "bigger than", "biting", "boarding", "brushing", "chewing", "cleaning",
    "climbing", "close to", "coming from", "coming out of", "contain", "crossing", "dragging", "draped over",
    "drinking", "drinking from", "driving", "driving down", "driving on", "eating from", "eating in", "enclosing",
    "exiting", "facing", "filled with", "floating in", "floating on", "flying", "flying above", "flying in",
    "flying over", "flying through", "full of", "going down", "going into", "going through", "grazing in",
    "growing in", "growing on", "guiding", "hanging from", "hanging in", "hanging off", "hanging over",
    "higher than", "holding onto", "hugging", "in between", "jumping off", "jumping on", "jumping over", "kept in",
    "larger than", "leading", "leaning over", "leaving", "licking", "longer than", "looking in", "looking into",
    "looking out", "looking over", "looking through", "lying next to", "lying on top of", "making", "mixed with",
    "mounted on", "moving", "on the back of", "on the edge of", "on the front of", "on the other side of",
    "opening", "painted on", "parked at", "parked beside", "parked by", "parked in", "parked in front of",
    "parked near", "parked next to", "perched on", "petting", "piled on", "playing", "playing in", "playing on",
    "playing with", "pouring", "reaching for", "reading", "reflected on", "riding on", "running in", "running on",
    "running through", "seen through", "sitting behind", "sitting beside", "sitting by", "sitting in front of",
    "sitting near", "sitting next to", "sitting under", "skiing down", "skiing on", "sleeping in", "sleeping on",
    "smiling at", "sniffing", "splashing", "sprinkled on", "stacked on", "standing against", "standing around",
    "standing behind", "standing beside", "standing in front of", "standing near", "standing next to",
    "staring at", "stuck in", "surrounding", "swimming in", "swinging", "talking to", "topped with", "touching",
    "traveling down", "traveling on", "tying", "typing on", "underneath", "wading in", "waiting for",
    "walking across", "walking by", "walking down", "walking next to", "walking through", "working in",
    "working on", "worn on", "wrapped around", "wrapped in", "by", "of", "near", "next to", "with", "beside",
    "on the side of", "around"))
ARO_MIN_ATTRIBUTE_ITEMS = 25  # VG-Attribution's evaluate_scores keeps attribute pairs with >= 25 items


def _relations(counts: dict[str, int]) -> list[str]:
    return [c for c in counts if c not in ARO_SYMMETRIC]


def _attribute_pairs(counts: dict[str, int]) -> list[str]:
    return [c for c, n in counts.items() if n >= ARO_MIN_ATTRIBUTE_ITEMS]


@dataclass(frozen=True)
class CompoBenchmark:
    name: str
    load: Callable
    chance: dict  # metric -> chance; None: 1 / the trial's options
    about: str
    unit: str = "items"  # what the bootstrap resamples
    headline: tuple = ()  # the metrics a trade-off table shows (empty: every metric)
    macro: Callable | None = None  # category counts -> the categories the authors' macro averages
    macro_rule: str = ""


WINOGROUND_CHANCE = {"text": 1 / 4, "image": 1 / 4, "group": 1 / 6}
SELECTION = {"accuracy": None}

COMPOSITIONAL = {b.name: b for b in [
    CompoBenchmark("sugarcrepe", fmt.load_sugarcrepe, SELECTION,
                   "SugarCrepe (Hsieh et al. 2023), image vs caption and one hard negative"),
    CompoBenchmark("sugarcrepe-pp", fmt.load_sugarcrepe_pp,
                   {"ITT": 1 / 3, "TOT": 1 / 3, "ITT caption 1": 1 / 2, "ITT caption 2": 1 / 2},
                   "SugarCrepe++ (Dumpala et al. 2024), image vs two true captions and one negative; "
                   "TOT: the three texts alone", headline=("ITT", "TOT")),
    CompoBenchmark("winoground", fmt.load_winoground, WINOGROUND_CHANCE,
                   "Winoground (Thrush et al. 2022), two images and two captions", "examples"),
    CompoBenchmark("eqben", fmt.load_eqben, WINOGROUND_CHANCE,
                   "EqBen (Wang et al. 2023), two slightly different images and two captions, Winoground's scores",
                   "examples"),
    CompoBenchmark("aro-vg-relation", fmt.load_aro("vg-relation"), SELECTION,
                   "ARO VG-Relation (Yuksekgonul et al. 2023), cropped image vs swapped relation",
                   headline=("macro accuracy",), macro=_relations,
                   macro_rule="mean of the per-relation accuracies, ARO's symmetric relations left out"),
    CompoBenchmark("aro-vg-attribution", fmt.load_aro("vg-attribution"), SELECTION,
                   "ARO VG-Attribution (Yuksekgonul et al. 2023), cropped image vs swapped attributes",
                   headline=("macro accuracy",), macro=_attribute_pairs,
                   macro_rule=f"mean of the per-attribute-pair accuracies, pairs with >= {ARO_MIN_ATTRIBUTE_ITEMS} "
                              "items"),
    CompoBenchmark("aro-coco-order", fmt.load_order("coco-order"), SELECTION,
                   "ARO COCO-Order (Yuksekgonul et al. 2023), COCO Karpathy test caption vs four word-order "
                   "perturbations", "images"),
    CompoBenchmark("aro-flickr30k-order", fmt.load_order("flickr30k-order"), SELECTION,
                   "ARO Flickr30k-Order (Yuksekgonul et al. 2023), Flickr30k test caption vs four word-order "
                   "perturbations", "images"),
    CompoBenchmark("whatsup", fmt.load_whatsup, SELECTION,
                   "What'sUp (Kamath et al. 2023), image vs spatial captions (controlled A/B: four; COCO/GQA "
                   "spatial: two)", "images", headline=("accuracy",)),
    CompoBenchmark("valse", fmt.load_valse, SELECTION,
                   "VALSE (Parcalabescu et al. 2022), image vs caption and foil (valid foils), pairwise accuracy"),
]}


def load_compositional(name: str, root: Path, **options) -> CompoSplit:
    """Read one benchmark; `options` reach its loader (`tagger` for ARO's order foils)."""
    if name not in COMPOSITIONAL:
        raise UserError(f"unknown compositional benchmark '{name}'; choose one of: {', '.join(COMPOSITIONAL)}")
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{name}: --root {root} is not a folder")
    try:
        split = COMPOSITIONAL[name].load(root, **options)
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise UserError(f"{name}: an entry under {root} lacks a field or has a wrong type ({type(err).__name__}: "
                        f"{err}); give the files as the benchmark releases them (docs/guide/eval.md)") from None
    split = drop_unreadable(split)
    if not split.trials:
        left = ", ".join(f"{n} {why}" for why, n in split.skipped.items()) or "no entries in its format"
        raise UserError(f"{name}: nothing to score under {root} ({left}); see docs/guide/eval.md for the layout")
    return split


def _problem(path: Path) -> str | None:
    if path.suffix.lower() == ".npy":  # EqBen's YouCook2 frames: BGR arrays
        try:
            a = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as err:
            return f"{type(err).__name__}: {err}"
        return None if a.ndim == 3 and a.shape[-1] == 3 else f"array of shape {a.shape}, not H x W x 3"
    from comco.probes.natural.images import header_problem

    return header_problem(path)


def drop_unreadable(split: CompoSplit) -> CompoSplit:
    """Leave out (and count) trials with an image that is not an image at all, or a box outside it."""
    from PIL import Image

    paths = {p for t in split.trials for p in t.images}
    bad = {p for p in paths if _problem(p)}
    kept = []
    for t in split.trials:
        if bad & set(t.images):
            split.skip("unreadable_image")
        elif t.box is not None and not _box_fits(t, Image):
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


def crop_images(trials: list, folder: Path) -> list[Path]:
    """Every trial's images in order (a Quad's two), cropped to the trial's box where it has one and
    EqBen's .npy frames written as PNG (BGR read as EqBen's loader reads it), under folder."""
    from PIL import Image

    paths = []
    for i, t in enumerate(trials):
        for k, p in enumerate(t.images):
            if t.box is not None:
                out = folder / f"{i}-{k}.png"
                with Image.open(p) as im:
                    im.convert("RGB").crop(tuple(round(v) for v in t.box)).save(out)
            elif p.suffix.lower() == ".npy":
                out = folder / f"{i}-{k}.png"
                Image.fromarray(np.ascontiguousarray(np.load(p)[:, :, [2, 1, 0]]).astype(np.uint8), "RGB").save(out)
            else:
                out = p
            paths.append(out)
    return paths


def needs_preparing(trials: list) -> bool:
    return any(t.box is not None or any(p.suffix.lower() == ".npy" for p in t.images) for t in trials)


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


def triplet_hits(image_text: np.ndarray, text_text: np.ndarray) -> dict[str, np.ndarray]:
    """SugarCrepe++: image_text (n, 3) = s(I, p1), s(I, p2), s(I, neg); text_text (n, 3) =
    s(p1, p2), s(p1, neg), s(p2, neg)."""
    it, tt = np.asarray(image_text, dtype=np.float64), np.asarray(text_text, dtype=np.float64)
    p1, p2 = it[:, 0] > it[:, 2], it[:, 1] > it[:, 2]
    return {"ITT": p1 & p2, "TOT": (tt[:, 0] > tt[:, 1]) & (tt[:, 0] > tt[:, 2]),
            "ITT caption 1": p1, "ITT caption 2": p2}


def whatsup_sets(trials: list, hits) -> dict[str, dict]:
    """What'sUp's pair and set accuracies from the per-image hits of its controlled subsets:
    {"pair": {"hits", "units", "categories"}, "set": {...}}; a pair (set) counts only when all its
    images are in the split."""
    members: dict[tuple[str, str], dict[str, bool]] = {}
    for t, h in zip(trials, hits):
        if getattr(t, "group", None) and t.group[0] in fmt.WHATSUP_PAIRS:
            members.setdefault(t.group[:2], {})[t.group[2]] = bool(h)
    out = {m: {"hits": [], "units": [], "categories": []} for m in ("pair", "set")}
    for (subset, objects), got in members.items():
        pairs = fmt.WHATSUP_PAIRS[subset]
        for a, b in pairs:
            if a in got and b in got:
                for key, value in (("hits", got[a] and got[b]), ("units", f"{subset}/{objects}"),
                                   ("categories", subset)):
                    out["pair"][key].append(value)
        if all(p in got for pair in pairs for p in pair):
            for key, value in (("hits", all(got[p] for pair in pairs for p in pair)),
                               ("units", f"{subset}/{objects}"), ("categories", subset)):
                out["set"][key].append(value)
    return out


# ---------------------------------------------------------------- one model

def evaluate_compositional(embedder, split: CompoSplit, image_paths: list[Path] | None = None) -> dict:
    """{metric: hits} as 0/1 lists, one per trial, for one model. `image_paths` replaces the trials'
    images in order (crop_images' list)."""
    trials = split.trials
    paths = image_paths or [p for t in trials for p in t.images]
    if isinstance(trials[0], Quad):
        img = embedder.images(paths).reshape(len(trials), 2, -1)
        txt = embedder.texts([c for q in trials for c in q.captions]).reshape(len(trials), 2, -1)
        hits = winoground_hits(np.einsum("ncd,nid->nci", txt, img))
    elif isinstance(trials[0], Triplet):
        img = embedder.images(paths)
        txt = embedder.texts([c for t in trials for c in t.captions]).reshape(len(trials), 3, -1)
        it = np.einsum("nkd,nd->nk", txt, img)
        tt = np.stack([(txt[:, 0] * txt[:, 1]).sum(-1), (txt[:, 0] * txt[:, 2]).sum(-1),
                       (txt[:, 1] * txt[:, 2]).sum(-1)], axis=1)
        hits = triplet_hits(it, tt)
    else:
        img = embedder.images(paths)
        sims = np.full((len(trials), max(len(t.captions) for t in trials)), -np.inf)
        txt = embedder.texts([c for t in trials for c in t.captions])
        start = 0
        for i, t in enumerate(trials):
            k = len(t.captions)
            sims[i, :k] = txt[start:start + k] @ img[i]
            start += k
        hits = {"accuracy": selection_hits(sims)}
    return {m: [bool(h) for h in v] for m, v in hits.items()}


def _rows(h, units, categories, chances, n_boot: int) -> dict:
    """The pooled row ("all") and one per category, each with its n, interval and mean chance."""
    from comco.probes.stats import accuracy

    h, units, categories, chances = (np.asarray(a) for a in (h, units, categories, chances))
    rows = {"all": accuracy(h.astype(np.float64), units, chance=float(chances.mean()), n_boot=n_boot)}
    for c in dict.fromkeys(categories.tolist()):
        if c != "all":
            keep = categories == c
            rows[c] = accuracy(h[keep].astype(np.float64), units[keep], chance=float(chances[keep].mean()),
                               n_boot=n_boot)
    return rows


def summarise(split: CompoSplit, hits: dict[str, list[bool]], n_boot: int = 1000) -> dict:
    """Per metric: the whole benchmark and each category, each with n, a 95 % interval over the
    benchmark's sampling unit, and chance; then the authors' own summaries (ARO's macro accuracy,
    What'sUp's pair and set accuracies) where the benchmark has them."""
    from comco.probes.stats import macro_accuracy

    bench = COMPOSITIONAL[split.benchmark]
    units = [t.unit for t in split.trials]
    categories = [t.category for t in split.trials]
    out = {}
    for metric, h in hits.items():
        fixed = bench.chance.get(metric)
        chances = [fixed if fixed is not None else 1 / len(t.captions) for t in split.trials]
        out[metric] = _rows(h, units, categories, chances, n_boot)
    if bench.macro is not None:
        counts = {c: categories.count(c) for c in dict.fromkeys(categories)}
        kept = set(bench.macro(counts))
        keep = [c in kept for c in categories]
        h = np.asarray(hits["accuracy"], dtype=np.float64)[keep]
        stat = macro_accuracy(h, np.asarray(categories)[keep], chance=1 / 2, n_boot=n_boot)
        out["macro accuracy"] = {"all": {**stat, "rule": bench.macro_rule,
                                         "left_out_categories": len(counts) - len(kept)}}
    if split.benchmark == "whatsup":
        for name, got in whatsup_sets(split.trials, hits["accuracy"]).items():
            if got["hits"]:
                chance = 1 / 4 ** (2 if name == "pair" else 4)
                out[f"{name} accuracy"] = _rows(got["hits"], got["units"], got["categories"],
                                                [chance] * len(got["hits"]), n_boot)
    return out


def scoring_lines(name: str) -> list[str]:
    """How a benchmark's page reads its numbers: the scores' definitions, the authors' summaries
    and the named deviations."""
    bench = COMPOSITIONAL[name]
    if set(bench.chance) == set(WINOGROUND_CHANCE):
        lines = ["text: each image's own caption above the other caption; image: each caption's own image above "
                 "the other image; group: both (Thrush et al.); chance 25 %, 25 %, 16.7 %"]
    elif name == "sugarcrepe-pp":
        lines = ["ITT: both true captions above the negative for the image; TOT: the two true captions closer to "
                 "each other than either is to the negative (text encoder alone); ITT caption 1 / 2: one true "
                 "caption against the negative; chance 33.3 %, 33.3 %, 50 %"]
    else:
        lines = ["accuracy: % of items whose true caption scores above every foil; chance 1 / options (the mean "
                 "over items where their counts differ)"]
    lines.append("a win needs a strict >: a tie is not a win (the authors' argmax gives a tie to the option listed "
                 "first); a foil identical to the true caption is left out and counted")
    if bench.macro is not None:
        lines.append(f"macro accuracy (ARO's headline): {bench.macro_rule}; its interval resamples items within "
                     "each category")
    if name == "whatsup":
        lines.append("pair accuracy: both images of a preposition pair (left/right, on/under, in-front/behind) of one "
                     "object pair right, chance 1/16; set accuracy: all four, chance 1/256 (Kamath et al.); "
                     "resampled by object pair")
    if name.endswith("-order"):
        lines.append("foils built as ARO's loader builds them (spaCy en_core_web_sm tags); deviations: spaCy's "
                     "tokens for the trigram foils (ARO: NLTK's word_tokenize) and one seeded generator per caption "
                     "(ARO: the global random state)")
    return lines
