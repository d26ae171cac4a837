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
from comco.lab.recipe import Recipe

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
    id: str
    kind: str
    config: dict
    deps: dict[str, str] = field(default_factory=dict)  # role -> stage id
    hash: str = ""

    @property
    def inline(self) -> bool:
        return self.kind in INLINE


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


def _p(p: float) -> str:
    return f"p{p:g}"


def build_stages(recipe: Recipe) -> list[Stage]:
    """Every stage of the recipe at its scale, in an order where deps come first."""
    s = recipe.settings
    data, render, scratch, ft, probe, lab, run = (s[k] for k in
                                                  ("data", "render", "scratch", "finetune", "probe", "labclip", "run"))
    want = set(recipe.stages)
    device = run["device"]
    stages: list[Stage] = []
    plan_common = {"layout": data["layout"], "large_slot": data["large_slot"], "large_fraction": data["large_fraction"],
                   "small_fraction": data["small_fraction"], "orders": data["orders"],
                   "resolution": render["resolution"]}
    render_opts = {"preset": render["preset"], "workers": render["workers"], "device": render["device"]}
    model_size = {"tower": scratch["tower"], "width": scratch["width"], "layers": scratch["layers"],
                  "patch_size": scratch["patch_size"],
                  "context_length": scratch["context_length"], "resolution": render["resolution"]}
    # issue 26's origins keys, only where the recipe sets them (the stage configs stay as they were)
    model_size.update({k: scratch[k] for k in ("text_attention", "text_pool") if k in scratch})
    trained_as = {k: scratch[k] for k in ("objective", "checkpoints") if k in scratch}
    probe_cfg = {"bootstrap": probe["bootstrap"], "seed": probe["seed"], "tor_templates": probe["tor_templates"],
                 "batch_size": probe["batch_size"], "device": device,
                 "tor_gallery": "names"}  # ComCO's bare-name gallery (part of the stage's hash: numbers differ)

    for oset in data["object_sets"]:
        train_id, test_id, colors_id = f"render-train-{oset}", f"render-test-{oset}", f"render-colors-{oset}"
        if "render" in want:
            stages.append(Stage(train_id, "render", {
                "role": "train", "object_set": oset, "objects": data["train_objects"], "n": data["train_images"],
                "seed": data["seed"], "captions": data["captions"], "colors": False, "singles": False,
                **plan_common, **render_opts}))
            stages.append(Stage(test_id, "render", {
                "role": "test", "object_set": oset, "objects": data["test_objects"], "n": data["test_images"],
                "seed": data["test_seed"], "captions": data["captions"], "colors": False, "singles": True,
                **plan_common, **render_opts}))
            if "labclip" in want:
                # the LABCLIP base learns names and colours from its own colour images; the map
                # and the binding probe use others
                stages.append(Stage(f"render-colors-train-{oset}", "render", {
                    "role": "colors-train", "object_set": oset, "objects": lab["objects"], "n": lab["base_images"],
                    "seed": data["seed"] + 7907, "captions": ["attributes"], "colors": True, "singles": False,
                    **plan_common, **render_opts}))
                stages.append(Stage(colors_id, "render", {
                    "role": "colors", "object_set": oset, "objects": lab["objects"], "n": lab["images"],
                    "seed": data["seed"] + 7919, "captions": ["attributes"], "colors": True, "singles": False,
                    **plan_common, **render_opts}))
        if "captions" in want:
            if "labclip" in want:  # the LABCLIP base's attribute captions at its own order bias
                stages.append(Stage(f"captions-colors-{oset}-{_p(lab['order_bias'])}", "captions",
                                    {"order_bias": lab["order_bias"]}, {"data": f"render-colors-train-{oset}"}))
            for p in data["order_bias"]:
                stages.append(Stage(f"captions-{oset}-{_p(p)}", "captions", {"order_bias": p},
                                    {"data": train_id}))
                if "probe" in want:
                    # the held-out images captioned the way the models at p were taught: the
                    # competence gates ask whether a model learnt its own task, the bias probes
                    # (on the order-balanced test set) what it does beyond it
                    stages.append(Stage(f"captions-test-{oset}-{_p(p)}", "captions", {"order_bias": p},
                                        {"data": test_id}))
        if "scratch" not in want:
            continue
        if "probe" in want:
            # the architecture's own prior: each seed's untrained initial weights, probed alike
            for seed in scratch["seeds"]:
                stages.append(Stage(f"probe-prior-{oset}-s{seed}", "probe", {
                    **probe_cfg, "summary": True, "analyses": [], "prior": {"seed": seed, **model_size}},
                    {"test": test_id}))
        for p in data["order_bias"]:
            for seed in scratch["seeds"]:
                sid = f"scratch-{oset}-{_p(p)}-s{seed}"
                stages.append(Stage(sid, "scratch", {
                    "seed": seed, "captions": scratch["captions"], "steps": scratch["steps"],
                    "batch_size": scratch["batch_size"], "lr": scratch["lr"], "warmup": scratch["warmup"],
                    "weight_decay": scratch["weight_decay"], "device": device, **model_size, **trained_as},
                    {"data": f"captions-{oset}-{_p(p)}"}))
                if "probe" in want:
                    deep = "analyses" in want and p == ft["order_bias"]
                    stages.append(Stage(f"probe-{sid}", "probe", {
                        **probe_cfg, "summary": deep, "analyses": probe["analyses"] if deep else [],
                        **({"development": True} if probe.get("development") else {}),
                        **({"text_only": True} if scratch.get("objective") == "simcse" else {})},
                        {"model": sid, "test": test_id, "gate": f"captions-test-{oset}-{_p(p)}"}))
        if "finetune" in want:
            for v in ft["variants"]:
                for seed in scratch["seeds"]:
                    fid = f"finetune-{oset}-{v['name']}-s{seed}"
                    options = {"template": "long", "keep": ft["keep"], "pca_rank": ft["pca_rank"],
                               "short_weight": v.get("short_weight", 0.1)}
                    if v["kind"] == "debias":
                        options.update({k: v.get(k, True) for k in ("remove_summary", "sample", "pad")})
                    stages.append(Stage(fid, "finetune", {
                        "kind": v["kind"], "variant": v["name"], "seed": seed, "steps": ft["steps"],
                        "batch_size": ft["batch_size"], "lr": ft["lr"], "warmup": ft["warmup"],
                        "weight_decay": ft["weight_decay"], "device": device, "options": options,
                        "adam_betas": [0.9, 0.999], "adam_eps": 1e-8},  # the papers' code's AdamW
                        {"model": f"scratch-{oset}-{_p(ft['order_bias'])}-s{seed}",
                         "data": f"captions-{oset}-{_p(ft['order_bias'])}"}))
                    if "probe" in want:
                        stages.append(Stage(f"probe-{fid}", "probe", {
                            **probe_cfg, "summary": True,
                            "analyses": probe["analyses"] if "analyses" in want else []},
                            {"model": fid, "test": test_id, "gate": f"captions-test-{oset}-{_p(ft['order_bias'])}"}))
        if "labclip" in want:
            for seed in lab["seeds"]:
                base = f"scratch-colors-{oset}-s{seed}"
                stages.append(Stage(base, "scratch", {
                    "seed": seed, "captions": ["attributes"], "steps": lab["base_steps"],
                    "batch_size": scratch["batch_size"], "lr": scratch["lr"], "warmup": scratch["warmup"],
                    "weight_decay": scratch["weight_decay"], "device": device, **model_size},
                    {"data": f"captions-colors-{oset}-{_p(lab['order_bias'])}"}))
                stages.append(Stage(f"labclip-{oset}-s{seed}", "labclip", {
                    "seed": seed, "steps": lab["steps"], "batch_size": lab["batch_size"], "lr": lab["lr"],
                    "device": device, "bootstrap": probe["bootstrap"]},
                    {"model": base, "data": colors_id}))
    if "report" in want:
        stages.append(Stage("report", "report", {"recipe": recipe.to_dict()},
                            {st.id: st.id for st in stages}))
    by_id = {st.id: st for st in stages}
    for st in stages:  # deps precede their users in the list, so one pass hashes them all
        st.hash = stage_hash(st, {role: by_id[d].hash for role, d in st.deps.items()})
    return stages
