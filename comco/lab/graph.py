"""A recipe as a graph of stages, each with the hash of everything it depends on.

A stage's hash covers its kind, its own settings, the hashes of the stages it reads
and a digest of the source code that computes it. A stage whose hash matches a
finished run of it is not run again; changing one setting changes the hash of that
stage and of every stage downstream of it, and nothing else.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from comco import __version__
from comco.lab.keys import (
    CAPTION_ROLES,
    COLOUR_BASE_SEED_OFFSET,
    COLOUR_MAP_SEED_OFFSET,
    REPORT,
    SHIFT_ROLES,
    StageKey,
    captions_key,
    colour_base_key,
    finetune_key,
    labclip_key,
    prior_key,
    probe_key,
    render_key,
    scratch_key,
    shift_probe_key,
    stage_folder,
)
from comco.lab.plan_keys import plan_settings
from comco.lab.recipe import Recipe, variant_settings
from comco.lab.shards import split_renders
from comco.lab.stages import SHARED_TRAINING_KEYS, TOWER_KEYS, TRAINING_KEYS
from comco.train import is_text_only

# The code each kind of stage runs, as whole packages (every .py and .toml under them;
# "comco" alone means the core modules directly in comco/), so that no module a stage
# imports can change without the stage running again. tests/test_lab_digest.py checks
# that every module a stage can import is covered.
_CORE = ("comco", "comco.assets")
_RENDER_CODE = _CORE + ("comco.plan", "comco.data", "comco.render", "comco.scenes")
_MODEL_CODE = _CORE + ("comco.plan", "comco.data", "comco.models", "comco.probes", "comco.report")
_TRAIN_CODE = _MODEL_CODE + ("comco.train",)
CODE = {
    "render": _RENDER_CODE,
    "captions": _CORE + ("comco.plan", "comco.data"),
    "scratch": _TRAIN_CODE,
    "finetune": _TRAIN_CODE,
    "labclip": _TRAIN_CODE,
    "probe": _TRAIN_CODE,  # the analyses run through the natural-benchmark code the trainers share
    # the report reads every stage's results; it takes seconds, so any change redoes it
    "report": _TRAIN_CODE + ("comco.lab", "comco.render", "comco.scenes"),
}
# Stages that run inside the lab's own process: renders bring their own worker pool and
# use every core; the others are pure Python and take seconds.
INLINE = {"render", "captions", "report"}


@dataclass
class Stage:
    """One stage of the graph: its key, its own settings, the stages it reads by role, its hash.

    `id` and `kind` come from the key; `deps` maps a role ("data", "model", "test", "gate")
    to the id of the stage that provides it (ids, so run folders and hashes read as before).
    """

    key: StageKey
    config: dict
    deps: dict[str, str] = field(default_factory=dict)  # role -> stage id
    hash: str = ""

    @property
    def id(self) -> str:
        return self.key.id

    @property
    def kind(self) -> str:
        return self.key.kind

    @property
    def inline(self) -> bool:
        return self.kind in INLINE

    def folder(self, out: str | Path) -> Path:
        """OUT/stages/<id>, checked to lie inside OUT/stages."""
        return stage_folder(out, self.id)


def _stage(key: StageKey, config: dict, **deps: StageKey) -> Stage:
    return Stage(key, config, {role: dep.id for role, dep in deps.items()})


class Stages(list):
    """The stages of a run in graph order, looked up by key."""

    def __init__(self, stages=()):
        super().__init__(stages)
        self._by_key = {s.key: s for s in self}
        if len(self._by_key) != len(self) or len({s.id for s in self}) != len(self):
            raise ValueError("two stages share a key or an id")

    def get(self, key: StageKey) -> Stage | None:
        return self._by_key.get(key)

    def __contains__(self, key) -> bool:
        return key in self._by_key if isinstance(key, StageKey) else list.__contains__(self, key)

    def find(self, kind: str, **fields) -> list[Stage]:
        """Every stage of `kind` whose key has these field values, in graph order."""
        return [s for s in self if s.kind == kind and all(getattr(s.key, k) == v for k, v in fields.items())]


def _files(package: str) -> list[Path]:
    """Source and data files of a package ("comco" alone: only the core modules beside
    comco/__init__.py, not its subpackages)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{package} is not a package")
    folders = [Path(d) for d in spec.submodule_search_locations]
    if package == "comco":
        return sorted(p for d in folders for p in d.glob("*.py"))
    return sorted(p for d in folders for p in d.rglob("*") if p.suffix in (".py", ".toml") and p.is_file())


