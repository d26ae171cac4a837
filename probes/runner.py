"""`comco probe` as a library call: pick the probes, load each model once, run, report."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from comco.errors import UserError
from comco.progress import progress_group

PROBES = ("tor", "ior", "i2tor", "matching", "toc", "ioc", "binding", "attention", "pairs", "size-class",
          "half-truth", "mention")
# size-class embeds thousands of written captions, half-truth five per image: only when asked for;
# mention asks a generative VLM
DEFAULT_PROBES = PROBES[:-3]
TEXT_ONLY_PROBES = ("tor", "size-class")  # what --text-only can run: names and templates, no images
IMAGE_PROBES = {"ior", "i2tor", "matching", "ioc", "binding", "attention", "pairs", "half-truth", "mention"}
IMAGE_SIDE_PROBES = {"ior", "ioc", "attention"}  # no text embedded: --text-aggregate leaves them as they are
VLM_PROBES = ("mention", "matching")  # what a generative VLM (vlm:DIR) runs: it answers and scores captions
NO_PAIRS = "no pair records (render the dataset with --pairs FACTOR)"


@dataclass
class ProbeOptions:
    probes: list[str] | None = None  # None: every probe the data supports
    templates: list[str] | None = None  # TOR/TOC caption templates; None: all colour-free ones present
    text_template: str = "photo"  # captions probes write (I2TOR, matching, text-only TOR)
    text_only: bool = False
    names: str | None = None  # text-only: a fixed name list (texts.NAME_LISTS, e.g. coco90) instead of a set's
    tor_gallery: str = "names"  # TOR's gallery: bare names (ComCO's scripts) or "template" (the query's template)
    object_counts: list[int] = field(default_factory=lambda: [2, 3, 4, 5])  # text-only tuple sizes
    tuples: int = 1000  # text-only captions per object count (rounded up to whole balanced rounds)
    n_boot: int = 1000
    seed: int = 0
    batch_size: int = 64
    device: str = "cpu"
    cache_dir: Path | None = None  # None: no cache
    max_distractors: int | None = None
    test_fraction: float = 0.2
    limit: int | None = None  # probe only the first N records
    vlm_prompts: Path | None = None  # the prompts asked of vlm: models (None: probes/vlm_prompts.toml)
    plots: bool = True
    text_aggregate: str | None = None  # "per-object": text-side probes also run on per-object phrase means
    by: str | None = None  # split every table by a recorded factor (probes/factors.py): "world", "camera-elevation:4"


def parse_probes(text: str | None) -> list[str] | None:
    """"tor,ior" -> the probe names (None: every probe the data supports); unknown names are a UserError.

    Args:
        text: the --probes value, or None."""
    if not text:
        return None
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    bad = [p for p in names if p not in PROBES]
    if bad:
        raise UserError(f"unknown probe '{bad[0]}'; probes: {', '.join(PROBES)}")
    return names


def select_probes(data, opts: ProbeOptions) -> tuple[list[str], dict[str, str]]:
    """(probes to run, probe -> why it was skipped). Asked-for probes that cannot run raise."""
    if opts.text_only:
        if opts.probes and not set(opts.probes) <= set(TEXT_ONLY_PROBES):
            raise UserError(f"--text-only runs only the {' and '.join(TEXT_ONLY_PROBES)} probes; drop --probes or "
                            f"pass --probes {','.join(TEXT_ONLY_PROBES)}")
        return list(opts.probes or ["tor"]), {}
    asked = opts.probes
    skipped = {}
    chosen = []
    for p in asked or DEFAULT_PROBES:
        why = _cannot_run(p, data)
        if why and asked:
            _require(p, data)  # raises the one-line message that says how to fix it
        if why:
            skipped[p] = why
        else:
            chosen.append(p)
    return chosen, skipped


def _cannot_run(probe: str, data) -> str | None:
    from comco.data.pairing import has_pairs

    if probe == "pairs" and not has_pairs(data.records):
        return NO_PAIRS
    if probe in IMAGE_PROBES:
        if not data.records or data.images_missing(data.records[:1]) or \
                any("measured" not in o for o in data.records[0]["objects"]):
            return "no rendered images"
    if probe == "ior" and not data.singles:
        return "no singles/ (render with --singles)"
    if probe == "binding" and not data.has_colors:
        return "no colours (plan with --colors)"
    if probe == "size-class":
        from comco.probes.size_class import missing_classes

        return missing_classes(data.names, data.object_set, [2, 3, 4, 5])
    return None


def _require(probe: str, data) -> None:
    from comco.data.pairing import has_pairs

    if probe == "pairs" and not has_pairs(data.records):
        raise UserError(f"probe 'pairs' needs a pair dataset, and {data.root} has {NO_PAIRS}")
    if probe in IMAGE_PROBES:
        data.require_images(probe)
    if probe == "ior":
        data.require_singles(probe)
    if probe == "binding" and not data.has_colors:
        raise UserError("probe 'binding' needs a colour dataset; plan and render one with --colors")
    if probe == "size-class":
        raise UserError(f"probe 'size-class' cannot run on {data.root}: {_cannot_run(probe, data)}")


def default_templates(data) -> list[str]:
    """The dataset's caption templates that name a list of objects (TOR and IOR's inputs):
    not the colour captions, and not the pair factors' size, relation and count captions."""
    from comco.plan.captions import FACTOR_KINDS
    from comco.probes import texts

    book = texts.template_book(data.info)
    seen = []
    for r in data.records[:50]:
        for t in r.get("captions", {}):
            factor = t in book.templates and book.templates[t].kind in FACTOR_KINDS
            if t not in seen and not t.startswith("attributes") and not factor:
                seen.append(t)
    return seen


