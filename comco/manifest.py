"""Object-set manifests: one TOML file per set (`assets/<set>/objects.toml`).

A manifest makes an object set data: names and their grammar (plural, article,
synonyms), real-world dimensions, size class, colours, and where the geometry
comes from (a procedural builder or a mesh file inside the set's folder). The
loader validates strictly (unknown keys are errors, so typos never pass
silently) and hashes the parsed content plus every mesh file, so a dataset
records exactly which objects it was made from.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

import comco.assets
from comco.errors import UserError
from comco.io import write_text

MANIFEST_NAME = "objects.toml"
# The built-in sets ship as the package comco.assets (assets/ in the source tree).
ASSETS_DIR = Path(comco.assets.__file__).resolve().parent
MESH_SUFFIXES = (".glb", ".gltf", ".obj", ".fbx", ".stl", ".ply", ".blend")

# Size classes by longest real-world side, in metres: small < backpack <= medium
# <= car < large. A backpack is about 0.5 m, a car about 4.6 m.
BACKPACK_M = 0.5
CAR_M = 4.6
SIZE_CLASSES = ("small", "medium", "large")

SET_KEYS = {"name", "description", "default_color", "materials", "palette", "color_articles"}
OBJECT_KEYS = {
    "name", "plural", "article", "synonyms", "dimensions_m", "size_class",
    "colorable", "colors", "source", "yaw_range", "rotation_fix", "material", "fill",
}
OBJECT_REQUIRED = {"name", "plural", "article", "dimensions_m", "size_class", "colorable", "source"}


def size_class_for(longest_m: float) -> str:
    if longest_m < BACKPACK_M:
        return "small"
    if longest_m <= CAR_M:
        return "medium"
    return "large"


@dataclass(frozen=True)
class ObjectSpec:
    """One object of a set, as its manifest describes it."""

    name: str
    plural: str
    article: str
    dimensions_m: tuple[float, float, float]  # width (x), depth (y), height (z)
    size_class: str
    colorable: bool
    source: str  # "builder:NAME" or "mesh:RELATIVE/PATH"
    synonyms: tuple[str, ...] = ()
    colors: tuple[str, ...] = ()  # allowed palette colours, or the fixed natural ones
    yaw_range: float = 30.0  # degrees either side of the canonical front
    rotation_fix: tuple[float, float, float] = (0.0, 0.0, 0.0)  # degrees, for meshes
    material: str | None = None
    # Share of its bounding box's outline the object covers on screen (measured by
    # `comco objects calibrate`); None: the planner's typical value.
    fill: float | None = None

    @property
    def longest_m(self) -> float:
        return max(self.dimensions_m)

    @property
    def footprint_m(self) -> tuple[float, float]:
        return self.dimensions_m[0], self.dimensions_m[1]

    @property
    def source_kind(self) -> str:
        return self.source.split(":", 1)[0]

    @property
    def source_ref(self) -> str:
        return self.source.split(":", 1)[1]

    def normalized_dimensions(self, scale: float) -> tuple[float, float, float]:
        """Dimensions once the longest side is scaled to `scale` scene units."""
        k = scale / self.longest_m
        return tuple(d * k for d in self.dimensions_m)  # type: ignore[return-value]

    def allowed_colors(self, palette: dict[str, tuple[float, float, float]]) -> tuple[str, ...]:
        if self.colorable:
            return self.colors or tuple(palette)
        return self.colors


@dataclass(frozen=True)
class ObjectSet:
    name: str
    root: Path
    description: str
    objects: tuple[ObjectSpec, ...]
    palette: dict[str, tuple[float, float, float]]
    materials: tuple[str, ...]
    default_color: str
    color_articles: dict[str, str] = field(default_factory=dict)
    hash: str = ""

    @cached_property
    def by_name(self) -> dict[str, ObjectSpec]:
        return {o.name: o for o in self.objects}

    @property
    def names(self) -> list[str]:
        return [o.name for o in self.objects]

    def get(self, name: str) -> ObjectSpec:
        try:
            return self.by_name[name]
        except KeyError:
            import difflib

            close = difflib.get_close_matches(name, self.names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; see `comco objects list {self.name}`"
            raise UserError(f"object set '{self.name}' has no object '{name}'{hint}") from None

    def article_of(self, word: str) -> str:
        """The indefinite article for a word that starts a noun phrase."""
        if word in self.by_name:
            return self.by_name[word].article
        if word in self.color_articles:
            return self.color_articles[word]
        return "an" if word[:1].lower() in "aeiou" else "a"


def builtin_sets() -> list[str]:
    return sorted(p.name for p in ASSETS_DIR.iterdir() if (p / MANIFEST_NAME).is_file())


def resolve_set_dir(name_or_path: str | Path) -> Path:
    """A built-in set name (`simco`, `comco`) or a folder holding objects.toml."""
    text = str(name_or_path)
    builtin = ASSETS_DIR / text
    if "/" not in text and "\\" not in text and (builtin / MANIFEST_NAME).is_file():
        return builtin
    path = Path(text).expanduser()
    if path.is_file() and path.name == MANIFEST_NAME:
        path = path.parent
    if (path / MANIFEST_NAME).is_file():
        return path.resolve()
    if path.is_dir():
        raise UserError(f"{path} has no {MANIFEST_NAME}; an object-set folder needs one "
                        "(see README 'Add your own object set')")
    if "/" not in text and "\\" not in text:
        named = sets_named(text, Path.cwd())
        if len(named) == 1:
            return named[0]
        if named:
            raise UserError(f"object set '{text}' is the name of {len(named)} sets here "
                            f"({', '.join(str(n) for n in named)}); give its folder")
    raise UserError(f"unknown object set '{text}': use one of {', '.join(builtin_sets())}, a folder with "
                    f"{MANIFEST_NAME}, or the `name` of a set whose folder is in the current folder")


def sets_named(name: str, where: Path) -> list[Path]:
    """The set folders directly inside `where` whose manifest's `name` is `name` (a dataset
    records that name, so `--object-set kitchen` finds `my-set/` with `name = "kitchen"`)."""
    found = []
    try:
        folders = sorted(p for p in where.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []
    for folder in folders:
        manifest = folder / MANIFEST_NAME
        try:
            if manifest.is_file() and tomllib.loads(manifest.read_text(encoding="utf-8")).get("name") == name:
                found.append(folder.resolve())
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue  # a broken manifest is not the one asked for; loading it by folder says why
    return found


def load_object_set(name_or_path: str | Path) -> ObjectSet:
    root = resolve_set_dir(name_or_path)
    manifest = root / MANIFEST_NAME
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{manifest}: not valid TOML ({exc})") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{manifest}: not UTF-8 text (byte {exc.start}); save the manifest as UTF-8") from None
    return parse_manifest(data, root, manifest)


def _check_keys(where: str, table: dict, allowed: set[str], required: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise UserError(f"{where}: unknown key '{unknown[0]}' (allowed: {', '.join(sorted(allowed))})")
    missing = sorted(required - set(table))
    if missing:
        raise UserError(f"{where}: missing field '{missing[0]}'")


# A scene's id (and so its image and mask file name) is its index in six or more digits.
SCENE_ID = re.compile(r"\d{6,}")


def check_file_name(where: str, what: str, name) -> str:
    """Names that become file names (singles' images and masks, cached meshes) must be one
    safe component: no separator, no '..', not hidden, no control characters, and never a
    scene id (a single named 000000 would overwrite scene 000000's mask)."""
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"{where}: {what} must be a non-empty text, got {name!r}")
    # Braces too: names are filled into caption templates, where {color} would be a placeholder.
    bad = next((c for c in name if c in "/\\{}" or unicodedata.category(c)[0] == "C"), None)
    if bad is not None:
        raise UserError(f"{where}: {what} {name!r} holds {bad!r}; names become file names: use letters, digits, "
                        f"spaces, '-' or '_'")
    if name.startswith(".") or ".." in name or name != name.strip():
        raise UserError(f"{where}: {what} {name!r} cannot start with '.', hold '..' or start or end with a space "
                        f"(names become file names)")
    if SCENE_ID.fullmatch(name):
        raise UserError(f"{where}: {what} {name!r} looks like a scene id; give it a word (names become file names)")
    return name


def _safe_relative(where: str, ref: str, root: Path) -> Path:
    pure = PurePosixPath(ref.replace("\\", "/"))
    if pure.is_absolute() or ref.startswith(("/", "\\")) or (len(ref) > 1 and ref[1] == ":"):
        raise UserError(f"{where}: mesh path '{ref}' is absolute; give a path inside the set's folder")
    if ".." in pure.parts:
        raise UserError(f"{where}: mesh path '{ref}' leaves the set's folder; keep meshes inside it")
    path = root / Path(*pure.parts)
    # A symbolic link (the file or a folder on the way) may point anywhere: refuse it like '..'.
    if path.exists() and not path.resolve().is_relative_to(root.resolve()):
        raise UserError(f"{where}: mesh path '{ref}' leaves the set's folder (through a symbolic link); "
                        f"copy the mesh into it")
    return path


def _text(where: str, key: str, value, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise UserError(f"{where}: key '{key}' must be a{'' if empty else ' non-empty'} text, got {value!r}")
    return value


def _texts(where: str, key: str, value) -> tuple[str, ...]:
    # A bare string would be read letter by letter ("block" -> b, l, o, c, k).
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise UserError(f"{where}: key '{key}' must be a list of texts, e.g. [\"a\", \"b\"], got {value!r}")
    return tuple(value)


def _number(where: str, key: str, value, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise UserError(f"{where}: key '{key}' must be a number in {lo:g}..{hi:g}, got {value!r}")
    return float(value)


# The share of its box's outline an object may cover (the planner's fill; calibrate measures it).
FILL_RANGE = (0.05, 1.0)


class Problems:
    """Every problem of a manifest, collected: each check runs on its own (a failed one gives its
    default), so `objects validate` and every command name all of them in one run, not the first."""

    def __init__(self):
        self.found: list[str] = []

    def check(self, fn, *args, default=None):
        """fn(*args), or `default` when it raises a UserError (whose line is kept)."""
        try:
            return fn(*args)
        except UserError as exc:
            self.found.append(str(exc))
            return default

    def raise_all(self, where: str) -> None:
        if len(self.found) == 1:
            raise UserError(self.found[0])
        if self.found:
            raise UserError(f"{where}: {len(self.found)} problems: " + "; ".join(self.found))


def _parse_object(where: str, raw, palette: dict, root: Path, problems: Problems | None = None) -> ObjectSpec | None:
    """One [[objects]] table as an ObjectSpec; each of its problems goes to `problems` (None: raise the first)."""
    own = Problems()
    spec = _object_checks(where, raw, palette, root, own)
    if problems is None:
        own.raise_all(where)
    else:
        problems.found += own.found
    return spec


def _object_checks(where: str, raw, palette: dict, root: Path, p: Problems) -> ObjectSpec | None:
    if not isinstance(raw, dict):
        p.found.append(f"{where}: each [[objects]] entry must be a table, got {raw!r}")
        return None
    p.check(_check_keys, where, raw, OBJECT_KEYS, set(), default=None)  # unknown keys
    missing = sorted(OBJECT_REQUIRED - set(raw))
    for key in missing:
        p.found.append(f"{where}: missing field '{key}'")
    if "name" in missing:
        return None
    name = p.check(check_file_name, where, "object name", raw["name"])

    def lower():
        if name != name.lower():
            raise UserError(f"{where}: name must be a non-empty lower-case word, got {name!r}")

    if name is not None:
        p.check(lower)
        where = f"{where} ({name})"

    def article():
        if raw["article"] not in ("a", "an"):
            raise UserError(f"{where}: article must be 'a' or 'an', got {raw['article']!r}")

    def words():
        plural = _text(where, "plural", raw["plural"])
        synonyms = _texts(where, "synonyms", raw.get("synonyms", []))
        if any(set(w) & set("{}") for w in (plural, *synonyms)):
            raise UserError(f"{where}: plural and synonyms cannot hold braces (captions are filled from templates)")
        return plural, synonyms

    def sizes():
        dims = raw["dimensions_m"]
        if (not isinstance(dims, list) or len(dims) != 3
                or not all(isinstance(d, (int, float)) and not isinstance(d, bool) and d > 0 for d in dims)):
            raise UserError(f"{where}: dimensions_m must be three positive numbers [width, depth, height] in metres")
        dims = tuple(float(d) for d in dims)
        if max(dims) > 500 or max(dims) < 0.005:
            raise UserError(f"{where}: dimensions_m {list(dims)} is not a plausible real-world size in metres")
        size_class = raw["size_class"]
        expected = size_class_for(max(dims))
        if size_class not in SIZE_CLASSES:
            raise UserError(f"{where}: size_class must be one of {', '.join(SIZE_CLASSES)}")
        if size_class != expected:
            raise UserError(f"{where}: size_class '{size_class}' disagrees with its longest side "
                            f"{max(dims):g} m (expected '{expected}')")
        return dims, size_class

    def paint():
        colorable = raw["colorable"]
        if not isinstance(colorable, bool):  # "no" would be read as true
            raise UserError(f"{where}: key 'colorable' must be true or false, got {colorable!r}")
        return colorable

    def origin():
        source = raw["source"]
        kind, _, ref = source.partition(":") if isinstance(source, str) else ("", "", "")
        if kind not in ("builder", "mesh") or not ref:
            raise UserError(f"{where}: source must be 'builder:NAME' or 'mesh:FILE', got {source!r}")
        if kind == "mesh":
            path = _safe_relative(where, ref, root)
            if path.suffix.lower() not in MESH_SUFFIXES:
                raise UserError(f"{where}: mesh '{ref}' has an unsupported type; use one of {' '.join(MESH_SUFFIXES)}")
            if not path.is_file():
                raise UserError(f"{where}: mesh file '{ref}' not found in {root}")
        return source, kind

    def colours(colorable, kind):
        colors = _texts(where, "colors", raw.get("colors", []))
        # A mesh is painted in the colour its captions name, so even its own (fixed) colour needs
        # the palette's RGB; a builder's fixed colours are built in.
        unknown_colors = [c for c in colors if (colorable or kind == "mesh") and c not in palette]
        if unknown_colors:
            own = "" if colorable else (" (a mesh is painted in the colour its captions name: add "
                                        f"{unknown_colors[0]} = [r, g, b] to [palette], or drop the colour)")
            raise UserError(f"{where}: colour '{unknown_colors[0]}' is not in the set's palette{own}")
        for c in colors:
            check_file_name(where, "colour", c)  # a single's id is NAME-COLOUR
        return colors

    def rotation():
        rotation_fix = raw.get("rotation_fix", [0.0, 0.0, 0.0])
        if (not isinstance(rotation_fix, list) or len(rotation_fix) != 3
                or not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in rotation_fix)):
            raise UserError(f"{where}: rotation_fix must be three angles in degrees")
        return tuple(float(a) for a in rotation_fix)

    def material():
        value = raw.get("material")
        if value is not None:
            _text(where, "material", value)
        return value

    def fill():
        value = raw.get("fill")
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not FILL_RANGE[0] <= value <= FILL_RANGE[1]):
            raise UserError(f"{where}: fill must be a share between 0.05 and 1 "
                            f"(`comco objects calibrate` measures it), got {value!r}")
        return None if value is None else float(value)

    if missing:  # the checks below read the required fields
        return None
    p.check(article)
    plural, synonyms = p.check(words, default=(None, ()))
    dims, size_class = p.check(sizes, default=(None, None))
    colorable = p.check(paint, default=False)
    source, kind = p.check(origin, default=(None, ""))
    colors = p.check(colours, colorable, kind, default=())
    yaw_range = p.check(_number, where, "yaw_range", raw.get("yaw_range", 30.0), 0.0, 180.0)
    rotation_fix = p.check(rotation)
    mat = p.check(material)
    share = p.check(fill)
    if p.found:
        return None
    return ObjectSpec(
        name=name, plural=plural, article=raw["article"], dimensions_m=dims,
        size_class=size_class, colorable=colorable, source=source,
        synonyms=synonyms, colors=colors, yaw_range=yaw_range,
        rotation_fix=rotation_fix,  # type: ignore[arg-type]
        material=mat, fill=share,
    )


def _palette(where: str, raw) -> dict[str, tuple[float, float, float]]:
    if not isinstance(raw, dict):
        raise UserError(f"{where}: key 'palette' must be a table of colour = [r, g, b]")
    palette = {}
    for cname, rgb in raw.items():
        check_file_name(where, "palette colour", cname)
        if (not isinstance(rgb, list) or len(rgb) != 3
                or not all(isinstance(c, (int, float)) and not isinstance(c, bool) and 0.0 <= c <= 1.0 for c in rgb)):
            raise UserError(f"{where}: palette colour '{cname}' must be three numbers in 0..1, got {rgb!r}")
        palette[cname] = tuple(float(c) for c in rgb)
    return palette


def parse_manifest(data: dict, root: Path, manifest: Path | None = None) -> ObjectSet:
    """The object set a manifest describes. Every problem is found in one pass (Problems): one
    is refused by its own line, several by one line that names them all."""
    where = str(manifest or root / MANIFEST_NAME)
    p = Problems()
    p.check(_check_keys, where, {k: v for k, v in data.items() if k != "objects"}, SET_KEYS, {"name"})
    raw_objects = data.get("objects")
    if not raw_objects:
        p.found.append(f"{where}: no [[objects]] entries")
    elif not isinstance(raw_objects, list):
        p.found.append(f"{where}: key 'objects' must be [[objects]] tables, got {raw_objects!r}")
    # reports and stage folders may carry the set's name
    set_name = p.check(check_file_name, where, "set name", data["name"]) if "name" in data else None
    description = p.check(lambda: _text(where, "description", data.get("description", ""), empty=True), default="")
    palette = p.check(_palette, where, data.get("palette", {}), default={})
    materials = p.check(_texts, where, "materials", data.get("materials", ["rubber"]), default=())
    default_color = p.check(check_file_name, where, "default_color", data.get("default_color", "gray"))
    color_articles = data.get("color_articles", {})
    if not isinstance(color_articles, dict) or any(v not in ("a", "an") for v in color_articles.values()):
        p.found.append(f"{where}: key 'color_articles' must be a table of colour = \"a\" or \"an\", "
                       f"got {color_articles!r}")
    objects = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_objects if isinstance(raw_objects, list) else []):
        obj = _parse_object(f"{where} objects[{i}]", raw, palette, root, p)
        name = raw.get("name") if isinstance(raw, dict) else None
        if isinstance(name, str) and name:
            folded = name.casefold()  # file names must differ on case-insensitive disks too
            if folded in seen:
                p.found.append(f"{where}: duplicate object name '{name}' (objects[{seen[folded]}] and objects[{i}])")
            seen.setdefault(folded, i)
        if obj is not None:
            objects.append(obj)
    p.raise_all(where)
    return ObjectSet(
        name=set_name, root=root, description=description,
        objects=tuple(objects), palette=palette, materials=materials or ("rubber",),
        default_color=default_color, color_articles=dict(color_articles),
        hash=hash_manifest(data, root, objects),
    )


