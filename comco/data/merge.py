"""`comco dataset merge`: join rendered shards into one dataset.

Shards must come from the same configuration (only `--shard` may differ) and must
not overlap; the merged dataset equals a single run's records in index order.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from comco.data.folder import (
    FAILURES,
    INFO,
    METADATA,
    SCENES,
    SINGLES,
    config_hash,
    failure_counts,
    metadata_rows,
    output_files,
    read_info,
    safe_image_path,
)
from comco.errors import UserError
from comco.io import read_jsonl, write_json, write_jsonl
from comco.record import pair_rank


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def merge_shards(shards: list[Path], out: Path) -> dict:
    """`comco dataset merge`: join shards rendered with --shard i/N into one dataset.

    Args:
        shards: the shard folders (one configuration, every slice once).
        out: the merged dataset folder (images are hard-linked where possible)."""
    if not shards:
        raise UserError("name the shard folders to merge")
    infos = []
    for s in shards:
        if not (s / INFO).is_file():
            raise UserError(f"{s} is not a comco dataset (no {INFO})")
        info = read_info(s)
        if not info.get("rendered"):
            raise UserError(f"{s} is not finished rendering; complete it with `comco render ... --resume`")
        infos.append(info)
    base = _without_shard(infos[0]["config"])
    for s, info in zip(shards, infos):
        if _without_shard(info["config"]) != base or info["object_set_hash"] != infos[0]["object_set_hash"]:
            raise UserError(f"{s} was made with another configuration than {shards[0]}; only --shard may differ")
    n_shards = {tuple(i["config"]["render"]["shard"])[1] for i in infos}
    got = sorted(tuple(i["config"]["render"]["shard"])[0] for i in infos)
    if len(n_shards) != 1 or got != list(range(n_shards.pop())):
        raise UserError(f"shards {got} do not make a whole; every shard i/N of one N is needed once")
    if out.exists() and any(out.iterdir()):
        raise UserError(f"--out {out} is not empty; merge into a new folder")
    records, singles, failures = [], [], []
    for s in shards:
        for r in read_jsonl(s / SCENES):
            _link_or_copy(s / r["image"], out / safe_image_path(r["image"], ("images",)))
            mask = s / "masks" / Path(r["image"]).name
            if mask.is_file():
                _link_or_copy(mask, out / "masks" / mask.name)
            for _, path, _ in output_files(s, r):  # --depth, --normals: beside the image, like it
                _link_or_copy(path, out / path.relative_to(s))
            records.append(r)
        if (s / SINGLES).is_file():
            for r in read_jsonl(s / SINGLES):
                _link_or_copy(s / r["image"], out / safe_image_path(r["image"], ("singles",)))
                singles.append(r)
        if (s / FAILURES).is_file():
            failures += list(read_jsonl(s / FAILURES))
    records.sort(key=lambda r: (r["index"], pair_rank(r)))  # a pair dataset: each base, then its variants
    if len({r["id"] for r in records}) != len(records):
        raise UserError("shards overlap: an image index appears twice")
    write_jsonl(out / SCENES, records)
    if singles:
        write_jsonl(out / SINGLES, sorted(singles, key=lambda r: r["id"]))
    if failures:
        write_jsonl(out / FAILURES, failures)
    write_jsonl(out / METADATA, metadata_rows(records))
    info = json.loads(json.dumps(infos[0]))
    info["config"]["render"]["shard"] = [0, 1]
    info["config_hash"] = config_hash(info["config"], info["object_set_hash"])
    info["counts"].update(rendered=len(records), singles=len(singles), **failure_counts(failures),
                          retried=sum(1 for r in records if r.get("retry")))
    write_json(out / INFO, info)
    return {"images": len(records), "singles": len(singles), "failures": len(failures)}


def _without_shard(config: dict) -> dict:
    c = json.loads(json.dumps(config))
    c.get("render", {}).pop("shard", None)
    return c
