"""`comco validate`: check a dataset folder and say what is wrong, per record."""

from __future__ import annotations

import json
from pathlib import Path

from comco.data.folder import (
    INFO,
    SCENES,
    SINGLES,
    config_hash,
    describe_ids,
    expected_ids,
    group_ids,
    image_file,
    object_set_source,
    output_files,
    pair_factors,
    record_key,
    scene_count,
)
from comco.errors import UserError
from comco.io import read_jsonl
from comco.record import check_record as record_problems

REPLAN_SHOWN = 20  # records whose planned content differs, named one by one


def image_problem(path: Path, size=None, modes: tuple[str, ...] | None = None) -> str | None:
    """What makes an image file unusable (missing, cut, scrambled, wrong size), or None.

    verify() checks every PNG chunk's CRC (a cut or overwritten file), load() decodes the
    pixels (a damaged stream in intact chunks): about 3 ms for a 512 px render.

    Args:
        modes: the PIL modes the file must have (a depth map's 16-bit grey), None: any."""
    from PIL import Image

    if not path.is_file():
        return "is missing"
    try:
        with Image.open(path) as img:
            img.verify()
        with Image.open(path) as img:
            img.load()
            got, mode = img.size, img.mode
    except Exception as exc:  # PIL raises OSError, SyntaxError, ValueError, zlib.error... for bad bytes
        return f"cannot be decoded ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    if size is not None and tuple(got) != tuple(size):
        return f"is {got[0]}x{got[1]} pixels, the record says {size[0]}x{size[1]}"
    if modes is not None and mode not in modes:
        return f"has pixel mode {mode}, comco writes {' or '.join(modes)}"
    return None


def output_problems(root: Path, r: dict) -> list[str]:
    """The record's per-image outputs (--depth, --normals) that are missing or damaged, as
    check_record reports its image."""
    out = []
    for key, path, modes in output_files(root, r):
        problem = image_problem(path, r.get("resolution"), modes)
        if problem:
            out.append(f"record {r.get('id', '?')}: {key} {r[key]} {problem}")
    return out


IMAGES_NAMED = 3  # unusable images named one by one in the one-line error


def require_usable_images(root: Path, records: list[dict], what: str = "record", threads: int = 4) -> None:
    """UserError naming the records whose image `comco validate` would refuse (image_problem:
    missing, cut, scrambled, not an image, another size than the record says), checked before
    a command loads a model or writes anything. Threads: PIL decodes without the GIL.

    Args:
        root: the dataset folder (records' "image" paths are relative to it).
        records: scene records or singles, each with "image" and (optionally) "resolution".
        what: how the message names one of them ("record", "single")."""
    from concurrent.futures import ThreadPoolExecutor

    def problem(r: dict) -> str | None:
        why = image_problem(root / r["image"], r.get("resolution"))
        return f"{what} {r.get('id', '?')}: image {r['image']} {why}" if why else None

    with ThreadPoolExecutor(max(1, threads)) as pool:
        bad = [line for line in pool.map(problem, records) if line]
    if bad:
        more = f"; and {len(bad) - IMAGES_NAMED} more" if len(bad) > IMAGES_NAMED else ""
        raise UserError(f"{len(bad)} of {len(records)} images in {root} cannot be used ("
                        f"{'; '.join(bad[:IMAGES_NAMED])}{more}); render them again with `comco render` "
                        f"(`comco validate {root}` lists every problem)")


def check_record(r, names: set[str] | None, set_hash: str | None, rendered: bool, root: Path,
                 images: bool | None = None) -> list[str]:
    """The record's own checks (comco.record.check_record) and its files: the image path stays
    inside images/ (no symbolic link out of the folder), and once rendered (or with `images`)
    the image decodes at the record's resolution."""
    problems = record_problems(r, names, set_hash, measured=rendered)
    if isinstance(r, dict) and isinstance(r.get("image"), str):
        try:
            image_file(root, r, ("images",))
            output_files(root, r)
        except UserError as exc:
            return [f"record {r.get('id', '?')}: {exc}"] + problems  # a path out of the folder first
    if problems:
        return problems
    if rendered if images is None else images:
        problem = image_problem(root / r["image"], r["resolution"])
        if problem:
            return [f"record {r['id']}: image {r['image']} {problem}"]
        return output_problems(root, r)
    return []