def run_probes(dataset: Path | None, models: list, opts: ProbeOptions, *,
               object_set: str | None = None, quiet: bool = True) -> dict:
    """Every asked-for probe on every model: the results dictionary that write_reports turns
    into results.json, tables and plots.

    Args:
        dataset: a dataset folder, or None with --text-only (names from `object_set`).
        models: comco.models.ModelRef, one per model, in table order.
        opts: the probe options (which probes, templates, bootstrap, device, cache...).
        object_set: the set whose names --text-only uses without a dataset.
        quiet: no progress display.
    """
    from comco import GENERATOR
    from comco.probes.embed import Embedder
    from comco.probes.probe_data import gallery_names, open_dataset

    if dataset is not None:
        if opts.names:
            raise UserError(f"--gallery {opts.names} is for --text-only without a DATASET")
        data = open_dataset(dataset)
        if opts.limit:
            data.records = data.records[: opts.limit]
        names, obj_set, info = data.names, data.object_set, data.info
    elif opts.names:
        from comco.manifest import load_object_set
        from comco.probes.texts import name_list

        if not opts.text_only:
            raise UserError(f"--gallery {opts.names} is for --text-only (a dataset's gallery is its set's names)")
        names = name_list(opts.names)
        obj_set = load_object_set(object_set or "comco")  # only for articles ("an apple"); others by spelling
        data, info = None, {"object_set": opts.names, "object_set_hash": None}
    else:
        if not opts.text_only:
            raise UserError("give a DATASET folder (or --text-only with --object-set)")
        if not object_set:
            raise UserError("--text-only without a DATASET needs --object-set (comco, simco or a folder)")
        names, _, obj_set = gallery_names({"object_set": object_set}, [])
        if obj_set is None:
            from comco.manifest import load_object_set

            obj_set = load_object_set(object_set)
        data, info = None, {"object_set": obj_set.name, "object_set_hash": obj_set.hash}
    from comco.probes.aggregate import check_aggregate

    check_aggregate(opts.text_aggregate, models)
    _refuse_images_of_text_models(models, opts.probes or [])  # what was asked, before the data's own checks
    opts, prompts = _generative_options(models, opts)
    probes, skipped = select_probes(data, opts)  # --text-only (the one way to come without data) checks first
    _refuse_images_of_text_models(models, probes)
    if "size-class" in probes and data is None:
        from comco.probes.size_class import missing_classes

        if opts.names or (why := missing_classes(names, obj_set, opts.object_counts)):
            raise UserError("probe 'size-class' needs an object set with size classes, not a --gallery name list"
                            if opts.names else f"probe 'size-class' cannot run: {why}")
    if not probes:
        raise UserError(f"no probe can run on {dataset}: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    if opts.text_aggregate and not set(probes) - IMAGE_SIDE_PROBES:
        raise UserError(f"--text-aggregate {opts.text_aggregate} changes text-side probes only, and "
                        f"{', '.join(probes)} embed no text; add one (e.g. --probes tor) or drop the option")
    if data is not None and IMAGE_PROBES & set(probes):  # before any model loads, as `comco validate` checks
        data.require_usable_images(singles="ior" in probes)
    templates = opts.templates or (default_templates(data) if data is not None else [])
    split = _split(data, opts)
    if split is not None and (vlms := [m.name for m in models if m.generative]):
        raise UserError(f"--by {opts.by} splits embedding probes; {vlms[0]} is a generative VLM: probe it "
                        "without --by")
    results = {
        "generator": GENERATOR, "seed": opts.seed, "n_boot": opts.n_boot,
        "dataset": {"root": str(dataset) if dataset else None,
                    "hash": (data.hash if data else info.get("object_set_hash")),
                    "object_set": info.get("object_set"), "object_set_hash": info.get("object_set_hash"),
                    "records": len(data.records) if data else 0, **_scene_counts(data), "gallery": len(names)},
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(opts).items()},
        "models": [], "skipped": skipped, "probes": {},
    }
    if split is not None:
        results["by"] = {"factor": split[0], "cells": {label: len(recs) for label, recs in split[1].items()}}
    for ref in models:
        label = ref.label
        t0 = time.perf_counter()
        loaded = ref.load(opts.device)
        if ref.generative:
            with progress_group(quiet) as progress:
                counts = {"answers": 0, "captions_scored": 0}
                for probe in probes:
                    for key, groups in _run_vlm(probe, data, loaded, opts, prompts, results, counts, progress).items():
                        results["probes"].setdefault(key, {})[label] = groups
            results["models"].append({"label": label, "name": ref.name, "pretrained": None, "identity": loaded.identity,
                                      "context_length": loaded.context_length, "seconds": time.perf_counter() - t0,
                                      "generated": counts, "prompts": prompts.source})
            continue
        with progress_group(quiet) as progress:
            emb = Embedder(loaded, cache_dir=opts.cache_dir, batch_size=opts.batch_size, progress=progress,
                           remember=split is not None)  # each cell embeds its scenes again: from memory
            aggregated = _aggregating(emb, opts, data, names, obj_set)
            for probe in probes:
                if probe == "mention":
                    results["skipped"][f"mention ({label})"] = "a probe of generative VLMs (vlm:DIR)"
                    continue
                out = _run_one(probe, data, emb, loaded, opts, templates, names, obj_set)
                if split is not None:
                    _add_cells(out, probe, split[1], data, emb, loaded, opts, templates, names, obj_set, results)
                if not out:
                    results["skipped"][f"{probe} ({label})"] = "not an open_clip ViT with a class token"
                if aggregated is not None and probe not in IMAGE_SIDE_PROBES:
                    out.update({aggregated_key(k, opts.text_aggregate): g for k, g in _run_one(
                        probe, data, aggregated, loaded, opts, templates, names, obj_set).items()})
                for key, groups in out.items():
                    results["probes"].setdefault(key, {})[label] = groups
        results["models"].append({"label": label, "name": ref.name, "pretrained": ref.pretrained,
                                  "identity": loaded.identity,
                                  "context_length": loaded.context_length, "seconds": time.perf_counter() - t0,
                                  "cache": dict(emb.stats)})
    return results


