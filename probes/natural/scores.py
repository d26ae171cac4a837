"""`comco eval compositional` and `comco eval zeroshot`: each model in turn, then results.json,
a Markdown table and a CSV with count, 95 % interval and chance in every row."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Callable

from comco import GENERATOR
from comco.errors import UserError
from comco.io import write_text
from comco.report.document import Doc
from comco.report.tables import MIN_TRIALS, Dashes, csv_text, interval, pct, too_few, units

COLUMNS = ["model", "benchmark", "metric", "category", "score", "95% CI", "n", "units", "chance"]


def _models(specs: list, device: str, batch_size: int, cache_dir, progress, task: str):
    """(entry, embedder) for each model, one in memory at a time."""
    from comco.probes.embed import Embedder

    labels: list[str] = []
    for spec in specs:
        loaded = spec.load(device)
        embedder = Embedder(loaded, cache_dir=cache_dir, batch_size=batch_size, progress=progress)
        embedder.task = task
        label = spec.label if spec.label not in labels else f"{spec.label} #{len(labels) + 1}"
        labels.append(label)
        yield {"label": label, "model": spec.name, "pretrained": spec.pretrained,
               "identity": loaded.identity, "device": device}, embedder
        del loaded, embedder


def _check_out(out: Path) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder")
    return out


def run_compositional_eval(benchmark: str, root: Path, specs: list, out: Path, *, device: str = "cpu",
                           batch_size: int = 64, cache_dir: Path | None = None, progress=None, n_boot: int = 1000,
                           say: Callable[[str], None] = lambda _: None, loader_options: dict | None = None) -> dict:
    """Score every model on one compositional benchmark; write results.json and the page.

    `loader_options` reach the benchmark's loader (`tagger`: ARO's order foils without spaCy)."""
    from comco.probes.natural.compositional import (
        COMPOSITIONAL,
        crop_images,
        evaluate_compositional,
        load_compositional,
        needs_preparing,
        scoring_lines,
        summarise,
    )

    out = _check_out(out)
    split = load_compositional(benchmark, root, **(loader_options or {}))
    about = COMPOSITIONAL[benchmark]
    say(f"{benchmark}: {len(split.trials)} items" + "".join(f"; left out: {n} {w}" for w, n in split.skipped.items()))
    entries = []
    with tempfile.TemporaryDirectory(prefix="comco-crops-") as tmp:
        paths = crop_images(split.trials, Path(tmp)) if needs_preparing(split.trials) else None
        for entry, embedder in _models(specs, device, batch_size, cache_dir, progress, f"{benchmark} compositional"):
            hits = evaluate_compositional(embedder, split, paths)
            entry["scores"] = summarise(split, hits, n_boot)
            entry["embedding_stats"] = dict(embedder.stats)
            entries.append(entry)
    payload = {"kind": "compositional", "generator": GENERATOR, "benchmark": benchmark,
               "benchmark_about": about.about, "unit": about.unit, "root": str(root), "items": len(split.trials),
               "skipped": split.skipped, "headline": list(about.headline), "models": entries}
    written = write_report(out, "compositional", payload, [
        f"benchmark: **{benchmark}** ({about.about}), {len(split.trials)} "
        f"{'examples' if about.unit == 'examples' else 'items'}, root {root}",
        "left out: " + (", ".join(f"{n} {w}" for w, n in split.skipped.items()) or "none"),
        *scoring_lines(benchmark),
        f"95 % bootstrap interval over {about.unit}; category all is pooled over {about.unit}"])
    say("wrote " + ", ".join(str(p) for p in written))
    return payload


def run_zeroshot_eval(root: Path, specs: list, out: Path, *, classnames: Path | None = None,
                      templates: str = "openai", device: str = "cpu", batch_size: int = 64,
                      cache_dir: Path | None = None, progress=None, n_boot: int = 1000,
                      say: Callable[[str], None] = lambda _: None) -> dict:
    from comco.probes.natural import zeroshot as zs

    out = _check_out(out)
    label, makers = zs.templates(templates)
    split = zs.load_folder(root, classnames)
    say(f"zeroshot: {len(split.images)} images, {len(split.classes)} classes, templates {label}")
    entries = []
    for entry, embedder in _models(specs, device, batch_size, cache_dir, progress, "zero-shot"):
        entry["scores"] = {metric: {"all": stat} for metric, stat in
                           zs.evaluate_zeroshot(embedder, split, makers, n_boot).items()}
        entry["embedding_stats"] = dict(embedder.stats)
        entries.append(entry)
    payload = {"kind": "zeroshot", "generator": GENERATOR, "benchmark": "zeroshot", "unit": "images", "root": str(root),
               "classes": split.classes, "images": len(split.images),
               "unreadable_images": split.unreadable, "templates": label, "models": entries}
    written = write_report(out, "zeroshot", payload, [
        f"folder: {root}, {len(split.images)} images, {len(split.classes)} classes, templates: {label}",
        f"left out: {split.unreadable} unreadable images",
        "top-k is % of images whose class is among the k highest (fewer than k other classes score at least "
        "as high: a tie is not a win); 95 % bootstrap interval over images; chance k / classes"])
    say("wrote " + ", ".join(str(p) for p in written))
    return payload


def score_rows(payload: dict) -> list[dict]:
    rows = []
    for model in payload["models"]:
        for metric, cats in model["scores"].items():
            for category, s in cats.items():
                rows.append({"model": model["label"], "benchmark": payload["benchmark"], "metric": metric,
                             "category": category, "score": pct(s["acc"]), "95% CI": interval(s["lo"], s["hi"]),
                             "n": s["n"], "units": s["clusters"], "chance": pct(s["chance"]),
                             "_units": units(s)})
    return rows


def summary_cell(stat: dict | None, unit: str) -> str:
    """"50.1 [48.1-52.1] (n=2416)", or the count when too few resampled units to read it."""
    if not stat or stat.get("acc") is None:
        return "–"
    few = too_few(units(stat), unit=unit)
    return few or f"{pct(stat['acc'])} [{interval(stat['lo'], stat['hi'])}] (n={stat['n']})"


def write_report(out: Path, kind: str, payload: dict, lines: list[str]) -> list[Path]:
    """results.json, `kind`.csv and the page as `kind`.md and `kind`.html (comco.report.document)."""
    out.mkdir(parents=True, exist_ok=True)
    rows, dashes = score_rows(payload), Dashes()
    shown = []
    for row in rows:
        few = too_few(row["_units"], unit=payload.get("unit", "units"))
        shown.append({**row, **({"score": few, "95% CI": dashes.dash("too few units to read an interval")}
                                if few else {})})
    title = "Compositional benchmark" if kind == "compositional" else "Zero-shot classification"
    doc = Doc()
    doc.h(1, title)
    unit = payload.get("unit", "units")
    for line in lines + [f"a score from fewer than {MIN_TRIALS} resampled {unit} shows its count instead "
                         f"(\"12 {unit}: too few to read\"); results.json and the CSV keep every number"]:
        doc.p(line)
    metrics = list(dict.fromkeys(m for model in payload["models"] for m in model["scores"]))
    chance = {m: next((model["scores"][m]["all"].get("chance") for model in payload["models"]
                       if "all" in model["scores"].get(m, {})), None) for m in metrics}
    doc.h(2, "Every model over the whole benchmark")
    doc.p("each cell: score % [95 % interval] (n)" + (f"; the authors' headline: {', '.join(payload['headline'])}"
                                                       if payload.get("headline") else ""))
    doc.table(["model", *metrics], [["chance", *(pct(chance[m]) for m in metrics)]] + [
        [model["label"], *(summary_cell(model["scores"].get(m, {}).get("all"), unit) for m in metrics)]
        for model in payload["models"]])
    doc.h(2, "Every metric by category")
    doc.table(COLUMNS, [[row.get(c, "") for c in COLUMNS] for row in shown])
    if dashes.reasons:
        doc.p(dashes.note())
    return [write_text(out / "results.json", json.dumps(payload, indent=2) + "\n"),
            write_text(out / f"{kind}.md", doc.markdown(out)),
            write_text(out / f"{kind}.csv", csv_text(COLUMNS, rows)),
            write_text(out / f"{kind}.html", doc.html(f"comco eval {kind}: {payload['benchmark']}"))]
