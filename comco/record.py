"""The scene record: the contract between the planner, the renderer and the probes.

One JSON object per image in `scenes.jsonl` (and one per reference render in
`singles/singles.jsonl`). The planner writes every field but `measured`; the renderer
adds `measured` to each object; the probes read everything they need from here (which
object is largest, which is mentioned first) and never from file names.

The types below are `TypedDict`s: records stay plain dicts (JSON in, JSON out), and
the field names live in one place. The vocabulary (slots, layouts, the fields a
caption re-plan must keep) is defined here and imported everywhere else.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

# Image-space slots: centre, upper-left, upper-right, bottom-left, bottom-right.
SLOTS = ("M", "UL", "UR", "BL", "BR")
MAX_OBJECTS = len(SLOTS)
LAYOUTS = ("one-large", "equal", "graded", "realistic")
SINGLE_LAYOUT = "single"  # the layout of a reference render (one object, slot M)
# Render presets (recorded in dataset.json's config): Workbench draft, Cycles, Cycles high, EEVEE (GPU only).
PRESETS = ("draft", "cycles", "high", "eevee")
# Each preset's samples when --samples is left out (Workbench takes none). The cycles preset's
# 4 + OpenImageDenoise is the knee of benchmarks/cycles_quality.py: the fewest CPU seconds at
# which every measured scene (simco and comco, plain and varied, 224 and 512 px) is within 35 dB
# of a 1024-sample reference (worst 36.9 dB; 24 samples, the earlier default, cost 2.1-2.6x).
PRESET_SAMPLES = {"cycles": 4, "high": 128, "eevee": 32}
# Counterfactual minimal pairs (--pairs): what a variant changes of its base scene, nothing else.
PAIR_FACTORS = ("swap-size", "swap-slots", "swap-colors", "remove", "add", "count")
PAIR_BASE = "base"  # the factor a pair's base record carries
# Per-image outputs beside the image (--depth, --normals): folder and file name follow the image's.
DEPTH_FOLDER, NORMALS_FOLDER = "depth", "normals"
# Depth PNGs: 16-bit grey, value x DEPTH_UNIT_M = metres from the camera plane; 0 = no surface
# within 65.535 m (the sky, or the floor past that).
DEPTH_UNIT_M = 0.001
# The relations graph (--relations): image-plane directions and the camera's viewing axis.
RELATIONS = ("left of", "right of", "above", "below", "in front of", "behind")
# Which presets' engines write which passes (Workbench writes depth, not normals; EEVEE's passes
# are not wired up: it needs a GPU, and none was at hand to test them).
PASSES = {"draft": ("depth",), "cycles": ("depth", "normals"), "high": ("depth", "normals"), "eevee": ()}


class Measured(TypedDict):
    """What the renderer measured of one object, from an ID render in the same worker."""
    pixels: int  # visible pixels in the image
    fraction: float  # pixels over the image's pixels
    bbox: list[int]  # tight box [x0, y0, x1, y1), pixels
    visible_fraction: float  # visible pixels over the pixels it covers alone
    occluded_by: NotRequired[list[int]]  # --relations: objects that hide part of it (indices into objects)
    depth_m: NotRequired[float]  # --depth: median distance of its visible pixels from the camera plane


class ObjectEntry(TypedDict):
    """One object of a scene, as planned (and measured, once rendered)."""
    name: str  # the object set's name for it
    slot: str  # one of SLOTS
    size_rank: int  # 0 = largest as planned
    scale: float
    location: list[float]  # [x, y, z] in metres on the ground plane
    rotation_z: float  # yaw, radians
    color: str | None  # a palette colour with --colors, else None
    material: str
    planned_fraction: float  # planned share of the image
    surface: NotRequired[SurfaceEntry]  # planned with --roughness / --metallic / --texture only
    measured: NotRequired[Measured]


class PairEntry(TypedDict):
    """A pair dataset's record: which pair group it belongs to and what its variant changed."""
    id: str  # the base record's id
    factor: str  # PAIR_BASE or one of PAIR_FACTORS
    changed: list[int]  # indices into this record's objects that differ from the base ([] for the base)


class WorldEntry(TypedDict):
    """The world of an image planned with --world (comco/plan/worlds.py); no field without it."""
    name: str  # "plain" or one of bpy's HDRI worlds
    rotation_z: NotRequired[float]  # an HDRI's turn about the vertical axis, radians
    strength: NotRequired[float]  # an HDRI's background strength


class Relation(TypedDict):
    """One edge of the relations graph: objects[subject] is `predicate` objects[object]."""
    subject: int
    predicate: str  # one of RELATIONS
    object: int


class SurfaceEntry(TypedDict):
    """An object's surface planned with --roughness / --metallic / --texture (comco/plan/surfaces.py)."""
    roughness: NotRequired[float]  # with --roughness only (else its look's)
    metallic: NotRequired[float]  # with --metallic only (else its look's)
    texture: str  # "none" or one of the procedural textures


