"""A caption corpus with instance annotations in COCO's format, and which annotated
objects each caption mentions, in mention order.

COCO ships `captions_<split>.json` (images + one annotation per caption) and
`instances_<split>.json` (images + one annotation per object instance with its mask
`area`, + categories). Any corpus a user has segmented into that format (a LAION sample
with detector masks, say) reads the same way. A category is mentioned when its name, its
plural or a synonym from the table (`coco_synonyms.toml`, editable) appears as a whole
word; its size in an image is the summed mask area of its instances there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from comco.errors import UserError
from comco.io import MAX_SMALL_BYTES, parse_json, parse_toml, read_bounded
from comco.probes.words import mention_sequence

DEFAULT_SYNONYMS = "coco_synonyms.toml"
# The longest caption read: COCO's are under 300 characters, DCI's long ones about 6,000; the
# whole-word matching of every category's spellings grows faster than the text (16,000
# characters take half a second, an 8 MB one hours).
MAX_CAPTION_CHARS = 20_000


@dataclass(frozen=True)
class Caption:
    image_id: int | str
    caption_id: int | str
    text: str
    mentioned: tuple[str, ...]  # annotated categories of the image, first-mentioned first
    absent: tuple[str, ...]  # categories named that the image has no instance of
    areas: tuple[float, ...]  # mask area of each mentioned category, in the order of `mentioned`


def plural(word: str) -> str:
    """The regular English plural of a word or of a phrase's last word."""
    head, _, last = word.rpartition(" ")
    if last.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    elif len(last) > 1 and last.endswith("y") and last[-2] not in "aeiou":
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}" if head else last


def _read(path: Path, what: str) -> dict:
    if not path.is_file():
        raise UserError(f"{what} {path} does not exist; pass COCO's {what.strip('-')} JSON file")
    raw = read_bounded(path, what)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{what} {path} is not UTF-8 (byte {exc.start}); COCO files are UTF-8: "
                        f"convert it, e.g. iconv -f latin1 -t utf-8") from None
    data = parse_json(raw, f"{what} {path}")
    if not isinstance(data, dict) or not isinstance(data.get("annotations"), list):
        raise UserError(f"{what} {path} is not a COCO annotation file (no 'annotations' list)")
    return data


def _field(ann, key: str, kind, path: Path, index: int):
    value = ann.get(key) if isinstance(ann, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise UserError(f"{path}: annotation {index} has no valid '{key}' "
                        f"({getattr(kind, '__name__', 'a value of the right type')} expected)")
    return value


def load_synonyms(path: Path | None, categories: set[str]) -> dict[str, list[str]]:
    """Category -> every spelling that names it (plurals added). A user's table must name
    only categories of the corpus and give each spelling to one category."""
    if path is None:
        text, where = resources.files("comco.probes.natural").joinpath(DEFAULT_SYNONYMS).read_text("utf-8"), None
    else:
        if not Path(path).is_file():
            raise UserError(f"--synonyms {path} does not exist")
        text, where = read_bounded(path, "--synonyms", MAX_SMALL_BYTES).decode("utf-8", errors="replace"), path
    table = parse_toml(text, f"--synonyms {where}").get("synonyms", {})
    if not isinstance(table, dict) or not all(isinstance(v, list) and all(isinstance(w, str) and w.strip() for w in v)
                                              for v in table.values()):
        raise UserError(f"--synonyms {where}: [synonyms] must map each category to a list of words")
    if where is not None and (unknown := sorted(set(table) - categories)):
        raise UserError(f"--synonyms {where}: {', '.join(map(repr, unknown[:5]))} "
                        f"{'is not a category' if len(unknown) == 1 else 'are not categories'} of the instances "
                        f"file (names are matched exactly, as the file's 'categories' spell them)")
    forms: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    for name in sorted(categories):
        words = [name.lower(), *(w.strip().lower() for w in table.get(name, []))]
        spellings = list(dict.fromkeys(s for w in words for s in (w, plural(w))))
        for s in spellings:
            if owner.setdefault(s, name) != name:
                raise UserError(f"--synonyms {where or DEFAULT_SYNONYMS}: {s!r} names both {owner[s]!r} and "
                                f"{name!r}; a word may name one category")
        forms[name] = spellings[1:]
    return forms


def load_corpus(captions_path: Path, instances_path: Path, synonyms: Path | None = None) -> tuple[list[Caption], dict]:
    """Every caption of an image with instance annotations, with what it mentions, and counts
    of what was left aside ({"images_without_instances": .., "captions_without_image": ..})."""
    caps = _read(Path(captions_path), "--captions")
    inst = _read(Path(instances_path), "--instances")
    if not isinstance(inst.get("categories"), list) or not inst["categories"]:
        raise UserError(f"--instances {instances_path} has no 'categories': it is not an instances file "
                        f"(COCO's instances_<split>.json holds them)")
    names = {}
    for i, c in enumerate(inst["categories"]):
        cid = _field(c, "id", (int, str), instances_path, i)
        if cid in names:
            raise UserError(f"--instances {instances_path}: categories {i} and an earlier one share the id {cid!r}; "
                            f"each category needs its own id (the file is damaged or was edited)")
        names[cid] = _field(c, "name", str, instances_path, i)
    areas: dict = {}
    for i, ann in enumerate(inst["annotations"]):
        cat = _field(ann, "category_id", (int, str), instances_path, i)
        if cat not in names:
            raise UserError(f"--instances {instances_path}: annotation {i} has category_id {cat!r}, "
                            f"which 'categories' does not list")
        area = _field(ann, "area", (int, float), instances_path, i)
        if not math.isfinite(area) or area <= 0:
            raise UserError(f"--instances {instances_path}: annotation {i} has area {area!r}; a mask's area is a "
                            f"positive number of pixels (the file is damaged or was edited)")
        image = areas.setdefault(_field(ann, "image_id", (int, str), instances_path, i), {})
        image[names[cat]] = image.get(names[cat], 0.0) + float(area)
    if not areas:
        raise UserError(f"--instances {instances_path} holds no instance annotations; the sizes come from them")
    forms = load_synonyms(synonyms, set(names.values()))
    every = sorted(names.values())
    out, no_image = [], 0
    for i, ann in enumerate(caps["annotations"]):
        image_id = _field(ann, "image_id", (int, str), captions_path, i)
        text = _field(ann, "caption", str, captions_path, i)
        if len(text) > MAX_CAPTION_CHARS:
            raise UserError(f"--captions {captions_path}: annotation {i}'s caption is {len(text)} characters long, "
                            f"more than the {MAX_CAPTION_CHARS} comco reads (the longest long-caption corpora "
                            f"have about 6,000): is it the captions file?")
        present = areas.get(image_id)
        if present is None:
            no_image += 1
            continue
        # every category competes for spans, so an absent "hot dog" still hides the "dog" inside it
        seq = mention_sequence(text, every, forms)
        mentioned = tuple(n for n in seq if n in present)
        out.append(Caption(image_id, ann.get("id", i), text, mentioned, tuple(n for n in seq if n not in present),
                           tuple(present[n] for n in mentioned)))
    captioned = {c.image_id for c in out}
    return out, {"captions_without_instances": no_image, "images_with_instances": len(areas),
                 "images_captioned": len(captioned), "categories": len(names)}