def hash_manifest(data: dict, root: Path, objects: list[ObjectSpec]) -> str:
    """sha256 over the parsed manifest (canonical JSON) and every mesh file's bytes."""
    h = hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode())
    for obj in objects:
        if obj.source_kind == "mesh":
            h.update(obj.name.encode())
            h.update((root / obj.source_ref).read_bytes())
    return h.hexdigest()[:16]



# A measured fill up to this is 1: a box covers all of its outline, and the pixel edges of the
# ID render put it a little over (1.001 at 160 px, 1.012 at 32 px). Past it the measurement is wrong.
FILL_SLACK = 1.1


def clamp_fill(fill: float) -> float:
    """A measured fill as a manifest holds it: one a little over 1 (up to FILL_SLACK, pixel edges)
    is 1; any other value is kept as measured (the manifest's check refuses it when out of range)."""
    return FILL_RANGE[1] if FILL_RANGE[1] < fill <= FILL_SLACK else float(fill)


def write_fills(manifest: Path, fills: dict[str, float]) -> None:
    """Set `fill = X` in each named object's table of a manifest, keeping the rest of the
    text as it is (comments, order); a fill measured a little over 1 is written as 1 (clamp_fill).
    The new text must load before it replaces the file."""
    import re

    manifest = Path(manifest)
    tables: list[list[str]] = [[]]  # the text before the first table, then one list per table
    for line in manifest.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.lstrip().startswith("["):
            tables.append([])
        tables[-1].append(line)
    for table in tables[1:]:
        name = next((m.group(1) for line in table if (m := re.match(r'\s*name\s*=\s*"([^"]+)"', line))), None)
        if name not in fills:
            continue
        table[:] = [line for line in table if not re.match(r"\s*fill\s*=", line)]
        at = len(table)
        while at > 1 and (not table[at - 1].strip() or table[at - 1].lstrip().startswith("#")):
            at -= 1  # after the table's last key, before its blank lines and trailing comments
        if not table[at - 1].endswith("\n"):
            table[at - 1] += "\n"
        table.insert(at, f"fill = {clamp_fill(fills[name]):.3f}\n")
    text = "".join("".join(t) for t in tables)
    parse_manifest(tomllib.loads(text), manifest.parent, manifest)
    write_text(manifest, text)
