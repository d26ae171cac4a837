"""What was run and where: the recipe, versions, datasets, seconds per stage, and the
machines the numbers were made on (the trainings' and probes' own record of torch, its
CPU capability, threads and device)."""

from __future__ import annotations

import json
import platform
import time
from collections import defaultdict

from comco import __version__
from comco.report import Dashes, Doc

REPRODUCIBLE = ("What reproduces where (docs/reference/reproducibility.md): on one machine (the same CPU model and "
                "flags, torch build, thread counts and precision, as recorded above) a rerun gives bit-identical "
                "models and numbers; on another machine (another CPU, another torch or BLAS build, another thread "
                "count or precision) torch, oneDNN and MKL pick other kernels whose rounding differs, training "
                "amplifies it, and the models and numbers differ within the seed spread: what carries across "
                "machines is the verdicts, which is why every verdict is also checked with each seed left out.")
# what tells two machines (and two runs) apart; results from before a field was recorded group under None
MACHINE_FIELDS = ("torch", "cpu_capability", "cpu", "machine", "device", "gpu", "cpu_flags", "cpu_flags_sha",
                  "torch_build", "numpy_blas", "env", "precision")


def machines(info: dict[str, dict]) -> list[dict]:
    """The distinct machines (MACHINE_FIELDS) the stages that made numbers ran on, each with
    its stage count and its torch thread counts; stages from before the record are counted apart."""
    groups: dict[tuple, dict] = {}
    for i in info.values():
        m = (i.get("summary") or {}).get("machine")
        if i.get("kind") not in ("scratch", "finetune", "labclip", "probe"):
            continue
        key = tuple(json.dumps((m or {}).get(f), sort_keys=True) for f in MACHINE_FIELDS) if m else ("not recorded",)
        g = groups.setdefault(key, {**({f: m.get(f) for f in MACHINE_FIELDS} if m else {"recorded": False}),
                                    "stages": 0, "threads": set(), "interop_threads": set()})
        g["stages"] += 1
        for t in ("threads", "interop_threads"):
            if m and m.get(t) is not None:
                g[t].add(m[t])
    return [{**g, "threads": sorted(g["threads"]), "interop_threads": sorted(g["interop_threads"])}
            for g in groups.values()]


def where_made(info: dict[str, dict]) -> dict:
    """results.json's record of where the numbers were made."""
    return {"machines": machines(info), "reproducible": REPRODUCIBLE}


def where_made_paragraph(doc: Doc, made: dict) -> None:
    parts = []
    for m in made["machines"]:
        if m.get("recorded") is False:
            parts.append(f"{m['stages']} stage(s) finished before comco recorded their machine")
            continue
        gpu = f", GPU {m['gpu']}" if m.get("gpu") else ""
        threads = ", ".join(map(str, m["threads"])) or "–"
        text = (f"{m['stages']} stage(s) on {m['cpu']} ({m['machine']}), torch {m['torch']} with CPU "
                f"capability {m['cpu_capability']}, device {m['device']}{gpu}, {threads} torch thread(s)")
        if m.get("cpu_flags"):  # recorded since issue 39
            build = m.get("torch_build") or {}
            interop = ", ".join(map(str, m.get("interop_threads") or [])) or "–"
            env = ", ".join(f"{k}={v}" for k, v in (m.get("env") or {}).items()) or "none set"
            text += (f" ({interop} inter-op), precision {m.get('precision', '–')}; CPU flags {m['cpu_flags']} "
                     f"(all flags sha {m.get('cpu_flags_sha')}); torch build {build.get('sha')} (BLAS "
                     f"{build.get('blas', '–')}, MKL {build.get('mkl', '–')}, oneDNN {build.get('onednn', '–')}); "
                     f"numpy BLAS {m.get('numpy_blas', '–')}; numeric environment variables: {env}")
        parts.append(text)
    doc.p("**Where the numbers were made** (the trainings and probes, as each recorded it): "
          + ("; ".join(parts) if parts else "no training or probe stage ran") + ". " + made["reproducible"])


