"""Captions from templates that are data (comco/captions.toml, plus user files).

A caption is written for one mention order: the objects in the order the caption
names them. Articles come from the manifest (a/an per name, per colour), never
from a vowel guess, so "an umbrella", "a unicorn" and "an orange cube" are right.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from comco.errors import UserError
from comco.manifest import ObjectSet

DEFAULT_TEMPLATES = Path(__file__).with_name("captions.toml")
LIST_KEYS = {"object", "join", "last_join", "caption", "requires", "default"}
LONG_KEYS = LIST_KEYS | {"kind", "sentences", "sentences_color"}
# The factor templates that name what a pair variant changes (sizes, relations, counts).
FACTOR_KINDS = ("sizes", "relation", "counts")
KIND_KEYS = {"sizes": LIST_KEYS | {"size_words"}, "relation": {"object", "caption", "single", "vertical", "requires",
                                                               "default"},
             "counts": LIST_KEYS | {"several"}}
VERTICAL = ("image", "depth")  # a relation template's up/down: above/below in the image, or in front of/behind
# The project's one sentence splitter (captions, training samplers, natural-benchmark
# analyses): a sentence ends at . ! or ? (optionally closed by a quote or bracket)
# followed by white space, or at a line break (DCI puts its short caption on its own line).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+|\s*\n\s*")


@dataclass(frozen=True)
class Template:
    name: str
    object: str
    join: str
    caption: str
    last_join: str | None = None
    requires: tuple[str, ...] = ()
    kind: str = "list"
    sentences: tuple[str, ...] = ()
    sentences_color: tuple[str, ...] = ()
    # False: written only when --templates names it, or in a pair dataset (the factor templates).
    default: bool = True
    size_words: tuple[str, ...] = ("large", "small")  # sizes: the largest object's word, every other's
    single: str = "{a} {name}"  # relation: the caption of a scene with one object
    vertical: str = "image"  # relation: see VERTICAL
    several: str = "{count} {plural}"  # counts: an object that appears more than once


@dataclass(frozen=True)
class TemplateBook:
    templates: dict[str, Template]
    position_words: dict[str, str]
    size_words: dict[str, list[str]]
    relation_words: dict[str, str] = field(default_factory=dict)
    count_words: dict[str, str] = field(default_factory=dict)

    def select(self, names: list[str] | None, colors: bool, pairs: bool = False,
               layout: str | None = None) -> list[Template]:
        """Templates to write; by default every one whose requirements the data meets (the
        factor templates only in pair datasets)."""
        def fits(t: Template) -> bool:
            return (colors or "color" not in t.requires) and (layout != "equal" or "sizes" not in t.requires)

        if not names:
            return [t for t in self.templates.values() if fits(t) and (t.default or pairs)]
        out = []
        for n in names:
            if n not in self.templates:
                raise UserError(f"unknown caption template '{n}'; known: {', '.join(self.templates)}")
            t = self.templates[n]
            if "color" in t.requires and not colors:
                raise UserError(f"template '{n}' needs colours; add --colors or drop it from --templates")
            if not fits(t):
                raise UserError(f"template '{n}' needs objects of different sizes; use another --layout "
                                f"than equal or drop it from --templates")
            out.append(t)
        return out


# Placeholders each part of a template may hold; any other brace is a mistake that would
# otherwise be left in the captions.
OBJECT_FIELDS = ("name", "a", "color", "material")
SENTENCE_FIELDS = ("name", "a", "color", "material", "size", "position", "position_cap")
PLACEHOLDERS = {"object": OBJECT_FIELDS, "caption": ("objects",), "join": (), "last_join": (),
                "sentences": SENTENCE_FIELDS, "sentences_color": SENTENCE_FIELDS}
# Where a factor kind's keys take other placeholders than PLACEHOLDERS says.
KIND_PLACEHOLDERS = {"sizes": {"object": OBJECT_FIELDS + ("size",)},
                     "relation": {"caption": ("first", "relation", "second"), "single": OBJECT_FIELDS},
                     "counts": {"several": ("count", "plural", "color", "material")}}
KINDS = ("list", "long", *FACTOR_KINDS)
WORD_PARTS = ("position", "size", "relation", "count")


def read_template_file(path: str | Path) -> str:
    """A user's template file as text (its content is part of a dataset's configuration)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"template file {path} not found")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start}); save the templates as UTF-8") from None