class FloorEntry(TypedDict):
    """The floor of an image planned with --floor (comco/plan/floors.py); no field without it."""
    name: str  # "plain", "none" or one of the procedural floors
    color: NotRequired[list[float]]  # a procedural floor's sRGB colour, 0..1
    rotation_z: NotRequired[float]  # its pattern's turn about the vertical axis, radians


class SceneRecord(TypedDict):
    """One multi-object image."""
    id: str  # "000042"
    index: int
    seed: int  # the image's own seed: it reproduces every number of the record
    retry: int  # which attempt of the image fitted
    object_set: str
    object_set_hash: str
    image: str  # relative to the dataset root: "images/000042.png"
    resolution: list[int]  # [W, H]
    layout: str  # one of LAYOUTS
    large_slot: str  # the slot of size rank 0
    camera: dict
    lights: dict
    world: NotRequired[WorldEntry]  # planned with --world only
    floor: NotRequired[FloorEntry]  # planned with --floor only
    objects: list[ObjectEntry]
    mention_orders: list[list[int]]  # indices into objects, first-mentioned first
    captions: dict[str, list[str]]  # template -> one caption per mention order
    pair: NotRequired[PairEntry]  # pair datasets only
    holdout: NotRequired[list[str]]  # planned with --holdout only: the held-out combinations it shows
    depth: NotRequired[str]  # --depth: "depth/000042.png" (DEPTH_UNIT_M per step)
    normals: NotRequired[str]  # --normals: "normals/000042.png" (camera-space unit normals, 8-bit RGB)
    relations: NotRequired[list[Relation]]  # --relations: planned, from 3-D positions and the camera
    occlusion_order: NotRequired[list[int]]  # --relations: measured front-to-back order of objects


class SingleRecord(TypedDict):
    """One reference render of one object alone at the centre (IOR's gallery)."""
    id: str  # the name, or "name-colour" with --colors
    name: str
    color: str | None
    image: str  # "singles/<id>.png"
    object_set: str
    object_set_hash: str
    resolution: list[int]
    layout: str  # SINGLE_LAYOUT
    large_slot: str
    camera: dict
    lights: dict
    objects: list[ObjectEntry]
    mention_orders: list[list[int]]


# The realism factors' own fields: only in records planned with their options.
REALISM_FIELDS = ("world", "floor")
# The outputs beside each image (--depth, --normals, --relations): only in records planned with them.
OUTPUT_FIELDS = ("depth", "normals", "relations", "occlusion_order")
# Fields every scene record and object entry must have (validate checks them).
RECORD_KEYS = tuple(k for k in SceneRecord.__annotations__
                    if k not in ("index", "retry", "large_slot", "pair", "holdout", *REALISM_FIELDS, *OUTPUT_FIELDS))
OBJECT_KEYS = ("name", "slot", "size_rank", "scale", "location", "rotation_z")
MEASURED_KEYS = tuple(k for k in Measured.__annotations__ if k not in ("occluded_by", "depth_m"))
# What a re-plan of captions keeps from the rendered record: everything that shapes the image.
PLACEMENT_FIELDS = ("id", "index", "seed", "retry", "object_set", "object_set_hash", "image", "resolution",
                    "layout", "large_slot", "camera", "lights", *REALISM_FIELDS, "depth", "normals", "relations")


def object_names(record: SceneRecord | SingleRecord) -> list[str]:
    """The record's object names, in the order of its `objects` list."""
    return [o["name"] for o in record["objects"]]


def measured_ranks(record: SceneRecord) -> list[int]:
    """Size rank of each object from measured pixels (0 = largest); the planned rank breaks ties."""
    objs = record["objects"]
    key = [(-(o.get("measured") or {}).get("pixels", 0), o["size_rank"], i) for i, o in enumerate(objs)]
    ranks = [0] * len(objs)
    for r, (_, _, i) in enumerate(sorted(key)):
        ranks[i] = r
    return ranks


def pair_rank(record: dict) -> int:
    """A record's place in its pair group in scenes.jsonl: 0 for a base (or a record of an
    ordinary dataset), then 1 + the factor's place in PAIR_FACTORS."""
    pair = record.get("pair")
    return 0 if not pair or pair["factor"] == PAIR_BASE else 1 + PAIR_FACTORS.index(pair["factor"])


def largest(record: SceneRecord) -> int:
    """Index into `objects` of the planned largest object (size rank 0)."""
    return [o["size_rank"] for o in record["objects"]].index(0)


