"""The public Python API: the functions the `comco` command calls, for notebooks and scripts.

`import comco` stays cheap (no torch, no bpy); each function loads what it needs when called.
They return data (summaries, datasets, models, results and table rows) and print nothing
unless asked (`quiet=False` shows the progress bars). The command line is a thin layer over
them: `comco plan` is `plan_dataset`, `comco render` is `render_dataset`, `comco probe` is
`probe`, and a `--model`/`--pretrained` pair means what `load_model(model, pretrained)` means.

Example:
    >>> import comco
    >>> comco.render_dataset("runs/data", n=24, objects="3-4", resolution=64, preset="draft")
    >>> results = comco.probe("runs/data", "ViT-S-32", "none", probes="tor")
    >>> rows = comco.probe_table(results, "tor")
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence

from comco.errors import UserError

__all__ = ["plan_dataset", "render_dataset", "load_dataset", "load_model", "probe", "probe_table",
           "load_probe_results", "load_lab_result"]


def _names(value: str | Sequence[str] | None) -> list[str]:
    """One spec or several: "ViT-B-32" or ["ViT-B-32", "ckpt:run/model.pt"] (None: none)."""
    if value is None:
        return []
    return [value] if isinstance(value, (str, Path)) else [str(v) for v in value]


def _config(options: dict):
    from comco.plan import PlanConfig

    return PlanConfig.from_dict(options)


def plan_dataset(out: str | Path, *, singles: bool = False, overwrite: bool = False, resume: bool = False,
                 quiet: bool = True, **options: Any) -> dict:
    """Plan a dataset's scene records (no rendering): objects, sizes, slots, mention orders, captions.

    Args:
        out: the dataset folder to write (dataset.json, scenes.jsonl).
        singles: also plan one reference image per object (for IOR).
        overwrite: replace a dataset made with another configuration.
        resume: continue a dataset with the same configuration.
        quiet: no progress bar.
        **options: the planning options by name, in any form `comco plan` reads them:
            `n=100`, `objects="2-5"`, `object_set="simco"`, `resolution=64`, `seed=0`,
            `order_bias=0.8`, `templates="and,photo"` (the caption templates to write),
            `templates_file="mine.toml"` ... (`comco plan --help` lists them all).

    Returns:
        The plan's summary: `images`, `seconds`, `replanned`, ... and `path`, the folder.
    """
    from comco.data import run_plan
    from comco.io import require_folder

    out = Path(out)
    require_folder(out, "--out")
    cfg = _config(_plan_options(options))
    stats = run_plan(cfg, out, overwrite=overwrite, resume=resume, quiet=quiet, singles=singles)
    return {**stats, "path": str(out), "pairs": bool(cfg.pairs)}


def _plan_options(options: dict) -> dict:
    """The keyword names of the API (the command line's: templates, templates_file) as PlanConfig's fields."""
    given = dict(options)
    renamed = {"templates": "captions", "templates_file": "templates"}
    if "captions" in given or "templates_text" in given:
        raise UserError("give caption template names as templates=... and a template file as templates_file=...")
    return {renamed.get(k, k): v for k, v in given.items()}


def check_render_bounds(samples, min_visible, min_pixels, max_retries, max_per_worker, threads) -> None:
    """The render options' ranges, before anything is planned or written (UserError, one line)."""
    if samples is not None and not 1 <= samples <= 65536:
        raise UserError(f"--samples {samples}: use 1..65536 Cycles samples (or leave it to the preset)")
    if not 0.0 <= min_visible <= 1.0:
        raise UserError(f"--min-visible {min_visible}: a fraction of each object in 0..1")
    if min_pixels < 0:
        raise UserError(f"--min-pixels {min_pixels}: a pixel count, 0 or more")
    if not 0 <= max_retries <= 100:
        raise UserError(f"--max-retries {max_retries}: use 0..100 re-plans per scene")
    if max_per_worker < 1:
        raise UserError(f"--max-per-worker {max_per_worker}: at least 1 image per worker")
    if threads < 0:
        raise UserError(f"--threads {threads}: 0 (all cores) or more")


def render_setup(out: str | Path, *, preset: str = "cycles", device: str = "cpu", samples: int | None = None,
                 workers: int = 1, max_per_worker: int = 300, masks: bool = False, coco: bool = False,
                 singles: bool = False, min_pixels: int = 10, min_visible: float = 0.9, max_retries: int = 5,
                 shard: str = "0/1", threads: int = 0, image_timeout: float | None = None, **options: Any):
    """The checked (PlanConfig, RenderOptions) of a render (render_dataset's arguments); the
    command line's cluster path (`--executor slurm`) submits the same pair."""
    from comco.io import require_folder
    from comco.render import RenderOptions, check_passes, parse_shard

    check_render_bounds(samples, min_visible, min_pixels, max_retries, max_per_worker, threads)
    require_folder(Path(out), "--out")
    cfg = _config(_plan_options(options))
    check_passes(cfg, preset)
    opts = RenderOptions(preset=preset, device=device, samples=samples, workers=workers,
                         max_per_worker=max_per_worker, masks=masks or coco, coco=coco, singles=singles,
                         min_pixels=min_pixels, min_visible=min_visible, max_retries=max_retries,
                         shard=parse_shard(shard), threads=threads, image_timeout=image_timeout)
    return cfg, opts


def render_dataset(out: str | Path, *, preset: str = "cycles", device: str = "cpu", samples: int | None = None,
                   workers: int = 1, max_per_worker: int = 300, masks: bool = False, coco: bool = False,
                   singles: bool = False, min_pixels: int = 10, min_visible: float = 0.9, max_retries: int = 5,
                   shard: str = "0/1", threads: int = 0, image_timeout: float | None = None,
                   overwrite: bool = False, resume: bool = False, quiet: bool = True, **options: Any) -> dict:
    """Plan, then render every scene with Blender (in worker processes) and measure what is visible.

    Args:
        out: the dataset folder to write (images/, scenes.jsonl, dataset.json, ...).
        preset: "draft" (Workbench, fast), "cycles" or "high".
        device: where Cycles renders: "cpu", "cuda" or "optix".
        samples: Cycles samples (None: the preset's).
        workers: render processes, one bpy each.
        max_per_worker: restart a worker after this many images.
        masks: write an index mask PNG per image.
        coco: write COCO annotations (implies masks).
        singles: also render one reference image per object (for IOR).
        min_pixels: least visible pixels per object.
        min_visible: least visible fraction per object.
        max_retries: re-plans of a scene whose render fails a check.
        shard: the slice "i/N" of the scenes to render (`merge` joins the slices).
        threads: Blender threads per worker (0: all cores).
        image_timeout: seconds one image may take before its worker counts as hung.
        overwrite: replace a dataset made with another configuration.
        resume: continue a dataset with the same configuration.
        quiet: no progress bar.
        **options: the planning options, as for `plan_dataset`.

    Returns:
        The render's summary: `images`, `singles`, `rendered`, `failures`, `seconds`, ... and `path`.
    """
    from comco.render import run_render

    cfg, opts = render_setup(out, preset=preset, device=device, samples=samples, workers=workers,
                             max_per_worker=max_per_worker, masks=masks, coco=coco, singles=singles,
                             min_pixels=min_pixels, min_visible=min_visible, max_retries=max_retries, shard=shard,
                             threads=threads, image_timeout=image_timeout, **options)
    stats = run_render(cfg, opts, Path(out), overwrite=overwrite, resume=resume, quiet=quiet)
    return {**stats, "path": str(out)}


def load_dataset(path: str | Path):
    """A dataset folder made by `plan_dataset`, `render_dataset` or `comco render`, for reading.

    Args:
        path: the dataset folder.

    Returns:
        A `comco.data.Dataset`: `.info` (dataset.json), `.records()` (the scene records, one dict
        per image, as DESIGN's scene record), `.image_path(record)`, `.singles()`, `len()`.
    """
    from comco.data import Dataset

    return Dataset(path)


def load_model(model: str, pretrained: str | None = None, *, device: str = "auto",
               trust_remote_code: bool = False):
    """A model by the spec strings of `--model` and `--pretrained`.

    Args:
        model: an open_clip name ("ViT-B-32"), `hf:DIR`, `st:DIR`, `vlm:DIR`, `ckpt:PATH` (what
            `comco train` wrote), `longclip:PATH` or `debias:PATH`.
        pretrained: for open_clip names, a tag ("openai"), a weights file, or "none" (random, seeded).
        device: "auto" (cuda when there is one), "cpu", "cuda" or "cuda:N".
        trust_remote_code: let an hf:DIR folder run the model code it ships.

    Returns:
        The loaded model (`encode_text`, `encode_image`, `tokenize`, `preprocess`, `identity`).
    """
    from comco.models import check_device, pair_models

    (ref,) = pair_models([model], _names(pretrained), trust_remote_code)
    return ref.load(check_device(device))


def probe(dataset: str | Path | None = None, models: str | Sequence[str] = (),
          pretrained: str | Sequence[str] | None = None, *, probes: str | Iterable[str] | None = None,
          templates: str | Iterable[str] | None = None, text_template: str = "photo", text_only: bool = False,
          object_set: str | None = None, gallery: str | None = None, objects: str = "2-5", tuples: int = 1000,
          tor_gallery: str = "names", bootstrap: int = 1000, seed: int = 0, batch_size: int = 64,
          device: str = "auto", cache: str | Path | bool | None = None, max_distractors: int | None = None,
          test_fraction: float = 0.2, limit: int | None = None, vlm_prompts: str | Path | None = None,
          text_aggregate: str | None = None, by: str | None = None, plots: bool = True,
          trust_remote_code: bool = False, out: str | Path | None = None, quiet: bool = True) -> dict:
    """Measure order and size biases of one or more models: TOR, IOR, I2TOR, matching, TOC/IOC, ...

    Args:
        dataset: a dataset folder (None with `text_only=True` and an `object_set` or `gallery`).
        models: one model spec or several (as `load_model`'s `model`), compared in one table.
        pretrained: one tag for every open_clip model, or one per model in order.
        probes: which probes, "tor,ior" or a list (default: all the data supports).
        templates: caption templates for TOR/TOC, "and,photo" or a list (default: all colour-free).
        text_template: the template of the captions the probes write (I2TOR, matching, text-only).
        text_only: TOR from object names alone (balanced ordered tuples).
        object_set: the object set of a text-only run without a dataset.
        gallery: a text-only run over a fixed name list: coco90, coco91 or coco80.
        objects: tuple sizes of a text-only run: "4", "2-5" or "2,4".
        tuples: captions per tuple size of a text-only run.
        tor_gallery: "names" (bare object names, ComCO's protocol) or "template".
        bootstrap: resamples for the 95 % intervals (0: none).
        seed: the seed of sampling, splits and the bootstrap.
        batch_size: encoder batch size.
        device: "auto" (cuda when there is one), "cpu", "cuda" or "cuda:N".
        cache: the embedding cache folder (None: ~/.cache/comco/embeddings; False: no cache).
        max_distractors: matching: absent objects per image (None: all).
        test_fraction: the held-out share of the TOC/IOC/binding probes.
        limit: probe only the first N scenes.
        vlm_prompts: the prompts file of vlm:DIR models.
        text_aggregate: "per-object" also embeds each text as the mean of its objects' phrases.
        by: split every table by a recorded factor (world, holdout, objects, ...).
        plots: draw the PNG figures (with `out`).
        trust_remote_code: let hf:DIR folders run their own model code.
        out: a folder for results.json, the tables, figures and the page (None: write nothing).
        quiet: no progress bars.

    Returns:
        The results (what results.json holds): `models`, `dataset`, `probes` (probe -> model ->
        groups of per-role statistics, each with n, interval and chance) and `skipped`; with
        `out`, also `files`, the paths written. `probe_table` lays a probe out as rows.
    """
    from comco.io import require_folder
    from comco.models import check_device, pair_models
    from comco.plan import check_seed, parse_counts
    from comco.probes import (
        DEFAULT_CACHE,
        MAX_BOOTSTRAP,
        ProbeOptions,
        check_aggregate,
        check_gallery,
        name_list,
        parse_probes,
        run_probes,
        write_reports,
    )

    if out is not None:
        out = Path(out)
        require_folder(out, "--out")
    cache_dir = None if cache is False else Path(cache) if cache not in (None, True) else DEFAULT_CACHE
    if cache_dir is not None:
        require_folder(cache_dir, "--cache")
    refs = pair_models(_names(models), _names(pretrained), trust_remote_code)
    if not 0 <= bootstrap <= MAX_BOOTSTRAP:
        raise UserError(f"--bootstrap {bootstrap}: give 0 (no intervals) to {MAX_BOOTSTRAP:,} resamples")
    if not 0 < test_fraction < 1 or batch_size < 1:
        raise UserError("--test-fraction must be in (0, 1) and --batch-size >= 1")
    if limit is not None and limit < 1:
        raise UserError(f"--limit {limit}: probe at least 1 scene (leave --limit out for all)")
    if tuples < 1 or (max_distractors is not None and max_distractors < 0):
        raise UserError("--tuples must be >= 1 and --max-distractors >= 0")
    check_gallery(tor_gallery)
    if gallery is not None:
        name_list(gallery)
        if not text_only or dataset is not None:
            raise UserError(f"--gallery {gallery} is for --text-only without a DATASET")
    check_seed(seed)
    device = check_device(device)
    check_aggregate(text_aggregate, refs)
    if dataset is not None and not Path(dataset).is_dir():
        raise UserError(f"{dataset} is not a folder; give a dataset made by `comco plan` / `comco render`")
    if isinstance(probes, str) or probes is None:
        chosen = parse_probes(probes)
    else:
        chosen = parse_probes(",".join(probes))
    names = [t.strip() for t in templates.split(",")] if isinstance(templates, str) else \
        (list(templates) if templates else None)
    opts = ProbeOptions(
        probes=chosen, templates=names or None, text_template=text_template, text_only=text_only,
        tor_gallery=tor_gallery, names=gallery, object_counts=list(parse_counts(objects)), tuples=tuples,
        n_boot=bootstrap, seed=seed, batch_size=batch_size, device=device, cache_dir=cache_dir,
        max_distractors=max_distractors, test_fraction=test_fraction, limit=limit, plots=plots,
        vlm_prompts=None if vlm_prompts is None else Path(vlm_prompts), text_aggregate=text_aggregate, by=by)
    results = run_probes(dataset, refs, opts, object_set=object_set, quiet=quiet)
    if out is not None:
        written = write_reports(out, results, plots=opts.plots)
        results["files"] = [str(p) for p in written]  # after writing: not a part of results.json
    return results


def probe_table(results: dict, probe: str = "tor", *, metric: str | None = None) -> list[dict]:
    """A probe's measured numbers as rows, one per (group, metric, model, role).

    Args:
        results: what `probe` returned, or `load_probe_results` read.
        probe: "tor", "ior", "i2tor", "matching", ... (a key of `results["probes"]`).
        metric: keep one metric only ("unconditional", "conditional", ...; None: every metric).

    Returns:
        Dicts with `group`, `metric`, `model`, `role`, `value` (a share in 0..1, or a mean),
        `lo` and `hi` (the 95 % interval), `n` (trials), `units` (what the bootstrap resampled),
        `chance` and `readable` (False where the page says "too few to read"). Hand them to
        `pandas.DataFrame(rows)` for a frame.
    """
    from comco.probes import probe_rows

    if probe not in results.get("probes", {}):
        have = ", ".join(results.get("probes", {})) or "none"
        raise UserError(f"these results hold no {probe!r} probe (they hold: {have})")
    return probe_rows(results, probe, metric)


def load_probe_results(path: str | Path) -> dict:
    """The results a probe run wrote (its --out folder, or its results.json), as `probe` returns them.

    Args:
        path: the folder `comco probe --out` wrote, or its results.json.
    """
    path = Path(path)
    file = path / "results.json" if path.is_dir() else path
    if not file.is_file():
        raise UserError(f"{path}: no results.json; give the --out folder of `comco probe`")
    return json.loads(file.read_text(encoding="utf-8"))


def load_lab_result(run: str | Path) -> dict:
    """A finished lab run's results (the --out folder of `comco lab run`): its results.json.

    Args:
        run: the run folder.

    Returns:
        What the run's report.md shows, as data: `findings` (each question's verdict, its
        estimate with interval and n), `object_sets` (per set: `dose_response`, `finetune`,
        `gates`, `labclip`), `recipe`, `scale` and `where_made`.
    """
    run = Path(run)
    file = run / "results.json"
    if not file.is_file():
        raise UserError(f"{run}: no results.json; give the --out folder of a finished `comco lab run`")
    return json.loads(file.read_text(encoding="utf-8"))