def load_templates(extra: str | Path | None = None, text: str | None = None) -> TemplateBook:
    """The built-in templates, plus those of a user file (`extra`); `text` is that file's
    content as a dataset's configuration recorded it (then the file itself is not read)."""
    data = tomllib.loads(DEFAULT_TEMPLATES.read_text(encoding="utf-8"))
    where = str(DEFAULT_TEMPLATES)
    if extra is not None or text is not None:
        where = str(extra) if extra is not None else "--templates-file"
        if text is None:
            text = read_template_file(extra)
        try:
            user = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise UserError(f"{where}: not valid TOML ({exc})") from None
        words = user.pop("words", {})
        _check_words(where, words)
        for name, raw in user.items():
            if not isinstance(raw, dict):
                raise UserError(f"{where}: '{name}' must be a table ([{name}]) of template keys, got {raw!r}")
        data.update(user)
        for k, v in words.items():
            data["words"].setdefault(k, {}).update(v)
    words = data.pop("words")
    templates = {name: _parse_template(name, raw, where) for name, raw in data.items()}
    return TemplateBook(templates, dict(words["position"]), {k: list(v) for k, v in words["size"].items()},
                        dict(words["relation"]), dict(words["count"]))


def _check_words(where: str, words) -> None:
    if not isinstance(words, dict):
        raise UserError(f"{where}: 'words' must be a table ([words.position], [words.size])")
    for part, table in words.items():
        if part not in WORD_PARTS or not isinstance(table, dict):
            raise UserError(f"{where}: key 'words.{part}': use tables "
                            f"{', '.join(f'[words.{p}]' for p in WORD_PARTS)}")
        for key, value in table.items():
            texts = value if part == "size" else [value]
            if not (isinstance(texts, list) and texts
                    and all(isinstance(w, str) and w.strip() and not set(w) & set("{}") for w in texts)):
                what = "a list of size words" if part == "size" else "a text"
                raise UserError(f"{where}: key 'words.{part}.{key}' must be {what} without braces, got {value!r}")


def _check_text(where: str, name: str, key: str, value, kind: str = "list") -> None:
    """A template text: a string whose braces are only the placeholders this key takes."""
    if not isinstance(value, str):
        raise UserError(f"{where}: key '{name}.{key}' must be a text, got {value!r}")
    allowed = KIND_PLACEHOLDERS.get(kind, {}).get(key, PLACEHOLDERS.get(key, OBJECT_FIELDS))
    rest = re.sub(r"\{(" + "|".join(allowed) + r")\}", "", value) if allowed else value
    bad = re.search(r"\{[^{}]*\}?|\}", rest)
    if bad:
        known = f"it takes {', '.join('{' + f + '}' for f in allowed)}" if allowed else "it takes no placeholders"
        raise UserError(f"{where}: key '{name}.{key}' has '{bad.group(0)}' ({known}; braces must pair)")


def _parse_template(name: str, raw: dict, where: str = "templates") -> Template:
    kind = raw.get("kind", "list")
    if kind not in KINDS:
        raise UserError(f"{where}: key '{name}.kind' = {kind!r}: use one of {', '.join(KINDS)}")
    allowed = LONG_KEYS if kind == "long" else KIND_KEYS.get(kind, LIST_KEYS)
    unknown = sorted(set(raw) - allowed - {"kind"})
    if unknown:
        raise UserError(f"{where}: template '{name}': unknown key '{unknown[0]}' "
                        f"(allowed: {', '.join(sorted(allowed))})")
    needed = ("object", "caption") if kind == "relation" else ("object", "join", "caption")
    for key in needed:
        if key not in raw:
            raise UserError(f"{where}: template '{name}': missing '{key}'")
    for key in ("object", "join", "caption", "last_join", "single", "several"):
        if key in raw:
            _check_text(where, name, key, raw[key], kind)
    if kind == "relation":
        if any("{" + f + "}" not in raw["caption"] for f in ("first", "relation", "second")):
            raise UserError(f"{where}: template '{name}': caption must contain {{first}}, {{relation}} and {{second}}")
    elif "{objects}" not in raw["caption"]:
        raise UserError(f"{where}: template '{name}': caption must contain {{objects}}")
    factor = _factor_keys(where, name, raw)
    requires = raw.get("requires", [])
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise UserError(f"{where}: key '{name}.requires' must be a list of field names (e.g. [\"color\"]), "
                        f"got {requires!r}")
    for key in ("sentences", "sentences_color"):
        if key in raw:
            value = raw[key]
            if not isinstance(value, list) or not value:
                raise UserError(f"{where}: key '{name}.{key}' must be a list of sentences, got {value!r}")
            for text in value:
                _check_text(where, name, key, text)
    if kind == "long" and not raw.get("sentences"):
        raise UserError(f"{where}: template '{name}': a long template needs a 'sentences' list")
    return Template(
        name=name, object=raw["object"], join=raw.get("join", ""), caption=raw["caption"],
        last_join=raw.get("last_join"), requires=tuple(requires), kind=kind,
        sentences=tuple(raw.get("sentences", ())),
        sentences_color=tuple(raw.get("sentences_color", raw.get("sentences", ()))), **factor,
    )


