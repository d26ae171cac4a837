"""One `comco eval` run: load the split, evaluate each model in turn, write the report.

Kept out of the command module so that recipes and training can call it directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from comco import GENERATOR
from comco.errors import UserError
from comco.probes.natural.analyses import ANALYSES
from comco.probes.natural.benchmarks import get_benchmark, load_benchmark
from comco.probes.natural.evaluate import evaluate_analyses, evaluate_retrieval
from comco.probes.natural.images import drop_unreadable_headers
from comco.probes.natural.recall import PROTOCOLS
from comco.probes.natural.report import write_analyses_report, write_retrieval_report
from comco.report import published as reference


def check_options(kind: str, protocol: str, analyses: tuple[str, ...], out: Path) -> None:
    """Refuse bad eval options before any work.

    Args:
        kind: "retrieval" or "analyses"; protocol: "all" or "first5"; analyses: their names;
        out: the output folder."""
    if kind not in ("retrieval", "analyses"):
        raise ValueError(f"kind must be retrieval or analyses, not {kind!r}")
    if protocol not in PROTOCOLS:
        raise UserError(f"unknown --protocol '{protocol}'; choose one of: {', '.join(PROTOCOLS)}")
    unknown = [a for a in analyses if a not in ANALYSES]
    if unknown or (kind == "analyses" and not analyses):
        raise UserError(f"unknown analysis '{(unknown or [''])[0]}'; choose from: {', '.join(ANALYSES)}")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder")


def run_natural_eval(kind: str, benchmark: str, root: Path, specs: list, protocol: str, out: Path, *,
                     device: str = "cpu", batch_size: int = 64, cache_dir: Path | None = None,
                     analyses: tuple[str, ...] = (), progress=None,
                     say: Callable[[str], None] = lambda _: None) -> dict:
    """Evaluate every model on one split and write results.json, tables and plots into out."""
    from comco.probes.embed import Embedder

    out = Path(out)
    check_options(kind, protocol, analyses, out)
    split = drop_unreadable_headers(load_benchmark(benchmark, root, long_only=(kind == "analyses")))
    say(f"{benchmark}: {split.n_images} images, {split.n_captions} captions"
        + "".join(f"; left out: {n} {why}" for why, n in split.skipped.items()))
    entries = []
    for spec in specs:
        loaded = spec.load(device)
        embedder = Embedder(loaded, cache_dir=cache_dir, batch_size=batch_size, progress=progress)
        embedder.task = f"{benchmark} {kind}"  # the bars' "coco retrieval: embedding 5000 texts"
        label = spec.label if all(e["label"] != spec.label for e in entries) else f"{spec.label} #{len(entries) + 1}"
        entry = {"label": label, "model": spec.name, "pretrained": spec.pretrained,
                 "identity": loaded.identity, "context_length": loaded.context_length, "device": device}
        before = split
        if kind == "retrieval":
            entry["result"], split = evaluate_retrieval(embedder, split, protocol)
        else:
            entry["analyses"], split = evaluate_analyses(embedder, split, protocol, analyses)
        # The first model decodes every image (or did, when it cached it), so an image that
        # fails to decode leaves the split before any result is kept.
        if entries and split is not before:
            raise RuntimeError(f"{spec.label} could not decode images that {entries[0]['label']} decoded")
        entry["embedding_stats"] = dict(embedder.stats)
        entries.append(entry)
        del loaded, embedder  # one model in memory at a time
    payload = {"kind": kind, "generator": GENERATOR, "benchmark": benchmark,
               "benchmark_about": get_benchmark(benchmark).about, "protocol": protocol,
               "protocol_about": PROTOCOLS[protocol], "split": split.summary(), "models": entries}
    if kind == "retrieval":
        payload["published"] = reference.published_retrieval(benchmark)
        written = write_retrieval_report(out, payload)
    else:
        payload["published"] = {n: reference.published_analysis(benchmark, n) for n in analyses}
        written = write_analyses_report(out, payload)
    say("wrote " + ", ".join(str(p) for p in written))
    return payload