def aggregated_key(probe: str, aggregate: str) -> str:
    """The results key of a probe run with --text-aggregate ("tor" -> "tor-per-object")."""
    return f"{probe}-{aggregate}"


def _aggregating(emb, opts: ProbeOptions, data, names: list[str], obj_set):
    """The embedder that averages per-object phrases (None without --text-aggregate)."""
    if not opts.text_aggregate:
        return None
    from comco.probes import texts
    from comco.probes.aggregate import PerObjectTexts, modifier_words

    forms = data.forms if data is not None else \
        {o.name: [o.plural, *o.synonyms] for o in getattr(obj_set, "objects", ())}
    book = texts.template_book(data.info if data is not None else None)
    return PerObjectTexts(emb, names, forms, modifier_words(obj_set, book))


def _split(data, opts: ProbeOptions):
    """(factor name, cell label -> records) for --by, or None; checked before any model loads."""
    if not opts.by:
        return None
    if data is None:
        raise UserError(f"--by {opts.by} splits a dataset's scenes; give a DATASET (not --text-only)")
    from comco.probes.factors import cells, parse_by

    factor, bins = parse_by(opts.by, data.records)
    return factor.name, cells(factor, bins, data.records)


def _add_cells(out: dict, probe: str, split: dict, data, emb, loaded, opts, templates, names, obj_set,
               results: dict) -> None:
    """Each cell's groups after the whole dataset's, keyed and marked with the cell."""
    from dataclasses import replace

    for label, recs in split.items():
        try:
            part = _run_one(probe, replace(data, records=recs), emb, loaded, opts, templates, names, obj_set)
        except UserError as exc:  # a cell too small for a probe (a split with one class) is noted, not fatal
            results["skipped"][f"{probe} ({label})"] = str(exc)
            continue
        for key, groups in part.items():
            out.setdefault(key, []).extend({**g, "key": f"{g['key']}, {label}", "cell": label} for g in groups)


