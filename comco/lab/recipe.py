"""Lab recipes: TOML files with a strict schema, and scales that override them.

A recipe names its stages and the settings of each (`[gates]` holds the competence
thresholds a model must reach before its numbers count); `[scales.NAME]` tables replace
settings key by key for one scale (`smoke`, `small`, `medium`, `full`). Every key, stage and
value is checked before anything runs: a mistake ends the command with exit code 2
and one line that names the key (`comco.errors.UserError`).

Pure Python (tomllib): reading a recipe imports neither torch nor bpy.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from comco.errors import UserError
from comco.lab import plan_keys
from comco.lab.executors import EXECUTORS
from comco.lab.stages import TOWER_KEYS
from comco.manifest import check_file_name
from comco.record import PRESETS
from comco.train import OBJECTIVES, SPACINGS, is_text_only

SCALES = ("smoke", "small", "medium", "full")
STAGES = ("render", "captions", "scratch", "probe", "finetune", "analyses", "labclip", "report")
# A stage that needs another stage's output cannot run without it.
STAGE_NEEDS = {"captions": ("render",), "scratch": ("captions",), "probe": ("scratch",),
               "finetune": ("scratch",), "analyses": ("probe",), "labclip": ("scratch",)}
FINETUNE_KINDS = ("longclip", "debias")
ANALYSES = ("padding", "order", "summary")
DEVICES = ("auto", "cpu", "cuda")
# Bounds a run can reach: more images than a dataset holds (comco.plan's MAX_IMAGES) or
# more steps than any lab scale needs are a typo, refused before the run folder is claimed.
MAX_IMAGES = 10_000_000
MAX_STEPS = 10_000_000


# ---------------------------------------------------------------- value checks

def _fail(path: str, value: Any, what: str) -> None:
    raise UserError(f"recipe key '{path}' = {value!r}: {what}")


def _int(lo: int | None = None, hi: int | None = None) -> Callable:
    def check(path, v):
        if isinstance(v, bool) or not isinstance(v, int):
            _fail(path, v, "expected a whole number")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            _fail(path, v, f"expected {lo if lo is not None else '-inf'}..{hi if hi is not None else 'inf'}")
        return v
    return check


def _float(lo: float | None = None, hi: float | None = None, open_lo: bool = False) -> Callable:
    def check(path, v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            _fail(path, v, "expected a number")
        v = float(v)
        if lo is not None and (v < lo or (open_lo and v == lo)):
            _fail(path, v, f"expected {'>' if open_lo else '>='} {lo}")
        if hi is not None and v > hi:
            _fail(path, v, f"expected <= {hi}")
        return v
    return check


def _str() -> Callable:
    def check(path, v):
        if not isinstance(v, str) or not v.strip():
            _fail(path, v, "expected a non-empty string")
        return v
    return check


def _name() -> Callable:
    """A string that becomes part of a stage id, so of a folder name: one safe file-name
    component by the object-name rule (no separator, no '..', not hidden)."""
    def check(path, v):
        return check_file_name(f"recipe key '{path}'", "the name", v)
    return check


def _seed() -> Callable:
    """A seed comco takes everywhere (comco.plan's rule: 0..2**63-1)."""
    def check(path, v):
        _int(0)(path, v)
        if not _seed_ok(v):
            _fail(path, v, "expected a seed in 0..2**63-1")
        return v
    return check


def _seed_ok(v: int) -> bool:
    from comco.plan import check_seed

    try:
        check_seed(v)
    except UserError:
        return False
    return True


def _bool() -> Callable:
    def check(path, v):
        if not isinstance(v, bool):
            _fail(path, v, "expected true or false")
        return v
    return check


def _choice(options: tuple[str, ...]) -> Callable:
    def check(path, v):
        if v not in options:
            _fail(path, v, f"use one of {', '.join(options)}")
        return v
    return check


def _list(item: Callable, min_len: int = 1, unique: bool = True) -> Callable:
    def check(path, v):
        if not isinstance(v, list) or len(v) < min_len:
            _fail(path, v, f"expected a list of at least {min_len}")
        out = [item(f"{path}[{i}]", x) for i, x in enumerate(v)]
        if unique and len(set(map(json.dumps, out))) != len(out):
            _fail(path, v, "values repeat")
        return out
    return check


def _object_set(path, v):
    _name()(path, v)  # a set's name is part of its stages' ids: a path would leave OUT/stages
    from comco.manifest import load_object_set

    try:
        load_object_set(v)
    except UserError as exc:
        _fail(path, v, str(exc))
    return v


# ---------------------------------------------------------------- the schema

VARIANT = {
    "name": _name(), "kind": _choice(FINETUNE_KINDS), "short_weight": _float(0.0, 1.0),
    "remove_summary": _bool(), "sample": _bool(), "pad": _bool(),
    "freeze": _bool(),  # false: the copied first `keep` stretched positions train too (Long-CLIP freezes them)
}
VARIANT_REQUIRED = ("name", "kind")


def _variant_tables(path, v, schema: dict, required: tuple[str, ...], empty: str):
    """Each entry of a [[...variants]] array checked against its schema: (where, checked table),
    its names unique; the callers add the checks of their own kind."""
    if not isinstance(v, list) or not v:
        _fail(path, v, empty)
    names = set()
    for i, entry in enumerate(v):
        where = f"{path}[{i}]"
        if not isinstance(entry, dict):
            _fail(where, entry, "expected a table")
        for key in entry:
            if key not in schema:
                raise UserError(f"unknown recipe key '{where}.{key}'; known: {', '.join(schema)}")
        for key in required:
            if key not in entry:
                raise UserError(f"recipe key '{where}.{key}' is missing")
        checked = {k: schema[k](f"{where}.{k}", x) for k, x in entry.items()}
        if checked["name"] in names:
            _fail(f"{where}.name", checked["name"], "variant names repeat")
        names.add(checked["name"])
        yield where, checked


def _variants(path, v):
    out = []
    for where, checked in _variant_tables(path, v, VARIANT, VARIANT_REQUIRED,
                                          "expected at least one [[finetune.variants]] table"):
        if checked["kind"] == "longclip" and any(k in checked for k in ("remove_summary", "sample", "pad")):
            raise UserError(f"recipe key '{where}': remove_summary/sample/pad apply to kind 'debias' only")
        out.append(checked)
    return out


# SLURM's own character sets for the strings that reach sbatch (each becomes an #SBATCH line of
# the job script, so a newline or a '#' in one would write shell lines that run on the cluster):
# partition, account and QOS names are letters, digits, '_', '-' and '.' (partitions may be a
# comma-separated list, as sbatch --partition takes them); a --constraint is
# feature names joined by its operators & | , * [ ] ( ) ! and counts.
SLURM_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
SLURM_NAMES = re.compile(r"[A-Za-z0-9_.-]{1,128}(,[A-Za-z0-9_.-]{1,128}){0,63}")  # sbatch -p takes a list
SLURM_CONSTRAINT = re.compile(r"[A-Za-z0-9_.&|,*\[\]()!:-]{1,1024}")


def _slurm_str(pattern: re.Pattern, what: str) -> Callable:
    """A string that reaches sbatch: SLURM's character set, or the recipe is refused where it is read."""
    def check(path, v):
        if not isinstance(v, str) or not pattern.fullmatch(v):
            _fail(path, v, f"expected {what} (SLURM's characters only: no spaces, newlines, quotes or '#')")
        return v
    return check


# [run.slurm]: the sbatch request of every stage job; a [run.slurm.KIND] table (KIND a stage
# kind) replaces keys for that kind's jobs. memory is in GB, time in minutes.
SLURM_REQUEST = {"partition": _slurm_str(SLURM_NAMES, "partition names, comma-separated: letters, digits, "
                                                     "'_', '-', '.'"),
                 "account": _slurm_str(SLURM_NAME, "an account name: letters, digits, '_', '-', '.'"),
                 "qos": _slurm_str(SLURM_NAME, "a QOS name: letters, digits, '_', '-', '.'"),
                 "gpus": _int(0, 64), "cpus": _int(1, 1024),
                 "memory": _int(1, 100000), "time": _int(1, 100000),
                 "constraint": _slurm_str(SLURM_CONSTRAINT, "features joined by & | , * [ ] ( ) !, "
                                                            "e.g. \"a100&ib\"")}
SLURM_DRIVER = {"max_queued": _int(1, 100000), "retries": _int(0, 100)}
SLURM_KINDS = ("render", "captions", "scratch", "finetune", "labclip", "probe")


def _slurm_table(path, v):
    if not isinstance(v, dict):
        _fail(path, v, "expected a table ([run.slurm])")
    known = {**SLURM_REQUEST, **SLURM_DRIVER}
    out = {}
    for key, value in v.items():
        if key in SLURM_KINDS:
            if not isinstance(value, dict):
                _fail(f"{path}.{key}", value, f"expected a table ([run.slurm.{key}])")
            for k in value:
                if k not in SLURM_REQUEST:
                    raise UserError(f"unknown recipe key '{path}.{key}.{k}'; known: {', '.join(SLURM_REQUEST)}")
            out[key] = {k: SLURM_REQUEST[k](f"{path}.{key}.{k}", x) for k, x in value.items()}
        elif key in known:
            out[key] = known[key](f"{path}.{key}", value)
        else:
            raise UserError(f"unknown recipe key '{path}.{key}'; known: {', '.join([*known, *SLURM_KINDS])}")
    return out


def slurm_settings(pairs: list[str], config: Path | None = None) -> tuple[dict, dict]:
    """`comco render --executor slurm`'s request table, the lab's [run.slurm] keys: from a TOML file
    (its [slurm] table, or a recipe's [run.slurm] with its [run.slurm.render]), then `--slurm
    KEY=VALUE` flags; each checked as the recipe's are. Returns (table, where each key came from)."""
    table: dict = {}
    origin: dict = {}
    if config is not None:
        try:
            raw = tomllib.loads(Path(config).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"--slurm-config {config}: cannot be read ({exc.__class__.__name__}); give a TOML file "
                            "with a [slurm] table") from None
        except tomllib.TOMLDecodeError as exc:
            raise UserError(f"--slurm-config {config}: not valid TOML ({exc})") from None
        except RecursionError:
            raise UserError(f"--slurm-config {config}: nested too deeply (tables inside each other)") from None
        run = raw.get("run") if isinstance(raw.get("run"), dict) else {}
        path, found = ("slurm", raw["slurm"]) if "slurm" in raw else ("run.slurm", run.get("slurm"))
        if not isinstance(found, dict):
            raise UserError(f"--slurm-config {config}: no [slurm] (or a recipe's [run.slurm]) table in it")
        checked = _slurm_table(path, found)
        for key, value in {**checked, **checked.get("render", {})}.items():
            if key in SLURM_REQUEST:
                table[key], origin[key] = value, f"'{path}.{key}' = {value!r} in {config}"
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or key not in SLURM_REQUEST:
            raise UserError(f"--slurm {pair}: give KEY=VALUE with KEY one of {', '.join(SLURM_REQUEST)} "
                            "(e.g. --slurm partition=gpu --slurm cpus=4)")
        value: Any = text
        if key in ("gpus", "cpus", "memory", "time"):
            try:
                value = int(text)
            except ValueError:
                raise UserError(f"--slurm {pair}: {key} takes a whole number"
                                f"{' (GB)' if key == 'memory' else ' (minutes)' if key == 'time' else ''}") from None
        try:
            table[key] = SLURM_REQUEST[key](f"--slurm {key}", value)
        except UserError as exc:
            raise UserError(str(exc).replace(f"recipe key '--slurm {key}' = {value!r}", f"--slurm {pair}")) from None
        origin[key] = f"--slurm {key}={value}"
    return table, origin


# [run.node]: the node executor's requests. train_gpus: the GPUs of one training (scratch and
# fine-tune stages) as one DDP group under torchrun; 1 (the default) shares a GPU by memory.
NODE_TABLE = {"train_gpus": _int(1, 64)}
NODE_TRAIN_KINDS = ("scratch", "finetune")


def _node_table(path, v):
    if not isinstance(v, dict):
        _fail(path, v, "expected a table ([run.node])")
    for key in v:
        if key not in NODE_TABLE:
            raise UserError(f"unknown recipe key '{path}.{key}'; known: {', '.join(NODE_TABLE)}")
    return {k: NODE_TABLE[k](f"{path}.{k}", x) for k, x in v.items()}


def _shard_images(path, v):
    """Images per shard stage of a large render (comco.lab.shards); left out: one stage per render."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        _fail(path, v, "expected a whole number of images per shard, at least 1 (leave the key out to render "
                       "each dataset in one stage)")
    return v


# keys a recipe may leave out (every other key is required), with the value they take
OPTIONAL = {"run": {"executor": "local", "slurm": {}, "node": {}}, "render": {"shard_images": None}}

SCHEMA: dict[str, dict[str, Callable]] = {
    # the planning options keyed in a section (layout, large_slot, ... in [data]) come with their
    # checks from their declarations (comco/lab/plan_keys.py)
    "data": {
        "object_sets": _list(_object_set), "train_objects": _list(_int(1, 5)), "test_objects": _list(_int(2, 5)),
        "train_images": _int(1, MAX_IMAGES), "test_images": _int(1, MAX_IMAGES), **plan_keys.schema("data"),
        "captions": _list(_str()), "seed": _seed(), "test_seed": _seed(), "order_bias": _list(_float(0.0, 1.0)),
    },
    # render.resolution is the plan's and the models' input size: one whole number, narrower than the plan's
    "render": {"preset": _choice(PRESETS), **plan_keys.schema("render"), "resolution": _int(16, 2048),
               "workers": _int(0, 256), "device": _choice(("cpu", "cuda", "optix")), "shard_images": _shard_images},
    "scratch": {
        "seeds": _list(_seed()), "captions": _list(_str()), "tower": _choice(("vit", "conv")),
        "width": _int(32, 4096), "layers": _int(1, 48),
        "patch_size": _int(2, 64), "context_length": _int(8, 512), "batch_size": _int(2),
        "steps": _int(1, MAX_STEPS), "lr": _float(0.0, 1.0, open_lo=True), "warmup": _int(0, MAX_STEPS),
        "weight_decay": _float(0.0, 10.0),
    },
    "finetune": {
        "order_bias": _float(0.0, 1.0), "steps": _int(1, MAX_STEPS), "batch_size": _int(2),
        "lr": _float(0.0, 1.0, open_lo=True), "warmup": _int(0, MAX_STEPS), "weight_decay": _float(0.0, 10.0),
        "keep": _int(1), "pca_rank": _int(1), "variants": _variants,
    },
    "probe": {"bootstrap": _int(0, 100_000), "seed": _seed(), "tor_templates": _list(_str()),
              "batch_size": _int(1), "analyses": _list(_choice(ANALYSES))},
    "labclip": {"order_bias": _float(0.0, 1.0), "images": _int(4, MAX_IMAGES), "objects": _list(_int(2, 5)),
                "seeds": _list(_seed()), "steps": _int(1, MAX_STEPS), "batch_size": _int(2),
                "lr": _float(0.0, 1.0, open_lo=True), "base_images": _int(4, MAX_IMAGES),
                "base_steps": _int(1, MAX_STEPS)},
    "run": {"jobs": _int(0, 256), "threads": _int(0, 256), "device": _choice(DEVICES),
            "executor": _choice(EXECUTORS), "slurm": _slurm_table, "node": _node_table,
            # the trainings' float precision (comco.train.precision): auto = bf16 autocast where the
            # CPU multiplies bf16 natively (or on a GPU), fp32 elsewhere; fp32 or bf16 force one
            "precision": _choice(("auto", "fp32", "bf16"))},
    # competence gates: the least value of each figure a model must reach on the held-out
    # test set before any of its numbers enters a fit, a comparison or a paragraph
    "gates": {"set_r1": _float(0.0, 1.0), "swap_largest": _float(0.0, 1.0), "swap_small": _float(0.0, 1.0),
              "presence_tor": _float(0.0, 1.0), "presence_ior": _float(0.0, 1.0), "keep": _float(0.0, 1.0),
              "colour_probe": _float(0.0, 1.0), "min_passing": _int(2)},
}
# Keys a recipe may leave out, with the value they then have, never filled into the settings
# (unlike OPTIONAL's): the origins variables of issue 26 (the text tower's attention, the
# training objective, weights saved along the run). Left out, a stage's configuration and
# hash are what they were before these keys.
ORIGINS = {
    "scratch": {"text_attention": "causal", "text_pool": None, "objective": "clip", "checkpoints": 0,
                "checkpoint_spacing": "even", "logit_scale": None, "siglip_bias": None},
    "probe": {"development": False, "half_truths": False},
    "gates": {"caption_r1": None},
    # issue 39: the trainings' precision (comco.train.precision); left out, auto
    "run": {"precision": "auto"},
}
SCHEMA["scratch"].update({"text_attention": _choice(("causal", "bidirectional")),
                          "text_pool": _choice(("mean", "first")), "objective": _choice(tuple(OBJECTIVES)),
                          "checkpoints": _int(0, 1000), "checkpoint_spacing": _choice(SPACINGS),
                          # a fixed temperature (exp of the logit scale) for every scratch-trained model;
                          # left out: open_clip's, learned from 1/0.07
                          "logit_scale": _float(1.0, 100.0),
                          # SigLIP's initial bias b; left out: its code's -10, the prior log-odds of a
                          # positive pair at its batch of 32k (-log 64 = -4.16 at batch 64)
                          "siglip_bias": _float(-30.0, 0.0)})
# issue 23's switches, left out alike: probe the trained models on the test scenes in another
# world (data.shift_world; the models train on the recipe's own world). data.holdout, a
# planning option, is keyed through plan_keys.
ORIGINS["data"] = {"shift_world": None}
SCHEMA["data"]["shift_world"] = lambda path, v: _shift_world(path, v)


# [[scratch.variants]]: more scratch models beside the recipe's own (the baseline), each a
# name and the origins keys it changes, trained at every p and seed on the same renders
# and captions, so one run compares the text towers and objectives (issue 26)
SCRATCH_VARIANT = {"name": _name(), "text_attention": SCHEMA["scratch"]["text_attention"],
                   "text_pool": SCHEMA["scratch"]["text_pool"], "objective": SCHEMA["scratch"]["objective"],
                   "siglip_bias": SCHEMA["scratch"]["siglip_bias"]}


def _scratch_variants(path, v):
    out = []
    for where, checked in _variant_tables(path, v, SCRATCH_VARIANT, ("name",), "expected at least one "
                                          "[[scratch.variants]] table (leave the key out for none)"):
        if len(checked) == 1:
            raise UserError(f"recipe key '{where}' sets none of {', '.join(list(SCRATCH_VARIANT)[1:])}: "
                            "it would train the recipe's own scratch models again")
        out.append(checked)
    return out


SCHEMA["scratch"]["variants"] = _scratch_variants
ORIGINS["scratch"]["variants"] = []
SCHEMA["probe"]["development"] = _bool()  # probe every saved checkpoint of every scratch model
SCHEMA["probe"]["half_truths"] = _bool()  # the half-truth probe (comco.probes.half_truth) on every trained model
SCHEMA["gates"]["caption_r1"] = _float(0.0, 1.0)  # caption-to-caption set R@1 (comco.probes.caption_retrieval)
# the gates of a text tower trained without images (scratch.objective "simcse" or "paraphrase"): its image
# tower is its untrained one, so only the text-side figures can gate it
TEXT_ONLY_GATES = {"presence_tor": "presence TOR", "caption_r1": "caption R@1"}


def _shift_world(path: str, value):
    """data.shift_world: the worlds the shifted test scenes draw from (as --world takes them), not plain alone."""
    from comco.plan import parse_worlds

    try:
        worlds = parse_worlds(value)
    except UserError as exc:
        _fail(path, value, str(exc))
    if worlds == parse_worlds("plain"):
        _fail(path, value, "the plain backdrop is the test set's own world; name an HDRI (or hdri for all eight)")
    return value


def optional(settings: dict, section: str, key: str):
    """A key of ORIGINS as the recipe gives it, or its default."""
    return settings[section].get(key, ORIGINS[section][key])


# recipe key -> the figure of comco.probes.gates it bounds
GATE_KEYS = {"set_r1": "set R@1", "swap_largest": "swap largest", "swap_small": "swap small",
             "presence_tor": "presence TOR", "presence_ior": "presence IOR", "keep": "Keep"}
# gates only the fine-tuned (long-caption) models must pass
FINETUNE_GATES = ("Keep",)
# for them Keep (retrieval with the long captions they were tuned on) replaces the
# short-caption gates, which are reported beside: how much of them survives is a finding,
# and the samplers are compared on it (gated on it, the worse sampler's models would leave
# the comparison: the selection the p = 1 models had on balanced captions)
SCRATCH_ONLY_GATES = ("set R@1", "swap largest", "swap small")
TOP = {"name": _str(), "description": _str(), "stages": _list(_choice(STAGES))}


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    scale: str
    stages: tuple[str, ...]
    settings: dict  # section -> key -> value, the scale's overrides applied
    source: str  # the recipe file's text
    path: str

    def get(self, section: str, key: str):
        return self.settings[section][key]

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "scale": self.scale,
                "stages": list(self.stages), "settings": self.settings}

    def digest(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _check_section(where: str, raw: Any, *, partial: bool) -> dict:
    section = where.split(".")[-1]
    if not isinstance(raw, dict):
        raise UserError(f"recipe key '{where}' must be a table ([{where}])")
    spec = SCHEMA[section]
    for key in raw:
        if key not in spec:
            raise UserError(f"unknown recipe key '{where}.{key}'; known in [{section}]: {', '.join(spec)}")
    if not partial:
        missing = [k for k in spec if k not in raw and k not in plan_keys.optional(section)
                   and k not in OPTIONAL.get(section, {}) and k not in ORIGINS.get(section, {})]
        if missing:
            raise UserError(f"recipe key '{where}.{missing[0]}' is missing")
        raw = {**OPTIONAL.get(section, {}), **raw}
    return {k: spec[k](f"{where}.{k}", v) for k, v in raw.items()}


def parse_recipe(text: str, scale: str, path: str = "<recipe>") -> Recipe:
    """A recipe from its TOML text: every key required, typed and in range (a bad one is a
    UserError naming it).

    Args:
        text: the TOML. scale: the scale to apply. path: where it came from, for messages.
    """
    if scale not in SCALES:
        raise UserError(f"--scale {scale}: use one of {', '.join(SCALES)}")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:  # tomllib recurses once per nested array or table
        raise UserError(f"{path}: nested too deeply to be a recipe (arrays or tables inside each other)") from None
    known = set(TOP) | set(SCHEMA) | {"scales"}
    for key in raw:
        if key not in known:
            raise UserError(f"unknown recipe key '{key}'; known: {', '.join(sorted(known))}")
    for key in TOP:
        if key not in raw:
            raise UserError(f"recipe key '{key}' is missing")
    top = {k: TOP[k](k, raw[k]) for k in TOP}
    settings = {s: _check_section(s, raw.get(s, {}), partial=False) for s in SCHEMA}
    scales = raw.get("scales", {})
    if not isinstance(scales, dict):
        raise UserError("recipe key 'scales' must hold tables [scales.NAME] for NAME in " + ", ".join(SCALES))
    for name, over in scales.items():
        if name not in SCALES:
            raise UserError(f"unknown scale 'scales.{name}'; scales: {', '.join(SCALES)}")
        if not isinstance(over, dict):
            raise UserError(f"recipe key 'scales.{name}' must be a table")
        for section, values in over.items():
            if section == "stages":
                continue
            if section not in SCHEMA:
                raise UserError(f"unknown recipe key 'scales.{name}.{section}'; sections: {', '.join(SCHEMA)}")
            checked = _check_section(f"scales.{name}.{section}", values, partial=True)
            if name == scale:
                settings[section].update(checked)
        if "stages" in over:
            stages = _list(_choice(STAGES))(f"scales.{name}.stages", over["stages"])
            if name == scale:
                top["stages"] = stages
    _check_consistency(settings, top["stages"])
    return Recipe(top["name"], top["description"], scale, tuple(top["stages"]), settings, text, path)


def variant_settings(scratch: dict, variant: dict) -> dict:
    """A [[scratch.variants]] entry's origins keys over the recipe's scratch section (a
    variant that sets its text tower's attention or pooling names the whole tower)."""
    base = {k: v for k, v in scratch.items() if k in ORIGINS["scratch"] and k != "variants"}
    if any(k in variant for k in TOWER_KEYS):
        base = {k: v for k, v in base.items() if k not in TOWER_KEYS}
    return {**base, **{k: v for k, v in variant.items() if k != "name"}}


def _check_origins(s: dict, stages: list[str]) -> None:
    """The origins keys (ORIGINS) fit together, for the recipe's scratch models and for each
    of its [[scratch.variants]]: a pooling only where it is a choice, an objective with its
    gate, development probing only of models that save checkpoints."""
    _check_tower(s, s["scratch"], "scratch", stages, variant=False)
    for i, v in enumerate(optional(s, "scratch", "variants")):
        _check_tower(s, variant_settings(s["scratch"], v), f"scratch.variants[{i}]", stages, variant=True)
    if optional(s, "probe", "development") and optional(s, "scratch", "checkpoints") == 0:
        raise UserError("recipe key 'probe.development' = true: the scratch models save no checkpoints to "
                        "probe; set scratch.checkpoints (e.g. 8)")
    if "checkpoint_spacing" in s["scratch"] and optional(s, "scratch", "checkpoints") == 0:
        raise UserError("recipe key 'scratch.checkpoint_spacing' is set but scratch.checkpoints is 0: "
                        "there are no checkpoints to space; set scratch.checkpoints (e.g. 12)")


def _check_shift(s: dict) -> None:
    """issue 23's switches against the rest: an HDRI needs a preset that shows it, and the
    holdout must hold for every object set at the training scenes' object counts."""
    data = s["data"]
    if optional(s, "data", "shift_world") and s["render"]["preset"] == "draft":
        raise UserError(f"recipe key 'data.shift_world' = {data['shift_world']!r}: the draft preset (Workbench) "
                        f"shows no HDRI world; set render.preset = \"cycles\" or drop the key")
    if data.get("holdout"):
        from comco.manifest import load_object_set
        from comco.plan import PlanConfig, resolve_holdout

        for name in data["object_sets"]:
            for objects in (data["train_objects"], data["test_objects"]):
                try:
                    resolve_holdout(PlanConfig.from_dict({"object_set": name, "objects": objects,
                                                  "holdout": data["holdout"]}), load_object_set(name))
                except UserError as exc:
                    raise UserError(f"recipe key 'data.holdout' = {data['holdout']!r} (object set {name}): "
                                    f"{exc}") from None


def _check_tower(s: dict, sc: dict, where: str, stages: list[str], variant: bool) -> None:
    attention, pool = sc.get("text_attention", "causal"), sc.get("text_pool")
    if attention == "bidirectional" and pool is None:
        raise UserError(f"recipe key '{where}.text_pool' is missing: a bidirectional text tower pools by "
                        "'mean' (over the real tokens) or 'first' (the start-of-text token)")
    if attention == "causal" and pool is not None:
        raise UserError(f"recipe key '{where}.text_pool' = {pool!r}: a causal text tower pools at the "
                        f"end-of-text token; set {where}.text_attention = \"bidirectional\" or drop it")
    objective = sc.get("objective", "clip")
    if sc.get("siglip_bias") is not None and objective != "siglip":
        raise UserError(f"recipe key '{where}.siglip_bias' is set, but {where}.objective = \"{objective}\" has no "
                        "sigmoid bias: set it on a siglip objective or drop it")
    if is_text_only(objective):
        if optional(s, "gates", "caption_r1") is None:
            raise UserError(f"recipe key 'gates.caption_r1' is missing: {where}.objective = \"{objective}\" "
                            "trains the text tower alone, gated on presence TOR and caption-to-caption R@1; set it")
        # the fine-tunes and LABCLIP start from the recipe's own scratch models, never a variant's
        if not variant and {"finetune", "labclip"} & set(stages):
            raise UserError(f"recipe key 'scratch.objective' = '{objective}': its models have no trained image tower "
                            "to fine-tune or align; drop the finetune and labclip stages")


def _check_consistency(s: dict, stages: list[str]) -> None:
    _check_origins(s, stages)
    _check_shift(s)
    for stage in stages:
        for need in STAGE_NEEDS.get(stage, ()):
            if need not in stages:
                raise UserError(f"recipe key 'stages': stage '{stage}' needs stage '{need}'")
    if "report" in stages and not {"probe", "labclip"} & set(stages):
        raise UserError(f"recipe key 'stages' = {stages}: the report reports what 'probe' or 'labclip' measured; "
                        "add one of them (with the stages they need)")
    _check_sizes(s, stages)
    _check_train_gpus(s, stages)
    seeds = s["scratch"]["seeds"]
    if "probe" in stages and len(seeds) < s["gates"]["min_passing"]:
        raise UserError(f"recipe key 'scratch.seeds' = {seeds}: {len(seeds)} seed(s) per p cannot give "
                        f"gates.min_passing = {s['gates']['min_passing']} passing models (an interval across "
                        "seeds needs at least 2); add seeds")
    biases = s["data"]["order_bias"]
    if "finetune" in stages and s["finetune"]["order_bias"] not in biases:
        raise UserError(f"recipe key 'finetune.order_bias' = {s['finetune']['order_bias']}: "
                        f"not one of data.order_bias {biases}")
    if "labclip" in stages and len(s["labclip"]["seeds"]) < s["gates"]["min_passing"]:
        raise UserError(f"recipe key 'labclip.seeds' = {s['labclip']['seeds']}: fewer than gates.min_passing = "
                        f"{s['gates']['min_passing']} LABCLIP bases cannot give an interval; add seeds")
    if s["scratch"]["context_length"] < 8 or s["finetune"]["keep"] >= s["scratch"]["context_length"]:
        raise UserError(f"recipe key 'finetune.keep' = {s['finetune']['keep']}: must be below "
                        f"scratch.context_length {s['scratch']['context_length']}")
    if s["scratch"]["tower"] == "conv" and s["render"]["resolution"] % 32:
        raise UserError(f"recipe key 'render.resolution' = {s['render']['resolution']}: the conv tower "
                        "(scratch.tower) needs a multiple of 32")
    if s["scratch"]["tower"] == "vit" and s["render"]["resolution"] % s["scratch"]["patch_size"]:
        raise UserError(f"recipe key 'render.resolution' = {s['render']['resolution']}: not a multiple of "
                        f"scratch.patch_size {s['scratch']['patch_size']}")
    if "long" not in s["data"]["captions"] and ({"finetune", "analyses"} & set(stages)):
        raise UserError("recipe key 'data.captions': fine-tuning and the analyses need the 'long' template")
    missing = [c for c in s["scratch"]["captions"] + s["probe"]["tor_templates"] if c not in s["data"]["captions"]]
    if missing:
        raise UserError(f"recipe template '{missing[0]}' (scratch.captions / probe.tor_templates) is not "
                        f"rendered; add it to data.captions")


def _check_train_gpus(s: dict, stages: list[str]) -> None:
    """run.node.train_gpus splits each training's batch over its processes: it must divide it
    (the machine's GPU count is checked when the node executor starts, comco.lab.executors.node)."""
    k = s["run"]["node"].get("train_gpus", 1)
    for kind in NODE_TRAIN_KINDS:
        if kind in stages and s[kind]["batch_size"] % k:
            raise UserError(f"recipe key 'run.node.train_gpus' = {k}: {kind}.batch_size {s[kind]['batch_size']} "
                            f"does not split into {k} processes; use a divisor of it")


def _check_sizes(s: dict, stages: list[str]) -> None:
    """Values that are fine alone but not together: objects per scene against the set's
    size, batches against the images they are drawn from, seeds the graph derives."""
    from comco.lab.keys import DERIVED_SEED_OFFSETS
    from comco.manifest import load_object_set

    data, lab = s["data"], s["labclip"]
    per_scene = [("data.train_objects", data["train_objects"]), ("data.test_objects", data["test_objects"])]
    if "labclip" in stages:
        per_scene.append(("labclip.objects", lab["objects"]))
    for i, name in enumerate(data["object_sets"]):
        size = len(load_object_set(name).objects)
        for key, counts in per_scene:
            if max(counts) > size:
                raise UserError(f"recipe key '{key}' = {counts}: set '{name}' (data.object_sets[{i}]) has "
                                f"{size} object(s); use at most {size} per scene")
    batches = [("scratch.batch_size", s["scratch"]["batch_size"], "data.train_images", data["train_images"])]
    if "finetune" in stages:
        batches.append(("finetune.batch_size", s["finetune"]["batch_size"], "data.train_images", data["train_images"]))
    if "labclip" in stages:
        batches += [("scratch.batch_size", s["scratch"]["batch_size"], "labclip.base_images", lab["base_images"]),
                    ("labclip.batch_size", lab["batch_size"], "labclip.images", lab["images"])]
    for key, batch, images_key, images in batches:
        if batch > images:
            raise UserError(f"recipe key '{key}' = {batch}: larger than the {images} images it draws from "
                            f"({images_key}); use at most {images}")
    offset = max(DERIVED_SEED_OFFSETS.values())
    if not _seed_ok(data["seed"] + offset):
        raise UserError(f"recipe key 'data.seed' = {data['seed']}: the colour renders use data.seed plus up to "
                        f"{offset}, which must stay a seed (0..2**63-1); use a smaller one")


def check_machine(recipe: Recipe) -> None:
    """What only the machine that runs the recipe can tell (a dry run on another need not
    pass): `run.device = "cuda"` needs a GPU torch can use."""
    if recipe.settings["run"]["device"] == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UserError("recipe key 'run.device' = 'cuda': torch finds no GPU on this machine; "
                            "use \"auto\" or \"cpu\"")


def load_recipe(path: str | Path, scale: str) -> Recipe:
    """A recipe file (or the name of one shipped in recipes/) at one scale, checked key by key.

    Args:
        path: a TOML file, or a shipped recipe's name ("order-bias").
        scale: one of SCALES ("smoke", "small", "medium", "full"); its [scales.NAME] tables replace the base keys.
    """
    p = Path(path)
    if not p.exists():
        # a bare name finds a recipe shipped with comco (recipes/NAME.toml)
        import importlib.util

        spec = importlib.util.find_spec("comco.recipes")
        folder = Path(list(spec.submodule_search_locations)[0]) if spec else None
        packaged = folder / (p.name if p.suffix else f"{p.name}.toml") if folder else None
        if packaged is None or not packaged.is_file():
            raise UserError(f"recipe {path} not found; give a .toml file (e.g. recipes/order-bias.toml)")
        p = packaged
    if p.is_dir():
        raise UserError(f"recipe {path} is a folder; give a .toml file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"recipe {p}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    return parse_recipe(text, scale, str(p))
