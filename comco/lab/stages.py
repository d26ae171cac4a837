"""What each kind of lab stage does, as calls into the project's own entry points.

`execute(kind, config, deps, out, threads)` runs one stage into its folder `out` and
returns a JSON summary. `deps` maps a role ("data", "model", "test") to the folder of
the stage that provides it. torch and bpy load inside the stage functions only.

- render:   comco.render.run_render (draft Workbench at low resolution); resumes a
            render that a crash interrupted.
- captions: the caption variant of a rendered dataset for one --order-bias p: each
            record re-planned with p keeps every object, position, light and image,
            and takes the new mention orders and captions (checked field by field).
- scratch / finetune / labclip: comco.train.run.run_training (resumes from its checkpoint).
- probe:    comco.probes.run_probes (TOR, IOR), comco.probes.sensitivity (TOR on summary
            sentences, text sensitivity), comco.probes.gates (the competence gates and the
            present-only IOR) and comco.probes.natural.run (DeBias analyses). With
            config["prior"] it probes the untrained initial weights of a scratch seed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

from comco.io import write_json, write_jsonl
from comco.record import PLACEMENT_FIELDS

DATA = "data"  # a stage's dataset lives in OUT/data
RESULTS = "results.json"


def execute(kind: str, config: dict, deps: dict[str, str], out: str, threads: int = 1) -> dict:
    out_path = Path(out)
    out_path.mkdir(parents=True, exist_ok=True)
    dep_paths = {role: Path(p) for role, p in deps.items()}
    if kind not in ("render", "captions", "report"):
        _set_threads(threads)
    fn = {"render": render, "captions": captions, "scratch": scratch, "finetune": finetune,
          "labclip": labclip, "probe": probe}[kind]
    summary = fn(config, dep_paths, out_path)
    if kind in ("scratch", "finetune", "labclip", "probe"):
        summary["machine"] = provenance(config, summary)
    return summary


def provenance(config: dict, summary: dict) -> dict:
    """machine() with the float precision the stage's numbers were computed in: a training's
    autocast (as the trainer resolved it, in its summary), a probe's embeddings (fp32 on a CPU,
    fp16 autocast on a GPU: comco.probes.embed)."""
    out = machine(config)
    out["precision"] = summary.get("precision") or ("fp32" if out["device"] == "cpu" else "fp16")
    return out


# environment variables that change which kernels run or how many threads split a sum
NUMERIC_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS",
               "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "CUBLAS_WORKSPACE_CONFIG")
# the CPU flags that decide the kernels torch, oneDNN and MKL pick (vector widths, bf16/int8 units)
KERNEL_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve", "sve2", "bf16")


def machine(config: dict) -> dict:
    """Where a stage's numbers were made: enough to tell two runs apart. Training and probing
    are bit-reproducible on one machine (the same CPU model and flags, library builds, thread
    counts and precision), not across CPU types: torch, oneDNN and MKL pick their kernels by the
    CPU's flags, a sum split over another number of threads rounds differently, and a trained
    model's small differences grow (docs/reference/reproducibility.md)."""
    import platform

    import torch

    from comco.train import cpu_flags

    device = _device(config)
    flags = cpu_flags()
    out = {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
           "threads": torch.get_num_threads(), "interop_threads": torch.get_num_interop_threads(),
           "device": device, "cpu": _cpu_name(), "machine": platform.machine(),
           "cpu_flags": " ".join(f for f in KERNEL_FLAGS if f in flags) or "unknown",
           "cpu_flags_sha": hashlib.sha256(" ".join(flags).encode()).hexdigest()[:16] if flags else None,
           "torch_build": torch_build(), "numpy_blas": _numpy_blas(),
           "env": {k: os.environ[k] for k in NUMERIC_ENV if k in os.environ}}
    if device == "cuda":
        out["gpu"] = torch.cuda.get_device_name()
    return out


def torch_build() -> dict:
    """torch's build as torch.__config__.show() gives it: BLAS and LAPACK, the MKL and oneDNN
    versions, the commit, and a digest of the whole text (any other difference shows there)."""
    import torch

    text = torch.__config__.show()
    out = {"sha": hashlib.sha256(text.encode()).hexdigest()[:16]}
    for line in text.splitlines():
        line = line.strip(" -")
        if "Math Kernel Library Version" in line:
            out["mkl"] = line.split("Version", 1)[1].split("for", 1)[0].strip()
        elif line.startswith(("Intel(R) MKL-DNN", "oneDNN")):
            words = line.split()  # "Intel(R) MKL-DNN v3.12.0 (Git Hash ...)" or "oneDNN v3.12.0 ..."
            out["onednn"] = words[2 if line.startswith("Intel") else 1] if len(words) > 2 else words[-1]
        elif line.startswith("Build settings:"):
            for item in line.split(":", 1)[1].split(", "):
                key, _, value = item.partition("=")
                names = {"BLAS_INFO": "blas", "LAPACK_INFO": "lapack", "COMMIT_SHA": "commit"}
                if key.strip() in names:
                    out[names[key.strip()]] = value.strip()
    return out