TASKS = {"tor": "TOR", "ior": "IOR", "i2tor": "I2TOR", "matching": "matching", "toc": "TOC", "ioc": "IOC",
         "binding": "binding", "attention": "attention", "pairs": "pairs"}


def _scene_counts(data) -> dict:
    """Scenes and pair variants apart (a pair dataset's records are both)."""
    from comco.data.pairing import pair_entry
    from comco.record import PAIR_BASE

    if data is None:
        return {"scenes": 0, "variants": 0}
    variants = sum(1 for r in data.records if (e := pair_entry(r)) and e["factor"] != PAIR_BASE)
    return {"scenes": len(data.records) - variants, "variants": variants}


def _refuse_images_of_text_models(models: list, probes: list[str]) -> None:
    if (imaged := [p for p in probes if p in IMAGE_PROBES]) and (text_only := [m.name for m in models if m.text_only]):
        raise UserError(f"{text_only[0]} embeds text only and cannot run {', '.join(imaged)}; pass --probes "
                        f"tor,size-class (with a dataset) or --text-only")


def _generative_options(models: list, opts: ProbeOptions):
    """(the options, the VLM prompts or None): a run with a vlm: model asks only what a VLM can do
    (mention and matching, both by default), with a prompts file that reads, before any model loads."""
    import dataclasses

    generative = [m.name for m in models if m.generative]
    embedding = [m.name for m in models if not m.generative]
    if "mention" in (opts.probes or []) and embedding:
        raise UserError(f"probe 'mention' asks a generative VLM what it sees, and {embedding[0]} embeds; "
                        "give the VLM as --model vlm:DIR (or drop mention from --probes)")
    if not generative:
        if opts.vlm_prompts is not None:
            raise UserError("--vlm-prompts is for generative VLMs (--model vlm:DIR)")
        return opts, None
    from comco.models import VLM_PROBES_HINT
    from comco.probes.mention import load_prompts

    if opts.text_only:
        raise UserError(f"{generative[0]} is a generative VLM and --text-only embeds captions without images; "
                        f"{VLM_PROBES_HINT}")
    if bad := [p for p in opts.probes or [] if p not in VLM_PROBES]:
        raise UserError(f"{generative[0]} is a generative VLM and cannot run {', '.join(bad)}; {VLM_PROBES_HINT}")
    prompts = load_prompts(opts.vlm_prompts)
    return (opts if opts.probes else dataclasses.replace(opts, probes=list(VLM_PROBES))), prompts


