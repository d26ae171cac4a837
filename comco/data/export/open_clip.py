"""open_clip_train's two training inputs: a CSV file and WebDataset shards.

CSV (`--train-data OUT/train.csv`): one row per image and caption, columns `filepath`
(the image's absolute path: the images stay in the dataset) and `title` (the caption),
open_clip_train's default `--csv-img-key` and `--csv-caption-key`, tab-separated as its
default `--csv-separator`; `id` and `caption_index` say where a row came from.

WebDataset (`--train-data 'OUT/{00000..N}.tar' --dataset-type webdataset`): per sample
`KEY.png`, `KEY.txt` (one caption: open_clip_train tokenizes the whole member) and
`KEY.json` (per-object fields); with several captions per image each caption is its own
sample (`ID-K`, the image repeated). `sizes.json` gives each shard's sample count, which
open_clip_train reads instead of asking for `--train-num-samples`.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterator

from comco.data.export.samples import Sample
from comco.data.export.shards import ShardWriter
from comco.io import atomic_write, dumps, write_json

CSV_NAME = "train.csv"
IMG_KEY, CAPTION_KEY = "filepath", "title"


def pairs(s: Sample, mode: str) -> Iterator[tuple[str, int, str]]:
    """(sample key, caption index, caption) for each caption of a sample."""
    for k, caption in enumerate(s.captions):
        yield (s.key if mode == "first" else f"{s.key}-{k}"), k, caption


def write_csv(items: Iterator[Sample], out: Path, opts, bar) -> dict:
    images = rows = 0
    with atomic_write(out / CSV_NAME) as f:
        writer = csv.writer(f, delimiter=opts.csv_separator, lineterminator="\n")
        writer.writerow([IMG_KEY, CAPTION_KEY, "id", "caption_index"])
        for s in items:
            path = str(s.image)
            for _key, k, caption in pairs(s, opts.captions):
                writer.writerow([path, caption, s.key, k])
                rows += 1
            images += 1
            bar.advance()
    return {"images": images, "texts": rows, "rows": rows, "files": [CSV_NAME]}


def usage_csv(out: Path, summary: dict, opts) -> str:
    sep = "$'\\t'" if opts.csv_separator == "\t" else repr(opts.csv_separator)
    return (f"python -m open_clip_train.main --train-data {out / CSV_NAME} --dataset-type csv "
            f"--csv-img-key {IMG_KEY} --csv-caption-key {CAPTION_KEY} --csv-separator {sep} --model MODEL ...")


def shard_name(i: int) -> str:
    return f"{i:05d}.tar"


def write_wds(items: Iterator[Sample], out: Path, opts, bar) -> dict:
    sink = ShardWriter(out, shard_name, opts.shard_bytes, opts.shard_count)
    images = 0
    try:
        for s in items:
            data = s.image.read_bytes()
            ext = s.image.suffix.lstrip(".").lower()
            for key, k, caption in pairs(s, opts.captions):
                row = dict(s.row, key=key, text=caption, caption_index=k)
                sink.write(key, {ext: data, "txt": caption.encode(), "json": dumps(row).encode()})
            images += 1
            bar.advance()
    except BaseException:
        sink.abort()
        raise
    counts = sink.close()
    write_json(out / "sizes.json", {shard_name(i): n for i, n in enumerate(counts)})
    return {"images": images, "texts": sum(counts), "samples": sum(counts), "shards": len(counts),
            "files": ["sizes.json", brace(len(counts))]}


def brace(n: int) -> str:
    return f"{{{shard_name(0)[:-4]}..{shard_name(n - 1)[:-4]}}}.tar" if n > 1 else shard_name(0)


def usage_wds(out: Path, summary: dict, opts) -> str:
    return (f"python -m open_clip_train.main --train-data '{out}/{brace(summary['shards'])}' "
            f"--dataset-type webdataset --model MODEL ...")
