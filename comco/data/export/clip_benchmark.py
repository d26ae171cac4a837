"""CLIP_benchmark's WebDataset layout for zero-shot retrieval (`--dataset wds/NAME`).

As its `build_wds_dataset` reads it: `dataset_type.txt` says `retrieval`,
`test/nshards.txt` the shard count, and `test/0.tar` ... hold per image `KEY.png`
and `KEY.txt`, the image's captions one per line (a newline inside a caption written
`\\n`, as its own converter does). `KEY.json` carries the record's per-object fields
for other readers; CLIP_benchmark ignores it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from comco.data.export.samples import Sample
from comco.data.export.shards import ShardWriter
from comco.io import dumps, write_text

SPLIT = "test"  # CLIP_benchmark's default --split


def write(items: Iterator[Sample], out: Path, opts, bar) -> dict:
    sink = ShardWriter(out / SPLIT, lambda i: f"{i}.tar", opts.shard_bytes, opts.shard_count)
    texts = 0
    try:
        for s in items:
            caption_lines = "\n".join(c.replace("\n", "\\n") for c in s.captions)
            sink.write(s.key, {s.image.suffix.lstrip(".").lower(): s.image.read_bytes(),
                               "txt": caption_lines.encode(), "json": dumps({"key": s.key, **s.row}).encode()})
            texts += len(s.captions)
            bar.advance()
    except BaseException:
        sink.abort()
        raise
    counts = sink.close()
    write_text(out / SPLIT / "nshards.txt", f"{len(counts)}\n")
    write_text(out / "dataset_type.txt", "retrieval\n")
    return {"images": sum(counts), "texts": texts, "shards": len(counts),
            "files": ["dataset_type.txt", f"{SPLIT}/nshards.txt", f"{SPLIT}/{{0..{len(counts) - 1}}}.tar"]}


def usage(out: Path, summary: dict, opts) -> str:
    # --no_amp: CLIP_benchmark's default autocast (bfloat16 on a CPU) flips near-tied ranks, so its
    # recalls drift from `comco eval retrieval`'s float32 ones; with it they agree exactly.
    return (f"clip_benchmark eval --dataset wds/comco --dataset_root {out} --task zeroshot_retrieval "
            f"--recall_k 1 5 10 --no_amp --model MODEL --pretrained WEIGHTS")
