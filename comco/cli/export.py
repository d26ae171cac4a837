"""`comco export DATASET --to FORMAT --out DIR`: a dataset for CLIP_benchmark, open_clip_train, HF datasets
or the pair benchmarks (Winoground, SugarCrepe, VL-CheckList, SPEC).

    comco export data/comco --to clip-benchmark --template long --out exports/cb
    comco export data/comco --to open-clip-wds --shard-size 500MB --out exports/wds

comco/cli/app.py registers it. The work is comco.data's (pure Python, streamed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from comco.cli.options import Out, Overwrite, Quiet
from comco.cli.say import say

TO_HELP = ("clip-benchmark (WebDataset retrieval), open-clip-csv, open-clip-wds (open_clip_train's shards), "
           "hf (Hugging Face imagefolder); pair benchmarks: winoground, sugarcrepe, vl-checklist, spec")


def export(
    dataset: Annotated[Path, typer.Argument(help="A rendered dataset folder.")],
    to: Annotated[str, typer.Option("--to", help=TO_HELP)],
    out: Out,
    template: Annotated[Optional[str], typer.Option("--template", help="Caption template to export (and, articles, photo, long, ...; default the dataset's first; pair formats: each factor's own).")] = None,
    captions: Annotated[str, typer.Option("--mention-orders", help="Captions per image: all (one per mention order; in open-clip formats one training pair each) or first.")] = "all",
    shard_size: Annotated[str, typer.Option("--shard-size", help="Most bytes per tar shard (1GB, 500MB, 64MiB).")] = "1GB",
    shard_count: Annotated[int, typer.Option("--shard-count", help="Most samples per tar shard.")] = 10_000,
    csv_separator: Annotated[str, typer.Option("--csv-separator", help="CSV delimiter: tab (open_clip_train's default), comma or one character.")] = "tab",
    overwrite: Overwrite = False, quiet: Quiet = False,
):
    """Write a dataset in the layout CLIP_benchmark, open_clip_train or HF datasets reads."""
    from comco.data import export_dataset
    from comco.io import require_folder

    require_folder(out, "--out")
    s = export_dataset(dataset, to, out, template=template, captions=captions, shard_size=shard_size,
                       shard_count=shard_count, csv_separator=csv_separator, overwrite=overwrite, quiet=quiet)
    shards = f" in {s['shards']} shard{'s' if s['shards'] != 1 else ''}" if "shards" in s else ""
    texts = f"{s['texts']} '{s['template']}' captions" if s["template"] else "no captions"
    say(quiet, f"exported {s['images']} images, {texts}{shards} "
               f"for {s['tool']} -> {out}")
    say(quiet, f"read it with: {s['use']}")