def code_files(kind: str) -> list[Path]:
    """Every file whose content is in the digest of a kind of stage."""
    stages = Path(importlib.util.find_spec("comco.lab.stages").origin)
    return sorted({p for package in CODE[kind] for p in _files(package)} | {stages})


@lru_cache(maxsize=None)
def code_digest(kind: str) -> str:
    h = hashlib.sha256(__version__.encode())
    for path in code_files(kind):
        h.update(f"{path.parent.name}/{path.name}".encode())  # not the checkout's place: runs move
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def stage_hash(stage: Stage, dep_hashes: dict[str, str]) -> str:
    blob = json.dumps({"kind": stage.kind, "config": stage.config, "deps": dep_hashes,
                       "code": code_digest(stage.kind)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]




def build_stages(recipe: Recipe) -> Stages:
    """Every stage of the recipe at its scale, in an order where deps come first."""
    want = set(recipe.stages)
    stages: list[Stage] = []
    for oset in recipe.settings["data"]["object_sets"]:
        parts = _Parts(recipe, oset)
        if "render" in want:
            stages += parts.renders(colours="labclip" in want)
        if "captions" in want:
            stages += parts.captions(colours="labclip" in want, tests="probe" in want)
        if "scratch" not in want:
            continue
        if "probe" in want:
            stages += parts.priors()
        stages += parts.scratch(probes="probe" in want, analyses="analyses" in want)
        if "finetune" in want:
            stages += parts.finetunes(probes="probe" in want, analyses="analyses" in want)
        if "labclip" in want:
            stages += parts.labclip()
    if "report" in want:
        stages.append(Stage(REPORT, {"recipe": recipe.to_dict()}, {st.id: st.id for st in stages}))
    # comco.lab.shards: large renders as shard stages and a merge
    stages = Stages(split_renders(stages, recipe.settings["render"]))
    by_id = {st.id: st for st in stages}
    for st in stages:  # deps precede their users in the list, so one pass hashes them all
        st.hash = stage_hash(st, {role: by_id[d].hash for role, d in st.deps.items()})
    return stages


class _Parts:
    """The stages of one object set, section by section (the settings each kind shares)."""

    def __init__(self, recipe: Recipe, oset: str):
        s = recipe.settings
        self.oset = oset
        self.data, self.render, self.sc, self.ft, self.probe, self.lab = (
            s[k] for k in ("data", "render", "scratch", "finetune", "probe", "labclip"))
        self.device = s["run"]["device"]
        # the trainings' precision, resolved here on the driver (part of each stage's hash): on a
        # CPU by this machine's flags and the training's kind (comco.train.precision: auto is bf16
        # for the scratch trainings where the CPU has native bf16, fp32 otherwise); on a GPU, or a
        # device chosen at run time, by the trainer. A stage whose precision is what every stage
        # had before the key (fp32 on a CPU, the trainer's auto elsewhere) carries none: same hash.
        self.precision = {kind: self._precision(s["run"].get("precision", "auto"), kind)
                          for kind in ("scratch", "finetune", "labclip")}
        render, sc, probe = self.render, self.sc, self.probe
        self.plan_common = plan_settings(s)  # layout, large_slot, ... resolution: the planning options the recipe keys
        self.render_opts = {"preset": render["preset"], "workers": render["workers"], "device": render["device"]}
        self.model_size = {"tower": sc["tower"], "width": sc["width"], "layers": sc["layers"],
                           "patch_size": sc["patch_size"], "context_length": sc["context_length"],
                           "resolution": render["resolution"]}
        # issue 26's origins keys, only where the recipe sets them (the stage configs stay as they were)
        self.model_size.update({k: sc[k] for k in TOWER_KEYS if k in sc})
        self.trained_as = {k: sc[k] for k in TRAINING_KEYS if k in sc}
        self.shared_training = {k: sc[k] for k in SHARED_TRAINING_KEYS if k in sc}
        # the recipe's own scratch models (None, the baseline), then each [[scratch.variants]] entry
        self.variants: dict[str | None, dict] = {None: {}}
        for v in sc.get("variants", []):
            self.variants[v["name"]] = variant_settings(sc, v)
        self.probe_cfg = {"bootstrap": probe["bootstrap"], "seed": probe["seed"],
                          "tor_templates": probe["tor_templates"], "batch_size": probe["batch_size"],
                          "device": self.device,
                          "tor_gallery": "names"}  # ComCO's bare-name gallery (part of the hash: numbers differ)

    def _precision(self, requested: str, kind: str) -> dict:
        if self.device == "cpu":
            from comco.train import cpu_precision

            resolved = cpu_precision(requested, kind=kind)
            return {} if resolved == "fp32" else {"precision": resolved}
        return {} if requested == "auto" else {"precision": requested}

    def _render(self, role: str, objects, n: int, seed: int, captions, colors: bool, singles: bool,
                **plan) -> Stage:
        return _stage(render_key(role, self.oset), {
            "role": role, "object_set": self.oset, "objects": objects, "n": n, "seed": seed, "captions": captions,
            "colors": colors, "singles": singles, **self.plan_common, **plan, **self.render_opts})

    def shifts(self) -> dict[str, dict]:
        """SHIFT_ROLES render -> what it plans beside the test set's options: the test scenes'
        mixed split of data.holdout (seen and held-out combinations, one probe split by them),
        the test scenes themselves in data.shift_world (a world draws from its own stream, so
        only the world differs)."""
        out = {}
        if self.data.get("holdout"):
            out["heldout"] = {"holdout_split": "mixed"}
        if self.data.get("shift_world"):
            out["shifted"] = {"world": self.data["shift_world"]}
        return out

    def renders(self, colours: bool) -> list[Stage]:
        d, lab = self.data, self.lab
        test = (d["test_objects"], d["test_images"], d["test_seed"], d["captions"], False, True)
        out = [self._render("train", d["train_objects"], d["train_images"], d["seed"], d["captions"], False, False),
               self._render("test", *test)]
        out += [self._render(role, *test, **plan) for role, plan in self.shifts().items()]
        if colours:
            # the LABCLIP base learns names and colours from its own colour images; the map
            # and the binding probe use others
            out += [self._render("colors-train", lab["objects"], lab["base_images"],
                                 d["seed"] + COLOUR_BASE_SEED_OFFSET, ["attributes"], True, False),
                    self._render("colors", lab["objects"], lab["images"],
                                 d["seed"] + COLOUR_MAP_SEED_OFFSET, ["attributes"], True, False)]
        return out

    def _captions(self, role: str, p: float) -> Stage:
        return _stage(captions_key(role, self.oset, p), {"order_bias": p},
                      data=render_key(CAPTION_ROLES[role], self.oset))

    def captions(self, colours: bool, tests: bool) -> list[Stage]:
        out = [self._captions("colors", self.lab["order_bias"])] if colours else []  # the base's, at its own p
        for p in self.data["order_bias"]:
            out.append(self._captions("train", p))
            if tests:
                # the held-out images captioned the way the models at p were taught: the
                # competence gates ask whether a model learnt its own task, the bias probes
                # (on the order-balanced test set) what it does beyond it
                out.append(self._captions("test", p))
        return out

    def _size(self, variant: str | None) -> dict:
        """The model_size of a scratch variant: its own text tower over the baseline's sizes."""
        if variant is None:
            return self.model_size
        base = {k: v for k, v in self.model_size.items() if k not in TOWER_KEYS}
        return {**base, **{k: v for k, v in self.variants[variant].items() if k in TOWER_KEYS}}

    def _trained_as(self, variant: str | None) -> dict:
        if variant is None:
            return self.trained_as
        return {k: v for k, v in self.variants[variant].items() if k in TRAINING_KEYS}

    def prior_variant(self, variant: str | None) -> str | None:
        """Whose untrained tower a variant's prior is: its own where its text tower differs
        from the baseline's, else the baseline's (None)."""
        return variant if variant is not None and self._size(variant) != self.model_size else None

    def priors(self) -> list[Stage]:
        """The architecture's own prior: each seed's untrained initial weights, probed alike
        (one set per distinct text tower of the recipe's scratch variants)."""
        towers = dict.fromkeys(self.prior_variant(v) for v in self.variants)
        return [_stage(prior_key(self.oset, seed, v), {**self.probe_cfg, "summary": True, "analyses": [],
                                                       "prior": {"seed": seed, **self._size(v)}},
                       test=render_key("test", self.oset))
                for v in towers for seed in self.sc["seeds"]]

    def _probe(self, model: StageKey, p: float, summary: bool, analyses: list, **extra) -> Stage:
        return _stage(probe_key(model), {**self.probe_cfg, "summary": summary, "analyses": analyses, **extra},
                      model=model, test=render_key("test", self.oset), gate=captions_key("test", self.oset, p))

    def _half_truths(self) -> dict:
        # set only where the recipe asks: the other recipes' probe stage keys stay as they were
        return {"half_truths": True} if self.probe.get("half_truths") else {}

    def _train_cfg(self, seed: int, variant: str | None = None) -> dict:
        sc = self.sc
        return {"seed": seed, "batch_size": sc["batch_size"], "lr": sc["lr"], "warmup": sc["warmup"],
                "weight_decay": sc["weight_decay"], "device": self.device, **self._size(variant),
                **self.shared_training, **self.precision["scratch"]}

    def scratch(self, probes: bool, analyses: bool) -> list[Stage]:
        out = []
        for variant in self.variants:
            for p in self.data["order_bias"]:
                for seed in self.sc["seeds"]:
                    out += self._scratch(variant, p, seed, probes, analyses)
        return out

    def _scratch(self, variant: str | None, p: float, seed: int, probes: bool, analyses: bool) -> list[Stage]:
        key = scratch_key(self.oset, p, seed, variant)
        trained_as = self._trained_as(variant)
        out = [_stage(key, {**self._train_cfg(seed, variant), "captions": self.sc["captions"],
                            "steps": self.sc["steps"], **trained_as},
                      data=captions_key("train", self.oset, p))]
        if probes:
            # TOR and IOR on the shifted renders, split by the held-out side where there is one
            out += [_stage(shift_probe_key(key, role), {**self.probe_cfg, "shift": role,
                                                       "by": "holdout" if role == "heldout" else None},
                           model=key, test=render_key(role, self.oset))
                    for role in SHIFT_ROLES if role in self.shifts()]
            # the DeBias analyses are of the models the fine-tunes start from: the baseline's
            deep = analyses and variant is None and p == self.ft["order_bias"]
            out.append(self._probe(key, p, deep, self.probe["analyses"] if deep else [],
                                   **({"development": True} if self.probe.get("development") else {}),
                                   **self._half_truths(),
                                   **({"text_only": True} if is_text_only(trained_as.get("objective")) else {})))
        return out

    def finetunes(self, probes: bool, analyses: bool) -> list[Stage]:
        ft, p = self.ft, self.ft["order_bias"]
        out = []
        for v in ft["variants"]:
            for seed in self.sc["seeds"]:
                key = finetune_key(self.oset, v["name"], seed)
                options = {"template": "long", "keep": ft["keep"], "pca_rank": ft["pca_rank"],
                           "short_weight": v.get("short_weight", 0.1)}
                if v["kind"] == "debias":
                    options.update({k: v.get(k, True) for k in ("remove_summary", "sample", "pad")})
                if "freeze" in v:  # set only where a variant names it: the stage keys of the rest stay as they were
                    options["freeze"] = v["freeze"]
                out.append(_stage(key, {
                    "kind": v["kind"], "variant": v["name"], "seed": seed, "steps": ft["steps"],
                    "batch_size": ft["batch_size"], "lr": ft["lr"], "warmup": ft["warmup"],
                    "weight_decay": ft["weight_decay"], "device": self.device, "options": options,
                    "adam_betas": [0.9, 0.999], "adam_eps": 1e-8,  # the papers' code's AdamW
                    **self.precision["finetune"]},
                    model=scratch_key(self.oset, p, seed), data=captions_key("train", self.oset, p)))
                if probes:
                    out.append(self._probe(key, p, True, self.probe["analyses"] if analyses else [],
                                           **self._half_truths()))
        return out

    def labclip(self) -> list[Stage]:
        lab, out = self.lab, []
        for seed in lab["seeds"]:
            base = colour_base_key(self.oset, seed)
            out.append(_stage(base, {**self._train_cfg(seed), "captions": ["attributes"], "steps": lab["base_steps"]},
                              data=captions_key("colors", self.oset, lab["order_bias"])))
            out.append(_stage(labclip_key(self.oset, seed), {
                "seed": seed, "steps": lab["steps"], "batch_size": lab["batch_size"], "lr": lab["lr"],
                "device": self.device, "bootstrap": self.probe["bootstrap"], **self.precision["labclip"]},
                model=base, data=render_key("colors", self.oset)))
        return out