def validate_dataset(root: str | Path, *, images: bool | None = None) -> list[str]:
    """`comco validate`: every problem of a dataset folder, one line each (an empty list when it is valid).

    Args:
        root: the dataset folder.
        images: decode every record's image (None: when dataset.json says it was rendered;
            `comco export`, which ships the images, passes True).
    Checks dataset.json (its hash recomputed), every record (comco.record.check_record, its
    image decoded, the whole plan re-planned and compared), the counts and the singles."""
    root = Path(root)
    if not (root / INFO).is_file() or not (root / SCENES).is_file():
        raise UserError(f"{root} is not a comco dataset (no {INFO} / {SCENES})")
    try:
        info = json.loads((root / INFO).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return [f"{root / INFO}: not valid JSON"]
    if not isinstance(info, dict) or not isinstance(info.get("config"), dict):
        return [f"{root / INFO}: not a dataset description (a JSON object with a 'config')"]
    # The stored hash must still be the configuration's: an edited seed or n is another dataset.
    config_ok = config_hash(info["config"], info.get("object_set_hash")) == info.get("config_hash")
    problems = [] if config_ok else [
        f"{INFO}: config_hash {info.get('config_hash')} is not the hash of its config "
        f"({config_hash(info['config'], info.get('object_set_hash'))}): the config was edited, or another "
        f"comco plan version made it"]
    names = oset = None
    try:
        from comco.manifest import load_object_set

        oset = load_object_set(object_set_source(info))
        names = set(oset.names)
        if oset.hash != info.get("object_set_hash"):
            return problems + [f"{INFO}: object set '{oset.name}' has hash {oset.hash} now, the dataset was made "
                               f"with {info.get('object_set_hash')}: the manifest changed since"]
    except UserError as exc:
        return problems + [f"{INFO}: object set cannot be loaded ({exc})"]
    rendered = bool(info.get("rendered"))
    factors = pair_factors(info)
    ids, count, attempts, groups = set(), 0, [], {}
    try:
        for r in read_jsonl(root / SCENES):
            count += 1
            if not isinstance(r, dict):
                problems.append(f"{SCENES}: record {count} is a JSON {type(r).__name__}, not an object")
                continue
            try:
                rid = record_key(r)
            except UserError as exc:
                problems.append(f"{SCENES}: record {count} has no id" if r.get("id") is None
                                else f"{SCENES}: record {count}: {exc}")
                rid = None
            else:
                if rid in ids:
                    problems.append(f"record {rid}: duplicate id")
                ids.add(rid)
            problems += check_record(r, names, info.get("object_set_hash"), rendered, root, images)
            if factors:
                problems += _pair_entry(r, groups)
                if isinstance(r.get("pair"), dict) and r["pair"].get("factor") != "base":
                    continue  # a variant is planned again with its base's attempt
            if isinstance(r.get("index"), int) and isinstance(r.get("retry"), int):
                attempts.append((r["index"], r["retry"]))
    except UserError as exc:
        return problems + [str(exc)]
    if factors:
        problems += _group_problems(groups, factors)
    counts = info.get("counts") if isinstance(info.get("counts"), dict) else {}
    expected = counts.get("rendered", counts.get("images")) if rendered else counts.get("images")
    wanted = expected_ids(root, info)
    absent = [i for i in wanted if i not in ids] if wanted is not None else []
    if absent:
        problems.append(f"{SCENES}: {describe_ids(absent)} missing ({count} records, dataset.json says {expected})")
    elif expected is not None and count != expected:
        problems.append(f"{SCENES}: {count} records, dataset.json says {expected}")
    if rendered:
        # Every planned image of this slice is either rendered or listed as a failure.
        try:
            shard_i, shard_n = info["config"].get("render", {}).get("shard", [0, 1])
            planned = len(range(shard_i, scene_count(info), shard_n)) * (1 + len(factors))
            accounted = counts.get("rendered", 0) + counts.get("failed", 0)
        except (TypeError, ValueError, AttributeError):
            return problems + [f"{INFO}: its counts or render shard are not numbers"]
        if accounted != planned:
            problems.append(f"{INFO}: {planned} images planned but {counts.get('rendered', 0)} rendered and "
                            f"{counts.get('failed', 0)} failed: {planned - accounted} are unaccounted for")
    if info["config"].get("holdout") is not None or "holdout" in info:
        problems += _holdout_problems(root, info, oset)
    if config_ok and len(attempts) * (1 + len(factors)) == count:
        problems += _replan_problems(root, info, oset, attempts)
    if (root / SINGLES).is_file():
        for s in read_jsonl(root / SINGLES):
            if not isinstance(s, dict) or not isinstance(s.get("image"), str):
                problems.append(f"{SINGLES}: a single is not a record with an image")
            elif rendered and counts.get("singles"):
                problem = image_problem(root / s["image"], s.get("resolution"))
                if problem:
                    problems.append(f"single {s.get('id')}: image {s['image']} {problem}")
    return problems


HOLDOUT_SHOWN = 20  # records on the wrong side of the split, named one by one


def _holdout_problems(root: Path, info: dict, oset) -> list[str]:
    """A held-out split (--holdout): dataset.json's list is the configuration's, and every record is
    on its side: a training image showing a held-out combination, or a test image showing none, is
    an error (and so is a record whose `holdout` field says otherwise)."""
    from comco.plan import PlanConfig
    from comco.plan.holdout import resolve_holdout

    try:
        holdout = resolve_holdout(PlanConfig.from_dict(info["config"]), oset)
    except (UserError, TypeError, ValueError) as exc:
        return [f"{INFO}: its --holdout cannot be resolved ({exc})"]
    if holdout is None:
        return [f"{INFO}: records a holdout but its config has no --holdout"]
    if info.get("holdout") != holdout.to_info():
        return [f"{INFO}: its 'holdout' is not the split its configuration resolves to (--holdout {holdout.spec}, "
                f"--holdout-split {holdout.split}): it was edited, or the object set changed"]
    problems, wrong = [], 0
    for r in read_jsonl(root / SCENES):
        if not isinstance(r, dict) or not isinstance(r.get("index"), int) or not isinstance(r.get("objects"), list):
            continue  # reported by the record checks
        try:
            shown = holdout.shows_record(r)
        except (KeyError, TypeError, AttributeError):
            continue
        test = holdout.wants_held_out(r["index"])
        line = None
        if shown and not test:
            line = (f"record {r.get('id')}: a training image ({holdout.split} split) shows held-out "
                    f"{', '.join(shown)}")
        elif test and not shown:
            line = f"record {r.get('id')}: a test image ({holdout.split} split) shows no held-out combination"
        elif r.get("holdout") != shown:
            line = f"record {r.get('id')}: its 'holdout' {r.get('holdout')!r} is not what it shows ({shown})"
        if line:
            wrong += 1
            if wrong <= HOLDOUT_SHOWN:
                problems.append(line)
    if wrong > HOLDOUT_SHOWN:
        problems.append(f"{SCENES}: {wrong} records are on the wrong side of the held-out split")
    return problems


def _pair_entry(r: dict, groups: dict) -> list[str]:
    """A pair dataset's record must carry its pair entry; remember its group (base id -> records)."""
    pair = r.get("pair")
    if not isinstance(pair, dict):
        return [f"record {r.get('id')}: a pair dataset's record has no 'pair' entry"]
    groups.setdefault(str(pair.get("id")), []).append(r)
    return []


def _group_problems(groups: dict, factors: tuple[str, ...]) -> list[str]:
    """Each pair id names a base record of this dataset, and its variants come from the same attempt."""
    out = []
    for base_id, recs in groups.items():
        base = next((r for r in recs if r["pair"].get("factor") == "base"), None)
        if base is None:
            out.append(f"pair {base_id}: no base record with that id ({len(recs)} variants point to it)")
            continue
        want = group_ids(base["index"], factors) if isinstance(base.get("index"), int) else None
        if want is not None and sorted(r.get("id") for r in recs) != sorted(want):
            out.append(f"pair {base_id}: records {', '.join(sorted(str(r.get('id')) for r in recs))}, "
                       f"expected {', '.join(want)}")
        odd = [r.get("id") for r in recs if (r.get("seed"), r.get("retry")) != (base.get("seed"), base.get("retry"))]
        if odd:
            out.append(f"pair {base_id}: {', '.join(map(str, odd))} do not share the base's seed and retry")
    return out


def _replan_problems(root: Path, info: dict, oset, attempts: list[tuple[int, int]]) -> list[str]:
    """Plan every record again from dataset.json's configuration: a record whose scene,
    mention orders or captions differ was edited, or its captions come from templates that
    changed while the dataset was made (the same configuration and seed give the same records)."""
    from comco.plan import PlanConfig, Planner

    try:
        planner = Planner(PlanConfig.from_dict(info["config"]), oset)
        planned = planner.records_from(attempts)
        problems, differing = [], []
        for r in read_jsonl(root / SCENES):
            again = next(planned)
            for key, value in again.items():
                have = r.get(key)
                if key == "objects" and isinstance(have, list):
                    have = [{k: v for k, v in o.items() if k != "measured"} if isinstance(o, dict) else o
                            for o in have]
                if have != value:
                    differing.append(r.get("id"))
                    if len(differing) <= REPLAN_SHOWN:
                        problems.append(f"record {r.get('id')}: '{key}' is not what dataset.json's configuration "
                                        f"plans (the record was edited, or the caption templates changed "
                                        f"while the dataset was made)")
                    break
    except (UserError, TypeError, ValueError) as exc:
        return [f"{INFO}: its configuration cannot be planned again ({exc})"]
    if len(differing) > REPLAN_SHOWN:
        problems.append(f"{SCENES}: {len(differing)} records differ from what the configuration plans")
    return problems