def _run_vlm(probe, data, vlm, opts, prompts, results, counts, progress) -> dict[str, list]:
    from comco.probes import texts

    if probe == "mention":
        from comco.probes.mention import ask, mention_tables

        rows = ask(data, vlm, prompts, batch_size=opts.batch_size, progress=progress)
        results.setdefault("answers", []).extend(rows)
        counts["answers"] += len(rows)
        return {"mention": mention_tables(rows, n_boot=opts.n_boot, seed=opts.seed)}
    if probe == "matching":
        from comco.probes.likelihood import likelihood_matching

        template = texts.get_template(texts.template_book(data.info), opts.text_template)
        groups, scored = likelihood_matching(data, vlm, template, prompts.matching,
                                             max_distractors=opts.max_distractors, n_boot=opts.n_boot, seed=opts.seed,
                                             batch_size=opts.batch_size, progress=progress)
        counts["captions_scored"] += scored
        return {"matching": groups}
    raise AssertionError(probe)


def _run_one(probe, data, emb, loaded, opts, templates, names, obj_set) -> dict[str, list]:
    from comco.probes import attention, binding, ior, linear, matching, pairs, texts, tor

    kw = {"n_boot": opts.n_boot, "seed": opts.seed}
    emb.task = TASKS.get(probe, probe)  # the progress bars' "TOR: embedding 616 captions (template and)"
    book = texts.template_book(data.info if data else None)
    if probe == "tor":
        if opts.text_only:
            tpl = texts.get_template(book, opts.text_template)
            return {"tor": tor.tor_text_only(names, obj_set, emb, tpl, opts.object_counts, tuples=opts.tuples,
                                             gallery=opts.tor_gallery, names_label=opts.names, **kw)}
        return {"tor": tor.tor_dataset(data, emb, templates, gallery=opts.tor_gallery, **kw)}
    if probe == "size-class":
        from comco.probes.size_class import size_class_tor

        tpl = texts.get_template(book, opts.text_template if opts.text_only else (templates or ["and"])[0])
        counts = opts.object_counts if opts.text_only else sorted({len(r["objects"]) for r in data.records})
        return {"size-class": size_class_tor(names, obj_set, emb, tpl, [n for n in counts if n >= 2],
                                             tuples=opts.tuples, gallery=opts.tor_gallery, **kw)}
    if probe == "ior":
        by_size, by_slot = ior.ior(data, emb, **kw)
        return {"ior": by_size, "ior_slot": by_slot}
    if probe == "i2tor":
        return {"i2tor": ior.i2tor(data, emb, texts.get_template(book, opts.text_template), **kw)}
    if probe == "matching":
        return {"matching": matching.matching(data, emb, texts.get_template(book, opts.text_template),
                                              max_distractors=opts.max_distractors, **kw)}
    if probe == "toc":
        return {"toc": [g for t in templates[:1] for g in
                        linear.toc(data, emb, t, test_fraction=opts.test_fraction, **kw)]}
    if probe == "ioc":
        return {"ioc": linear.ioc(data, emb, test_fraction=opts.test_fraction, **kw)}
    if probe == "binding":
        return {"binding": binding.binding(data, emb, test_fraction=opts.test_fraction, **kw)}
    if probe == "attention":
        if loaded.vit is None:
            return {}  # not an open_clip class-token ViT: nothing to measure (noted in results)
        return {"attention": attention.attention(data, loaded, batch_size=opts.batch_size, **kw)}
    if probe == "pairs":
        return {"pairs": pairs.pairs_probe(data, emb, **kw)}
    if probe == "half-truth":
        from comco.probes.half_truth import half_truth

        return {"half-truth": half_truth(data, emb, texts.get_template(book, opts.text_template), **kw)}
    raise AssertionError(probe)
