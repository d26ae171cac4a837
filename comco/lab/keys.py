"""Stage keys: what a lab stage is, as a kind and named fields, and its folder.

A `StageKey` is made by the functions below (one per kind of stage, the only place ids
are spelt) and rendered by `.id` into the stage's folder name under `OUT/stages/`. The
ids are those of the first lab runs (`render-train-simco`, `scratch-simco-p1-s0`,
`probe-finetune-simco-debias-s2`, ...), so existing run folders and stage hashes stay
valid; tests/test_lab_keys.py holds them.

Extending: a new kind adds a maker here and a branch in `StageKey.id`; a new field
(say, a text-attention variant of a scratch model) is an optional field that defaults
to None and adds to the id only when it is set, so every existing id stays as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from comco.errors import UserError

STAGES = "stages"  # OUT/stages/<id>/

# render roles: the training images, the held-out test images (with singles), and the
# LABCLIP base's and the map's colour images; with data.holdout the test scenes' mixed split
# (seen and held-out combinations), with data.shift_world the test scenes in another world
RENDER_ROLES = ("train", "test", "colors-train", "colors", "heldout", "shifted")
SHIFT_ROLES = ("heldout", "shifted")  # the renders a trained model is probed on beside the test set
# Seeds the graph derives from data.seed, so that no two renders share a stream: the
# LABCLIP base's colour images and the map's (primes, far from the data and test seeds).
COLOUR_BASE_SEED_OFFSET = 7907
COLOUR_MAP_SEED_OFFSET = 7919
DERIVED_SEED_OFFSETS = {"colors-train": COLOUR_BASE_SEED_OFFSET, "colors": COLOUR_MAP_SEED_OFFSET}
# captions roles: which render they re-caption (the colour base's captions come from colors-train)
CAPTION_ROLES = {"train": "train", "test": "test", "colors": "colors-train"}


@dataclass(frozen=True)
class StageKey:
    """One stage's identity. Fields a kind does not use stay None.

    kind: render | captions | scratch | finetune | labclip | probe | report.
    object_set: the set's name. role: render (RENDER_ROLES), captions (CAPTION_ROLES),
    scratch ("order": the order-bias models; "colors": the LABCLIP bases), probe (None: the
    test set; SHIFT_ROLES: that render).
    p: the captions' order bias. seed: the training seed. variant: a fine-tune's name, or a
    scratch model's origins variant ([[scratch.variants]]; None: the recipe's own scratch
    settings, the baseline) and, on a prior, the variant whose untrained tower it probes.
    model: a probe's model (None: the untrained prior of `seed`). shard: a render's piece (i, k).
    """

    kind: str
    object_set: str | None = None
    role: str | None = None
    p: float | None = None
    seed: int | None = None
    variant: str | None = None
    model: StageKey | None = None
    shard: tuple[int, int] | None = None  # a render's piece (i, k): comco render --shard i/k (comco.lab.shards)

    @property
    def id(self) -> str:
        k, o = self.kind, self.object_set
        if k == "render":
            return f"render-{self.role}-{o}" + (f"-shard-{self.shard[0]}-of-{self.shard[1]}" if self.shard else "")
        if k == "captions":
            role = "" if self.role == "train" else f"{self.role}-"
            return f"captions-{role}{o}-{_p(self.p)}"
        if k == "scratch":
            if self.role == "colors":
                return f"scratch-colors-{o}-s{self.seed}"
            return f"scratch-{o}-{_v(self.variant)}{_p(self.p)}-s{self.seed}"
        if k == "finetune":
            return f"finetune-{o}-{self.variant}-s{self.seed}"
        if k == "labclip":
            return f"labclip-{o}-s{self.seed}"
        if k == "probe":
            if self.model is None:
                return f"probe-prior-{o}-{_v(self.variant)}s{self.seed}"
            return f"probe-{self.role}-{self.model.id}" if self.role else f"probe-{self.model.id}"
        if k == "report":
            return "report"
        raise ValueError(f"no id for stage kind {k!r}")

    def __str__(self) -> str:
        return self.id


def _p(p: float) -> str:
    return f"p{p:g}"


def _v(variant: str | None) -> str:
    """A scratch variant's part of an id ("" for the baseline, so its ids stay as they were)."""
    return "" if variant is None else f"{variant}-"


# ---------------------------------------------------------------- the makers

def render_key(role: str, object_set: str) -> StageKey:
    if role not in RENDER_ROLES:
        raise ValueError(f"render role {role!r}")
    return StageKey("render", object_set, role)


def captions_key(role: str, object_set: str, p: float) -> StageKey:
    if role not in CAPTION_ROLES:
        raise ValueError(f"captions role {role!r}")
    return StageKey("captions", object_set, role, p=p)


def scratch_key(object_set: str, p: float, seed: int, variant: str | None = None) -> StageKey:
    """An order-bias model: trained from scratch on the captions at order bias p (with a
    [[scratch.variants]] entry's origins keys, or the recipe's own scratch settings)."""
    return StageKey("scratch", object_set, "order", p=p, seed=seed, variant=variant)


def colour_base_key(object_set: str, seed: int) -> StageKey:
    """A LABCLIP base: a scratch model trained on the colour images' attribute captions."""
    return StageKey("scratch", object_set, "colors", seed=seed)


def finetune_key(object_set: str, variant: str, seed: int) -> StageKey:
    return StageKey("finetune", object_set, variant=variant, seed=seed)


def labclip_key(object_set: str, seed: int) -> StageKey:
    return StageKey("labclip", object_set, seed=seed)


def probe_key(model: StageKey) -> StageKey:
    """The probes of a trained model."""
    return StageKey("probe", model.object_set, model=model)


def shift_probe_key(model: StageKey, role: str) -> StageKey:
    """The probes of a trained model on a SHIFT_ROLES render (held-out compositions, another world)."""
    if role not in SHIFT_ROLES:
        raise ValueError(f"shift role {role!r}")
    return StageKey("probe", model.object_set, role, model=model)


def prior_key(object_set: str, seed: int, variant: str | None = None) -> StageKey:
    """The probes of a seed's untrained initial weights (the architecture's prior); with a
    variant, those of the variant's own text tower (one whose tower differs from the baseline's)."""
    return StageKey("probe", object_set, seed=seed, variant=variant)


REPORT = StageKey("report")


# ---------------------------------------------------------------- folders

def stage_folder(out: str | Path, stage_id: str) -> Path:
    """OUT/stages/<id>, refused (UserError) unless it is one folder directly inside
    OUT/stages: a run deletes and rewrites stage folders, so a name holding '..' or a
    separator, or a folder that is a link to elsewhere, must never be one."""
    root = Path(out) / STAGES
    folder = root / stage_id
    plain = (isinstance(stage_id, str) and stage_id not in ("", ".", "..")
             and not any(c in stage_id for c in "/\\\0"))
    if not plain or folder.resolve().parent != root.resolve():
        raise UserError(f"stage folder {folder} would lie outside {root}; a stage id must be one plain folder "
                        "name (check the recipe's names) and no stage folder may be a link")
    return folder