def _factor_keys(where: str, name: str, raw: dict) -> dict:
    """The factor templates' own keys (default, size_words, vertical), checked."""
    out = {}
    if "default" in raw:
        if not isinstance(raw["default"], bool):
            raise UserError(f"{where}: key '{name}.default' must be true or false, got {raw['default']!r}")
        out["default"] = raw["default"]
    if "size_words" in raw:
        words = raw["size_words"]
        if not (isinstance(words, list) and len(words) == 2 and all(isinstance(w, str) and w.strip() for w in words)):
            raise UserError(f"{where}: key '{name}.size_words' must be two words (the largest's, the others'), "
                            f"got {words!r}")
        out["size_words"] = tuple(words)
    if "vertical" in raw:
        if raw["vertical"] not in VERTICAL:
            raise UserError(f"{where}: key '{name}.vertical' = {raw['vertical']!r}: use one of {', '.join(VERTICAL)}")
        out["vertical"] = raw["vertical"]
    for key in ("single", "several"):
        if key in raw:
            out[key] = raw[key]
    return out


def size_word(words: list[str], rank: int, n: int) -> str:
    """The size word for size rank `rank` (0 = largest) among n objects."""
    if rank == 0 or len(words) == 1:
        return words[0]
    if rank == n - 1 or len(words) == 2:
        return words[-1]
    if n == 3:
        return words[len(words) // 2]
    return words[1 + round((rank - 1) * (len(words) - 3) / (n - 3))]


def resolve_articles(text: str, object_set: ObjectSet) -> str:
    """Replace each {a} by the article of the word that follows it."""
    parts = text.split("{a}")
    out = [parts[0]]
    for part in parts[1:]:
        word = part.lstrip().split(" ", 1)[0].strip(".,;:")
        out.append((object_set.article_of(word) if word else "a") + part)
    return "".join(out)


def _fill(pattern: str, fields: dict) -> str:
    for k, v in fields.items():
        pattern = pattern.replace("{" + k + "}", "" if v is None else str(v))
    return pattern


def _join(items: list[str], t: Template) -> str:
    if len(items) <= 1:
        return "".join(items)
    last = t.last_join if t.last_join is not None else t.join
    return t.join.join(items[:-1]) + last + items[-1]


def object_fields(obj: dict, book: TemplateBook, layout: str, n: int) -> dict:
    pos = book.position_words.get(obj["slot"], "in the scene")
    words = book.size_words.get(layout, book.size_words["equal"])
    return {
        "name": obj["name"], "color": obj.get("color"), "material": obj.get("material"),
        "size": size_word(words, obj["size_rank"], n), "position": pos,
        "position_cap": pos[:1].upper() + pos[1:],
    }


def object_phrase(t: Template, f: dict, object_set: ObjectSet) -> str:
    """How template t writes one object; it does not depend on the mention order."""
    return resolve_articles(_fill(t.object, {"name": f["name"], "color": f.get("color"),
                                             "material": f.get("material")}), object_set)


def object_sentence(t: Template, f: dict, variant: int, object_set: ObjectSet) -> str:
    pool = t.sentences_color if f.get("color") else t.sentences
    return " ".join(resolve_articles(_fill(pool[variant % len(pool)], f), object_set).split())


def join_caption(t: Template, phrases: list[str]) -> str:
    return " ".join(t.caption.replace("{objects}", _join(phrases, t)).split())


def write_list_caption(t: Template, objs: list[dict], object_set: ObjectSet) -> str:
    return join_caption(t, [object_phrase(t, o, object_set) for o in objs])


class Captioner:
    """Every template's caption for every mention order of planned records.

    Object phrases and sentences do not depend on the order, and a set has few
    objects, colours, slots and sizes: they are written once and remembered (the
    planner captions 10^5 records; the captions are the same as without the memo).
    """

    def __init__(self, templates: list[Template], book: TemplateBook, object_set: ObjectSet):
        self.templates, self.book, self.set = templates, book, object_set
        self._frames = [_frame(t) for t in templates]
        self._phrases: dict[tuple, tuple] = {}  # (name, colour, material) -> per template, + tidy
        self._sentences: list[dict[tuple, str]] = [{} for _ in templates]  # per long template

    def for_record(self, record: dict, sentence_variants: list[int]) -> dict[str, list[str]]:
        objects = record["objects"]
        orders = record["mention_orders"]
        n, layout = len(objects), record["layout"]
        keys = [(o["name"], o.get("color"), o.get("material")) for o in objects]
        rows = [self._phrases.get(key) or self._remember(key) for key in keys]
        tidy = all(row[-1] for row in rows)
        ordered_rows = [[rows[i] for i in order] for order in orders]
        out: dict[str, list[str]] = {}
        for ti, (t, frame) in enumerate(zip(self.templates, self._frames)):
            if t.kind in FACTOR_KINDS:
                out[t.name] = factor_captions(t, record, self.book, self.set)
                continue
            if frame is None or not (tidy and frame[4]):
                # Rare (odd user templates): the plain writer and its white-space clean-up.
                captions = [join_caption(t, [row[ti] for row in ordered]) for ordered in ordered_rows]
            elif n == 1:
                captions = [frame[0] + ordered[0][ti] + frame[3] for ordered in ordered_rows]
            else:
                pre, join, last, post, _ = frame
                captions = [pre + join.join([row[ti] for row in ordered[:-1]]) + last + ordered[-1][ti] + post
                            for ordered in ordered_rows]
            if t.kind == "long":
                memo, plain, coloured = self._sentences[ti], len(t.sentences), len(t.sentences_color)
                # The variant only matters modulo the number of sentences to choose from.
                skeys = [(n, v % (coloured if key[1] else plain), o["slot"], o["size_rank"]) + key
                         for o, key, v in zip(objects, keys, sentence_variants)]
                sentences = [memo.get(k) or self._sentence(ti, o, k, layout) for o, k in zip(objects, skeys)]
                captions = [" ".join([c] + [sentences[i] for i in order]) for c, order in zip(captions, orders)]
            out[t.name] = captions
            if "color" in t.requires and n >= 2:
                fields = [object_fields(o, self.book, layout, n) for o in objects]
                out[t.name + "_swapped"] = [
                    write_list_caption(t, _swap_first_two_colors([fields[i] for i in order]), self.set)
                    for order in orders
                ]
        return out

    def _remember(self, key: tuple) -> tuple:
        """The object's phrase in every template, and whether all of them are tidy."""
        fields = {"name": key[0], "color": key[1], "material": key[2]}
        phrases = [object_phrase(t, fields, self.set) for t in self.templates]
        row = self._phrases[key] = (*phrases, all(p and _tidy(p) for p in phrases))
        return row

    def _sentence(self, ti: int, obj: dict, skey: tuple, layout: str) -> str:
        t, n, variant = self.templates[ti], skey[0], skey[1]
        text = self._sentences[ti][skey] = object_sentence(t, object_fields(obj, self.book, layout, n), variant,
                                                           self.set)
        return text


def factor_captions(t: Template, record: dict, book: TemplateBook, object_set: ObjectSet) -> list[str]:
    """A factor template's caption for each of the record's mention orders."""
    objs, orders = record["objects"], record["mention_orders"]
    if t.kind == "sizes":
        # Size words bound by planned size rank: the largest takes the first word, the rest the second.
        phrases = [_written(t.object, o, object_set, size=t.size_words[0 if o["size_rank"] == 0 else 1])
                   for o in objs]
        return [join_caption(t, [phrases[i] for i in order]) for order in orders]
    if t.kind == "counts":
        return [_counts_caption(t, [objs[i] for i in order], book, object_set) for order in orders]
    if len(objs) == 1:
        return [_written(t.single, objs[0], object_set) for _ in orders]
    return [relation_clause(t, record, order[0], order[1], book, object_set) for order in orders]


def relation_of(t: Template, record: dict, i: int, j: int) -> str:
    """Where object i stands to object j as relation template t sees it ([words.relation]'s key)."""
    from comco.plan.camera import Camera

    cam = Camera.from_record(record["camera"], *record["resolution"])
    objs = record["objects"]
    return relation(_seen(cam, objs[i]), _seen(cam, objs[j]), t.vertical)


def relation_clause(t: Template, record: dict, i: int, j: int, book: TemplateBook, object_set: ObjectSet,
                    key: str | None = None) -> str:
    """Relation template t's caption of objects i and j: "the cube is to the left of the sphere"
    (the relation `key` in place of the true one when given)."""
    word = book.relation_words[key or relation_of(t, record, i, j)]
    objs = record["objects"]
    text = _fill(t.caption, {"first": _written(t.object, objs[i], object_set), "relation": word,
                             "second": _written(t.object, objs[j], object_set)})
    return " ".join(text.split())


def _seen(cam, obj: dict) -> tuple[float, float, float]:
    """(u, v) of the object's slot centre, as image shares, and its foot's depth from the camera.

    Slots, not the jittered boxes: slot centres lie 0.3 of the image apart and the jitter moves a
    box by at most 0.035, so the relation holds in the image; and it is the same whatever the
    object's size (a size swap re-fits an object's box inside the frame and may shift it)."""
    from comco.plan.placement import SLOT_UV

    u, v = SLOT_UV[obj["slot"]]
    return u, v, cam.project(tuple(obj["location"]))[2]


def relation(a: tuple[float, float, float], b: tuple[float, float, float], vertical: str = "image") -> str:
    """Where a stands to b ((u, v, depth) each): left/right unless they lie more apart up and down
    than across (a column of slots: UL over BL), then above/below in the image (vertical "image")
    or in front of/behind by depth from the camera (vertical "depth"). Diagonal neighbours (the
    centre and a corner) are left/right: both are true, and one rule keeps a pair's relations
    changing only with its positions."""
    du, dv = a[0] - b[0], a[1] - b[1]
    if abs(du) >= abs(dv) / 2:
        return "left" if du < 0 else "right"
    if vertical == "depth":
        return "front" if a[2] < b[2] else "behind"
    return "above" if dv < 0 else "below"


_WRITTEN: dict[tuple, str] = {}  # few names, colours and looks: each phrase is written once per process


def _written(pattern: str, obj: dict, object_set: ObjectSet, **extra) -> str:
    key = (pattern, obj["name"], obj.get("color"), obj.get("material"), object_set.hash, *extra.items())
    text = _WRITTEN.get(key)
    if text is None:
        fields = {"name": obj["name"], "color": obj.get("color"), "material": obj.get("material"), **extra}
        text = _WRITTEN[key] = " ".join(resolve_articles(_fill(pattern, fields), object_set).split())
    return text


def _counts_caption(t: Template, ordered: list[dict], book: TemplateBook, object_set: ObjectSet) -> str:
    """"two cubes and a cone": each name once, where it is first mentioned, with its count."""
    groups: dict[str, list[dict]] = {}
    for o in ordered:
        groups.setdefault(o["name"], []).append(o)
    phrases = []
    for name, objs in groups.items():
        if len(objs) == 1:
            phrases.append(_written(t.object, objs[0], object_set))
        else:
            phrases.append(_written(t.several, objs[0], object_set, count=book.count_words[str(len(objs))],
                                    plural=object_set.get(name).plural))
    return join_caption(t, phrases)


def _frame(t: Template) -> tuple[str, str, str, str, bool] | None:
    """(before, join, last join, after, tidy) of a caption with one {objects}; None otherwise.

    Tidy: joining tidy phrases with these pieces gives text that join_caption's
    white-space clean-up would leave as it is, so the clean-up can be skipped.
    """
    parts = t.caption.split("{objects}")
    if len(parts) != 2:
        return None
    pre, post = parts
    last = t.last_join if t.last_join is not None else t.join
    tidy = (_tidy(pre + "x") and _tidy("x" + post) and _tidy("x" + t.join + "x") and _tidy("x" + last + "x"))
    return pre, t.join, last, post, tidy


def _tidy(text: str) -> bool:
    """True if " ".join(text.split()) == text."""
    return " ".join(text.split()) == text


def _swap_first_two_colors(ordered: list[dict]) -> list[dict]:
    swapped = [dict(f) for f in ordered]
    swapped[0]["color"], swapped[1]["color"] = ordered[1]["color"], ordered[0]["color"]
    return swapped


def split_sentences(text: str) -> list[str]:
    """Sentences of a caption in order, stripped (a comco long caption: the summary first)."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s and s.strip()]
