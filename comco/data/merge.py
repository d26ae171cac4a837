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
    image_file,
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

    Every shard is validated first (records, images, masks, depth and normal maps: the checks of
    `comco validate` and export, symbolic links out of the shard included), so nothing is written
    for a damaged one. The merge is built in a hidden folder beside --out and renamed to it once
    complete: a merge killed half-way leaves no partial --out, and its rerun starts afresh.

    Args:
        shards: the shard folders (one configuration, every slice once).
        out: the merged dataset folder (images are hard-linked where possible)."""
    if not shards:
        raise UserError("name the shard folders to merge")
    out = Path(out)
    infos = []
    for s in shards:
        if not (s / INFO).is_file():
            raise UserError(f"{s} is not a comco dataset (no {INFO})")
        info = read_info(s)
        if not info.get("rendered"):
            raise UserError(f"{s} is not finished rendering; complete it with `comco render ... --resume`")
        infos.append(info)
    try:
        base = _without_shard(infos[0]["config"])
        for s, info in zip(shards, infos):
            if _without_shard(info["config"]) != base or info["object_set_hash"] != infos[0]["object_set_hash"]:
                raise UserError(f"{s} was made with another configuration than {shards[0]}; only --shard may differ")
        n_shards = {tuple(i["config"]["render"]["shard"])[1] for i in infos}
        got = sorted(tuple(i["config"]["render"]["shard"])[0] for i in infos)
        whole = len(n_shards) == 1 and got == list(range(n_shards.pop()))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        raise UserError(f"the {INFO} of one of the shards is not a dataset description (its config or render "
                        f"shard was edited); `comco validate` on each shard names the problem") from None
    if not whole:
        raise UserError(f"shards {got} do not make a whole; every shard i/N of one N is needed once")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"--out {out} is not empty; merge into a new folder")
    for s in shards:
        _require_valid(s)
    records, singles, failures, files = [], [], [], []
    for s in shards:  # every file to link, found (and checked to stay in the shard) before one is written
        for r in read_jsonl(s / SCENES):
            files.append((image_file(s, r), safe_image_path(r["image"], ("images",))))
            mask = image_file(s, {"id": r["id"], "image": f"masks/{Path(r['image']).name}"}, ("masks",))
            if mask.is_file() or mask.is_symlink():
                files.append((mask, f"masks/{mask.name}"))
            for _, path, _ in output_files(s, r):  # --depth, --normals: beside the image, like it
                files.append((path, str(path.relative_to(s))))
            records.append(r)
        if (s / SINGLES).is_file():
            for r in read_jsonl(s / SINGLES):
                files.append((image_file(s, r, ("singles",)), safe_image_path(r["image"], ("singles",))))
                singles.append(r)
        if (s / FAILURES).is_file():
            failures += list(read_jsonl(s / FAILURES))
    records.sort(key=lambda r: (r["index"], pair_rank(r)))  # a pair dataset: each base, then its variants
    if len({r["id"] for r in records}) != len(records):
        raise UserError("shards overlap: an image index appears twice")
    info = json.loads(json.dumps(infos[0]))
    info["config"]["render"]["shard"] = [0, 1]
    info["config_hash"] = config_hash(info["config"], info["object_set_hash"])
    info["counts"].update(rendered=len(records), singles=len(singles), **failure_counts(failures),
                          retried=sum(1 for r in records if r.get("retry")))
    building = out.parent / f".{out.name}.merging"
    try:
        if building.exists():  # a merge killed half-way: its files are links and copies, start again
            shutil.rmtree(building)
        building.mkdir(parents=True)
        for src, rel in files:
            _link_or_copy(src, building / rel)
        write_jsonl(building / SCENES, records)
        if singles:
            write_jsonl(building / SINGLES, sorted(singles, key=lambda r: r["id"]))
        if failures:
            write_jsonl(building / FAILURES, failures)
        write_jsonl(building / METADATA, metadata_rows(records))
        write_json(building / INFO, info)
        if out.is_dir():
            out.rmdir()  # empty (checked above)
        os.replace(building, out)
    except OSError as exc:
        shutil.rmtree(building, ignore_errors=True)
        raise UserError(f"--out {out}: cannot write the merged dataset there ({exc.strerror or exc}); "
                        f"nothing was merged: free space or choose a writable folder") from None
    return {"images": len(records), "singles": len(singles), "failures": len(failures)}


PROBLEMS_NAMED = 2  # a shard's problems named in the one-line error


def _require_valid(shard: Path) -> None:
    """A shard `comco validate` (with every image decoded, as export checks) finds nothing wrong in."""
    from comco.data.validate import validate_dataset

    problems = validate_dataset(shard, images=True)
    if problems:
        more = f"; and {len(problems) - PROBLEMS_NAMED} more" if len(problems) > PROBLEMS_NAMED else ""
        raise UserError(f"shard {shard} does not validate ({'; '.join(problems[:PROBLEMS_NAMED])}{more}); nothing "
                        f"was merged: render the shard again (`comco validate {shard}` lists every problem)")


def _without_shard(config: dict) -> dict:
    c = json.loads(json.dumps(config))
    c.get("render", {}).pop("shard", None)
    return c