def what_was_run(doc: Doc, recipe: dict, stages: list, info: dict[str, dict], made: dict) -> None:
    from importlib import metadata

    doc.h(2, "What was run")
    s = recipe["settings"]
    versions = {}
    for dist in ("bpy", "torch", "open_clip_torch", "numpy", "matplotlib"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    doc.p(f"Recipe `{recipe['name']}` at scale `{recipe['scale']}` (the file is copied to `recipe.toml`); "
          f"comco {__version__}, Python {platform.python_version()}, "
          + ", ".join(f"{k} {v}" for k, v in versions.items()) + f"; {platform.platform()}.")
    where_made_paragraph(doc, made)
    doc.p(f"Stages: {', '.join(recipe['stages'])}. "
          f"Order bias p: {', '.join(f'{p:g}' for p in s['data']['order_bias'])}. "
          f"Training seeds: {', '.join(map(str, s['scratch']['seeds']))}; data seed {s['data']['seed']}, test seed "
          f"{s['data']['test_seed']}; probe/bootstrap seed {s['probe']['seed']} ({s['probe']['bootstrap']} resamples). "
          f"Renders: preset `{s['render']['preset']}`, {s['render']['resolution']} px. Scratch CLIP: "
          f"{'conv' if s['scratch'].get('tower') == 'conv' else 'ViT'} image tower, width "
          f"{s['scratch']['width']}, {s['scratch']['layers']} layers, patch {s['scratch']['patch_size']}, context "
          f"{s['scratch']['context_length']}, {s['scratch']['steps']} steps of batch {s['scratch']['batch_size']} "
          f"(lr {s['scratch']['lr']:g}, {temperature(s['scratch'])}) on captions "
          f"{', '.join(s['scratch']['captions'])}.")
    rows, dashes = [], Dashes()
    for st in stages:
        if st.kind in ("render", "captions"):
            sm = info.get(st.id, {}).get("summary", {})
            if sm:
                singles = sm["singles"] if "singles" in sm else \
                    dashes.dash("a captions stage uses its render's single-object renders")
                rows.append([st.id, sm.get("images"), singles, sm.get("config_hash"), sm.get("scenes_sha256")])
    doc.p("Datasets (`config_hash` as in each dataset.json; `scenes sha256` of scenes.jsonl, first 16 hex digits):")
    doc.table(["dataset", "images", "singles", "config_hash", "scenes sha256"], rows)
    if dashes.reasons:
        doc.p(dashes.note())
    by_kind = defaultdict(lambda: [0, 0.0])
    rows = []
    for st in stages:
        i = info.get(st.id)
        if not i:
            continue
        by_kind[st.kind][0] += 1
        by_kind[st.kind][1] += i["seconds"]
        rows.append([st.id, st.kind, f"{i['seconds']:.1f}", i.get("threads", "–"),
                     time.strftime("%Y-%m-%d %H:%M", time.gmtime(i.get("finished", 0)))])
    done = [i for i in info.values() if i]
    span = (max(i["finished"] for i in done) - min(i["finished"] - i["seconds"] for i in done)) if done else 0.0
    doc.p("Wall time per kind of stage (seconds of each stage summed; stages of one kind ran side by side where the "
          "cores allowed, so the sum exceeds the elapsed time):")
    doc.table(["kind", "stages", "seconds (sum)"], [[k, v[0], f"{v[1]:.1f}"] for k, v in by_kind.items()])
    doc.p(f"From the start of the first stage to the end of the last one before the report: {span / 60:.1f} minutes "
          "(elapsed; if the stages were computed over several runs this includes the time between them; "
          "`runs.jsonl` logs every run).")
    doc.fold(f"Every stage ({len(rows)}: seconds, torch threads, when it finished, UTC)")
    doc.table(["stage", "kind", "seconds", "threads", "finished"], rows)
    doc.end_fold()


def temperature(scratch: dict) -> str:
    """How the scratch models' temperature was set: open_clip's learned one, or a named deviation."""
    scale = scratch.get("logit_scale")
    if scale is None:
        return "logit scale learned from 1/0.07, as open_clip"
    return f"logit scale fixed at {scale:g}, a deviation from open_clip's learned one"
