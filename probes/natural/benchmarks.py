"""The benchmark registry: a name, its loader, its layout and whether its captions are long."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from comco.errors import UserError
from comco.probes.natural import comco as natural_comco
from comco.probes.natural import long as natural_long
from comco.probes.natural import short as natural_short
from comco.probes.natural.split import NaturalSplit


@dataclass(frozen=True)
class Benchmark:
    name: str
    load: Callable[[Path], NaturalSplit]
    layout: str
    long_captions: bool  # several sentences a caption: the DeBias analyses apply
    about: str


BENCHMARKS = {b.name: b for b in [
    Benchmark("coco", natural_short.load_coco, natural_short.COCO_LAYOUT, False,
              "COCO 2017 val, 5,000 images"),
    Benchmark("coco-karpathy", natural_short.load_coco_karpathy, natural_short.COCO_KARPATHY_LAYOUT, False,
              "COCO Karpathy 5k test"),
    Benchmark("flickr30k", natural_short.load_flickr30k, natural_short.FLICKR_LAYOUT, False,
              "Flickr30k, every image of the token file"),
    Benchmark("flickr30k-karpathy", natural_short.load_flickr30k_karpathy, natural_short.FLICKR_KARPATHY_LAYOUT,
              False, "Flickr30k Karpathy 1k test"),
    Benchmark("urban1k", natural_long.load_urban1k, natural_long.URBAN1K_LAYOUT, True, "Urban1k, 1,000 images"),
    Benchmark("docci", natural_long.load_docci, natural_long.DOCCI_LAYOUT, True, "DOCCI test, 5,000 images"),
    Benchmark("dci", natural_long.load_dci, natural_long.DCI_LAYOUT, True, "DCI, all 7,805 images"),
    Benchmark("long-dci", natural_long.load_long_dci, natural_long.LONG_DCI_LAYOUT, True,
              "Long-DCI (TULIP), extra captions"),
    Benchmark("comco", natural_comco.load_comco, natural_comco.COMCO_LAYOUT, True,
              "a comco dataset's long captions"),
]}


def get_benchmark(name: str, long_only: bool = False) -> Benchmark:
    choices = [b for b in BENCHMARKS.values() if b.long_captions or not long_only]
    if name not in BENCHMARKS or BENCHMARKS[name] not in choices:
        kind = "long-caption benchmark" if long_only else "benchmark"
        raise UserError(f"unknown {kind} '{name}'; choose one of: {', '.join(b.name for b in choices)}")
    return BENCHMARKS[name]


def load_benchmark(name: str, root: Path, long_only: bool = False) -> NaturalSplit:
    """Load a benchmark's evaluation split; bad names, roots and empty splits are UserErrors."""
    benchmark = get_benchmark(name, long_only)
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{name}: --root {root} is not a folder; expected layout: {benchmark.layout}")
    split = benchmark.load(root)
    if split.n_images == 0:
        left_out = ", ".join(f"{n} {why}" for why, n in split.skipped.items()) or "no entries"
        raise UserError(f"{name}: the {split.split} split under {root} is empty ({left_out}); "
                        f"expected layout: {benchmark.layout}")
    return split