def check_record(r, names: set[str] | None = None, set_hash: str | None = None, measured: bool = False) -> list[str]:
    """What is wrong with a scene record (an empty list when nothing is), one line each.

    Args:
        r: the record as read from scenes.jsonl (any JSON value: a wrong shape is reported).
        names: the object set's names, to check each object against (None: not checked).
        set_hash: the object set's hash the record must carry (None: not checked).
        measured: the record was rendered, so every object must carry its measurements.
    """
    if not isinstance(r, dict):
        return [f"a record is a JSON {type(r).__name__}, not an object"]
    rid = r.get("id", "?")
    missing = [k for k in RECORD_KEYS if k not in r]
    if missing:
        return [f"record {rid}: missing field '{missing[0]}'"]
    # A record of the wrong shape is reported, never a crash of validate itself.
    shapes = {"objects": list, "mention_orders": list, "captions": dict, "image": str}
    wrong = [k for k, kind in shapes.items() if not isinstance(r[k], kind)]
    if wrong:
        return [f"record {rid}: field '{wrong[0]}' is a {type(r[wrong[0]]).__name__}, "
                f"expected a {shapes[wrong[0]].__name__}"]
    if not all(isinstance(o, dict) for o in r["objects"]):
        return [f"record {rid}: objects must be JSON objects"]
    try:
        return _check_fields(r, rid, names, set_hash, measured)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        return [f"record {rid}: a field has the wrong type ({exc.__class__.__name__}: {exc})"]


def _check_fields(r: dict, rid, names, set_hash, measured: bool) -> list[str]:
    out = []
    objs = r["objects"]
    n = len(objs)
    if n == 0:
        return [f"record {rid}: no objects"]
    if set_hash and r["object_set_hash"] != set_hash:
        out.append(f"record {rid}: object_set_hash {r['object_set_hash']} differs from dataset.json's {set_hash}")
    for i, o in enumerate(objs):
        miss = [k for k in OBJECT_KEYS if k not in o]
        if miss:
            out.append(f"record {rid}: objects[{i}] misses '{miss[0]}'")
            continue
        if names is not None and o["name"] not in names:
            out.append(f"record {rid}: objects[{i}] '{o['name']}' is not in the object set")
        if o["slot"] not in SLOTS:
            out.append(f"record {rid}: objects[{i}] has unknown slot '{o['slot']}'")
        if not o["scale"] > 0:
            out.append(f"record {rid}: objects[{i}] scale {o['scale']} is not positive")
    if sorted(o.get("size_rank") for o in objs) != list(range(n)):
        out.append(f"record {rid}: size ranks are not 0..{n - 1}")
    if len({o["slot"] for o in objs if "slot" in o}) != n:
        out.append(f"record {rid}: two objects share a slot")
    names_in = [o.get("name") for o in objs]
    pair = r.get("pair")
    if pair is not None:
        out += _pair_problems(rid, pair, n)
    # Only a count variant repeats an object, and only one of them, once.
    repeats = n - len(set(names_in))
    if repeats and not (isinstance(pair, dict) and pair.get("factor") == "count" and repeats == 1):
        out.append(f"record {rid}: an object appears twice")
    out += _output_problems(r, rid, n)
    orders = r["mention_orders"]
    for k, order in enumerate(orders):
        if sorted(order) != list(range(n)):
            out.append(f"record {rid}: mention_orders[{k}] is not a permutation of the objects")
    for name, caps in r["captions"].items():
        if len(caps) != len(orders):
            out.append(f"record {rid}: captions['{name}'] has {len(caps)} captions for {len(orders)} orders")
    if measured:
        for i, o in enumerate(objs):
            m = o.get("measured")
            if not m:
                out.append(f"record {rid}: objects[{i}] has no measurements")
            elif not (0 <= m.get("fraction", -1) <= 1 and m.get("pixels", -1) >= 0):
                out.append(f"record {rid}: objects[{i}] has impossible measurements {m}")
    return out


def _pair_problems(rid, pair, n: int) -> list[str]:
    if not isinstance(pair, dict) or set(pair) != set(PairEntry.__annotations__):
        return [f"record {rid}: 'pair' must be an object with id, factor and changed"]
    factor, changed = pair["factor"], pair["changed"]
    if factor != PAIR_BASE and factor not in PAIR_FACTORS:
        return [f"record {rid}: pair factor '{factor}' is not {PAIR_BASE} or one of {', '.join(PAIR_FACTORS)}"]
    if not isinstance(changed, list) or not all(isinstance(i, int) and 0 <= i < n for i in changed) \
            or len(set(changed)) != len(changed):
        return [f"record {rid}: pair changed {changed!r} are not distinct indices into its {n} objects"]
    want = pair["id"] if factor == PAIR_BASE else f"{pair['id']}-{factor}"
    if rid != want:
        return [f"record {rid}: a pair {factor} record's id must be {want}"]
    if (factor == PAIR_BASE) != (not changed) and factor != "remove":
        return [f"record {rid}: pair factor {factor} with changed {changed}"]
    return []


def _output_problems(r: dict, rid, n: int) -> list[str]:
    """The relations graph and the occlusion order (--relations) name this record's objects."""
    out = []
    for k, rel in enumerate(r.get("relations") or []):
        if not (isinstance(rel, dict) and rel.get("predicate") in RELATIONS
                and all(isinstance(rel.get(f), int) and 0 <= rel[f] < n for f in ("subject", "object"))
                and rel["subject"] != rel["object"]):
            out.append(f"record {rid}: relations[{k}] {rel!r} is not a relation between two of its {n} objects")
            break
    order = r.get("occlusion_order")
    if order is not None and sorted(order) != list(range(n)):
        out.append(f"record {rid}: occlusion_order is not a permutation of the objects")
    return out