def _numpy_blas() -> str:
    """numpy's BLAS (the probes' cosines and the bootstrap run through it)."""
    import numpy as np

    try:
        blas = (np.show_config(mode="dicts") or {}).get("Build Dependencies", {}).get("blas", {})
    except (TypeError, ValueError, AttributeError):  # numpy < 1.25 prints only
        return "unknown"
    return f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown"


def _set_threads(threads: int) -> None:
    import torch

    if threads > 0:
        torch.set_num_threads(threads)


def _versions() -> dict:
    from importlib import metadata

    out = {}
    for dist in ("bpy", "torch", "open_clip_torch", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def file_sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


# ---------------------------------------------------------------- render

def plan_config(config: dict):
    """A stage's data settings as a PlanConfig (PlanConfig.from_dict reads the recipe's forms)."""
    from comco.plan import PlanConfig, plan_options

    names = {o.name for o in plan_options()}
    return PlanConfig.from_dict({"order_policy": "random", **{k: v for k, v in config.items() if k in names}})


def render(config: dict, deps: dict, out: Path) -> dict:
    from comco.render import RenderOptions, run_render

    if config.get("shards"):  # the merge of a render made in shards (comco.lab.shards)
        return _merge(config, deps, out)
    cfg = plan_config(config)
    workers = config["workers"] or (os.cpu_count() or 1)
    opts = RenderOptions(preset=config["preset"], device=config["device"], workers=workers,
                         singles=config["singles"], threads=1 if config["preset"] == "draft" else 0,
                         shard=tuple(config.get("shard", (0, 1))))
    summary = run_render(cfg, opts, out / DATA, resume=True, quiet=True)
    return _render_summary(out, summary)


def _merge(config: dict, deps: dict, out: Path) -> dict:
    """`comco dataset merge` of the shard stages, into a fresh folder (a merge is redone whole)."""
    from comco.data import merge_shards

    shutil.rmtree(out / DATA, ignore_errors=True)
    summary = merge_shards([deps[f"shard{i}"] / DATA for i in range(config["shards"])], out / DATA)
    return _render_summary(out, summary)


def _render_summary(out: Path, summary: dict) -> dict:
    from comco.data import Dataset

    ds = Dataset(out / DATA)
    failed = summary["failures"]  # a render's list of failures, a merge's count
    return {"images": summary["images"], "singles": summary["singles"],
            "failed": failed if isinstance(failed, int) else len(failed),
            "config_hash": ds.info["config_hash"], "scenes_sha256": file_sha(out / DATA / "scenes.jsonl"),
            "object_set_hash": ds.info["object_set_hash"], "versions": _versions()}


# ---------------------------------------------------------------- caption variants



def captions(config: dict, deps: dict, out: Path) -> dict:
    """The rendered dataset with mention orders and captions re-planned at order bias p."""
    from comco.data import INFO, SCENES, Dataset, config_hash
    from comco.manifest import load_object_set
    from comco.plan import PlanConfig, Planner

    base = Dataset(deps["data"] / DATA)
    info = json.loads(json.dumps(base.info))
    cfg = PlanConfig.from_dict({**info["config"], "order_bias": float(config["order_bias"])})
    planner = Planner(cfg, load_object_set(cfg.object_set))
    records, first, largest_first = [], 0, 0
    for rec in base.records():
        again = planner.replan(rec["index"], rec["retry"])
        _check_same_scene(rec, again)
        new = dict(rec)
        new["mention_orders"], new["captions"] = again["mention_orders"], again["captions"]
        records.append(new)
        large = [o["size_rank"] for o in rec["objects"]].index(0)
        for order in new["mention_orders"]:
            first += 1
            largest_first += order[0] == large
    data = out / DATA
    data.mkdir(parents=True, exist_ok=True)
    for folder in ("images", "singles", "depth", "normals"):  # the same files: only the captions differ
        link = data / folder
        if link.is_symlink() or link.exists():
            link.unlink()
        if (base.root / folder).is_dir():
            link.symlink_to(os.path.relpath(base.root / folder, data), target_is_directory=True)
    write_jsonl(data / SCENES, records)
    info["config"]["order_bias"] = cfg.order_bias
    info["derived_from"] = {"config_hash": base.info["config_hash"], "root": str(base.root)}
    info["config_hash"] = config_hash(info["config"], info["object_set_hash"])
    write_json(data / INFO, info)
    return {"images": len(records), "order_bias": cfg.order_bias, "captions": first,
            "largest_first_share": largest_first / max(1, first), "config_hash": info["config_hash"],
            "scenes_sha256": file_sha(data / SCENES)}


def _check_same_scene(rendered: dict, planned: dict) -> None:
    """Everything that makes the image must match the rendered record."""
    for key in PLACEMENT_FIELDS:
        if rendered.get(key) != planned.get(key):
            raise RuntimeError(f"scene {rendered['id']}: '{key}' changed with the order bias; "
                               "the planner must draw mention orders from their own stream")
    strip = lambda objs: [{k: v for k, v in o.items() if k != "measured"} for o in objs]  # noqa: E731
    if strip(rendered["objects"]) != strip(planned["objects"]):
        raise RuntimeError(f"scene {rendered['id']}: objects changed with the order bias")


# ---------------------------------------------------------------- training

def _train(kind: str, out: Path, data: Path, config: dict, options: dict, **extra) -> dict:
    from comco.train import make_config, run_training

    checkpoint = out / "checkpoint.pt"
    steps = config["steps"]
    # no precision in the config: what every stage trained in before the key (comco.lab.graph)
    precision = config.get("precision", "fp32" if _device(config) == "cpu" else "auto")
    cfg = make_config(kind, data=str(data), out=str(out), seed=config["seed"], steps=steps,
                      batch_size=config["batch_size"], lr=config["lr"], device=config["device"],
                      checkpoint_every=max(1, steps // 3), quiet=True, precision=precision,
                      resume=str(checkpoint) if checkpoint.is_file() else None, options=options, **extra)
    t0 = time.perf_counter()
    summary = run_training(cfg)
    shutil.rmtree(out / "cache", ignore_errors=True)
    checkpoint.unlink(missing_ok=True)
    last = summary.get("last") or {}
    return {"steps": summary["step"], "loss": last.get("loss"), "train_seconds": time.perf_counter() - t0,
            "precision": summary.get("precision"),
            "model": "model.pt", "data_config_hash": json.loads((data / "dataset.json").read_text())["config_hash"],
            **{k: summary[k] for k in ("binding_before", "binding_after", "n_train", "n_test") if k in summary}}


def scratch(config: dict, deps: dict, out: Path) -> dict:
    w, layers = config["width"], config["layers"]
    options = {"captions": config["captions"], "resolution": config["resolution"],
               "patch_size": config["patch_size"], "context_length": config["context_length"],
               "vision_width": w, "text_width": w, "embed_dim": w, "vision_layers": layers, "text_layers": layers,
               "vision_tower": config.get("tower", "vit"), **_origins(config)}
    return _train("scratch", out, deps["data"] / DATA, config, options, warmup=config["warmup"],
                  weight_decay=config["weight_decay"], workers=0)


# issue 26's origins options, as a scratch stage config carries them (the recipe's keys of
# the same names, comco.lab.recipe)
TOWER_KEYS = ("text_attention", "text_pool")  # a variant that sets one names its whole text tower
TRAINING_KEYS = ("objective", "checkpoints", "checkpoint_spacing", "siglip_bias")  # how it trains, not its size
# how every scratch-trained model of a recipe trains (the baseline, its variants, the colour bases):
# a fixed temperature in place of open_clip's learned one (comco.train.scratch.fix_logit_scale)
SHARED_TRAINING_KEYS = ("logit_scale",)


def _origins(config: dict) -> dict:
    """The scratch options of issue 26's origins keys a stage config carries (text tower,
    objective, saved checkpoints); none when the recipe leaves them out."""
    return {k: config[k] for k in (*TOWER_KEYS, *TRAINING_KEYS, *SHARED_TRAINING_KEYS) if k in config}


def finetune(config: dict, deps: dict, out: Path) -> dict:
    return _train(config["kind"], out, deps["data"] / DATA, config, dict(config["options"]),
                  init=f"ckpt:{deps['model'] / 'model.pt'}", warmup=config["warmup"],
                  weight_decay=config["weight_decay"], workers=0,
                  adam_betas=tuple(config.get("adam_betas", (0.9, 0.999))), adam_eps=config.get("adam_eps", 1e-8))


def labclip(config: dict, deps: dict, out: Path) -> dict:
    """LABCLIP on a frozen model; the binding probe before (base) and after (with the map)."""
    from comco.models import ModelRef
    from comco.probes import ProbeOptions, run_probes

    base = deps["model"] / "model.pt"
    summary = _train("labclip", out, deps["data"] / DATA, config, {}, init=f"ckpt:{base}")
    opts = ProbeOptions(probes=["binding"], n_boot=config["bootstrap"], seed=config["seed"], device=_device(config),
                        cache_dir=None, plots=False)
    results = run_probes(deps["data"] / DATA, [ModelRef(f"ckpt:{base}"), ModelRef(f"ckpt:{out / 'model.pt'}")], opts,
                         quiet=True)
    labels = [m["label"] for m in results["models"]]
    probes = {}
    for name, label in zip(("before", "after"), labels):
        stats = results["probes"]["binding"][label][0]["metrics"]["accuracy"]
        probes[name] = {s["role"]: _stat(s) for s in stats}
    summary["binding_probe"] = probes
    return summary


def _device(config: dict) -> str:
    if config.get("device", "auto") != "auto":
        return config["device"]
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


# ---------------------------------------------------------------- probes

def _stat(s: dict) -> dict:
    v = s.get("acc", s.get("mean"))
    out = {"role": s["role"], "value": v, "lo": s["lo"], "hi": s["hi"], "n": s["n"], "clusters": s.get("clusters"),
           "chance": s.get("chance")}
    if s.get("ties") is not None:  # queries decided by rounding, left out of n (comco.probes.retrieval.near_ties)
        out["ties"] = s["ties"]
    return out


def _groups(groups: list[dict]) -> dict:
    """{n_objects: {"unconditional": [...], "conditional": [...], "kept", "queries"}}."""
    out = {}
    for g in groups:
        out[str(g["n_objects"])] = {
            "unconditional": [_stat(s) for s in g["metrics"]["unconditional"]],
            "conditional": [_stat(s) for s in g["metrics"]["conditional"]],
            "kept": g.get("kept_conditional"), "queries": g.get("queries"), "skipped": g.get("skipped", 0),
            "ties": g.get("ties", 0)}
    return out


def _prior_model(config: dict, out: Path) -> Path:
    """The untrained initial weights of the scratch run of one seed (same architecture)."""
    from comco.train import save_initial

    p = config["prior"]
    w, layers = p["width"], p["layers"]
    options = {"resolution": p["resolution"], "patch_size": p["patch_size"], "context_length": p["context_length"],
               "vision_width": w, "text_width": w, "embed_dim": w, "vision_layers": layers, "text_layers": layers,
               "vision_tower": p.get("tower", "vit"), **_origins(p)}
    return save_initial(out / "model.pt", p["seed"], options)


def _analyses(payload: dict) -> dict:
    out = {}
    for name, entry in payload["models"][0]["analyses"].items():
        out[name] = {
            "direction": entry["direction"], "n_captions": entry["n_captions"],
            "variants": {v: {d: {"value": r[d]["R@1"], "lo": r[d]["R@1_ci95"][0], "hi": r[d]["R@1_ci95"][1]}
                             for d in ("t2i", "i2t")} for v, r in entry["variants"].items()}}
    return out


def shift_probe(config: dict, deps: dict, out: Path) -> dict:
    """TOR and IOR of a trained model on a shifted render (config["shift"]: held-out compositions or
    another world), split by config["by"] where set: the whole set's groups and each cell's."""
    from comco.models import ModelRef
    from comco.probes import ProbeOptions, run_probes

    opts = ProbeOptions(probes=["tor", "ior"], templates=config["tor_templates"], batch_size=config["batch_size"],
                        device=_device(config), cache_dir=None, plots=False, tor_gallery=config["tor_gallery"],
                        n_boot=config["bootstrap"], seed=config["seed"], by=config["by"])
    results = run_probes(deps["test"] / DATA, [ModelRef(f"ckpt:{deps['model'] / 'model.pt'}")], opts, quiet=True)
    label = results["models"][0]["label"]

    def part(cell):
        tor: dict[str, list] = {}
        for g in results["probes"]["tor"][label]:
            if g.get("cell") == cell:
                tor.setdefault(g["template"], []).append(g)
        return {"tor": {t: _groups(gs) for t, gs in tor.items()},
                "ior": _groups([g for g in results["probes"]["ior"][label] if g.get("cell") == cell])}

    res = {"shift": config["shift"], **part(None), "test_hash": results["dataset"]["hash"]}
    if results.get("by"):
        res["by"] = results["by"]
        res["cells"] = {cell: part(cell) for cell in results["by"]["cells"]}
    write_json(out / RESULTS, res, indent=1, sort_keys=False)
    return {"results": RESULTS}


def probe(config: dict, deps: dict, out: Path) -> dict:
    if config.get("shift"):
        return shift_probe(config, deps, out)
    from comco.models import ModelRef, load_model
    from comco.probes import (
        Embedder,
        ProbeOptions,
        gate_figures,
        ior_present_only,
        open_dataset,
        run_probes,
        sensitivity,
        tor_summary,
    )

    weights = _prior_model(config, out) if config.get("prior") else deps["model"] / "model.pt"
    model = f"ckpt:{weights}"
    test = deps["test"] / DATA
    device = _device(config)
    kw = {"n_boot": config["bootstrap"], "seed": config["seed"]}
    gallery = config.get("tor_gallery", "names")
    opts = ProbeOptions(probes=["tor", "ior"], templates=config["tor_templates"], batch_size=config["batch_size"],
                        device=device, cache_dir=None, plots=False, tor_gallery=gallery, **kw)
    results = run_probes(test, [ModelRef(model)], opts, quiet=True)
    label = results["models"][0]["label"]
    tor_by_template: dict[str, list] = {}
    for g in results["probes"]["tor"][label]:
        tor_by_template.setdefault(g["template"], []).append(g)
    res = {"tor": {t: _groups(gs) for t, gs in tor_by_template.items()},
           "ior": _groups(results["probes"]["ior"][label]), "test_hash": results["dataset"]["hash"]}
    data = open_dataset(test)
    loaded = load_model(model, None, device)
    emb = Embedder(loaded, cache_dir=None, batch_size=config["batch_size"])
    res["sensitivity"] = sensitivity(data, emb, "and", **kw)
    # the gates on the test images captioned as the model was taught (deps["gate"]); the same
    # figures on the order-balanced captions are kept beside them: their gap is order reliance
    gate_data = open_dataset(deps["gate"] / DATA) if "gate" in deps else data
    gates = lambda d: {k: _stat({**v, "role": k}) for k, v in  # noqa: E731
                       gate_figures(d, emb, config["tor_templates"][0], **kw).items()}
    res["gates"] = gates(gate_data)
    res["gates_balanced"] = gates(data) if gate_data is not data else res["gates"]
    if config.get("text_only"):  # a text tower trained without images: its own competence gate
        from comco.probes import caption_retrieval

        res["gates"]["caption R@1"] = _stat({**caption_retrieval(gate_data, emb, config["tor_templates"][0], **kw),
                                             "role": "caption R@1"})
    if config.get("development"):  # every checkpoint the scratch run saved, the untrained one first
        from comco.probes import development_point
        from comco.train import list_snapshots

        res["development"] = [
            {"step": step, **development_point(data, Embedder(load_model(f"ckpt:{path}", None, device), cache_dir=None,
                                                              batch_size=config["batch_size"]),
                                               config["tor_templates"][0], seed=config["seed"])}
            for step, path in list_snapshots(deps["model"])]
    if config.get("half_truths"):  # issue 39: the image's caption against itself plus one wrong detail
        from comco.probes import HALF_TRUTH_METRIC, half_truth_groups

        res["half_truths"] = {str(g["n_objects"] or "all"): [_stat(s) for s in g["metrics"][HALF_TRUTH_METRIC]]
                              for g in half_truth_groups(data, emb, config["tor_templates"][0], **kw)}
    res["ior_present"] = {str(g["n_objects"]): [_stat(s) for s in g["metrics"]["present_only"]]
                          for g in ior_present_only(data, emb, **kw)}
    if config["summary"]:
        res["tor"]["summary"] = _groups(tor_summary(data, emb, gallery=gallery, **kw))
    if config["analyses"]:
        from comco.probes.natural import run_natural_eval

        payload = run_natural_eval("analyses", "comco", test, [ModelRef(model)], "all", out / "analyses",
                                   device=device, batch_size=config["batch_size"], cache_dir=None,
                                   analyses=tuple(config["analyses"]))
        res["analyses"] = _analyses(payload)
        # the Keep gate: long-caption text-to-image R@1 on the captions the model was taught
        keep = res["analyses"].get("summary")
        if gate_data is not data:
            keep = _analyses(run_natural_eval(
                "analyses", "comco", deps["gate"] / DATA, [ModelRef(model)], "all", out / "keep", device=device,
                batch_size=config["batch_size"], cache_dir=None, analyses=("summary",)))["summary"]
        if keep:
            res["gates"]["Keep"] = {"role": "Keep", **keep["variants"]["keep"]["t2i"], "n": keep["n_captions"],
                                    "chance": 1.0 / max(1, len(gate_data.records))}
    write_json(out / RESULTS, res, indent=1, sort_keys=False)
    return {"results": RESULTS}
