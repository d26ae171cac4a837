"""`comco export`: a dataset folder in the layout another tool reads, streamed record by record.

The export is written into a hidden work folder beside `--out` (comco.data.export.staging) and
put in place when it is complete: an interrupted export leaves `--out` as it was, and
`--overwrite` replaces a folder only with a finished export. Only a dataset that `comco
validate` accepts is exported. `comco-export.json` in the export says what it holds.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, replace
from pathlib import Path

from comco import __version__
from comco.data.export.samples import CAPTION_MODES, choose_template, samples
from comco.data.export.staging import Staging, check_replaceable, sweep, write_error
from comco.data.folder import INFO, SCENES, Dataset, image_file
from comco.data.validate import validate_dataset
from comco.errors import UserError
from comco.io import read_json, write_json
from comco.progress import progress

MARKER = "comco-export.json"


@dataclass(frozen=True)
class Format:
    tool: str  # the program that reads it
    needs_captions: bool
    module: str  # comco.data.export.<module>
    write: str  # names in that module: the writer and the line that tells how to use the export
    usage: str
    # The writer takes what the module's `prepare(dataset, opts)` returned (pairs are grouped across
    # records, and bad input is refused before anything is written), not samples.
    whole: bool = False


FORMATS = {
    "clip-benchmark": Format("CLIP_benchmark (zero-shot retrieval, --dataset wds/...)", True, "clip_benchmark",
                             "write", "usage"),
    "open-clip-csv": Format("open_clip_train (--dataset-type csv)", True, "open_clip", "write_csv", "usage_csv"),
    "open-clip-wds": Format("open_clip_train (--dataset-type webdataset)", True, "open_clip", "write_wds",
                            "usage_wds"),
    "hf": Format("Hugging Face datasets (imagefolder)", False, "hf", "write", "usage"),
    # the pair benchmarks' formats (a pair dataset; VL-CheckList's object tuples take any dataset)
    "winoground": Format("Winoground (facebook/winoground's loading script)", True, "winoground", "write", "usage",
                         whole=True),
    "sugarcrepe": Format("SugarCrepe (main_eval.py)", True, "sugarcrepe", "write", "usage", whole=True),
    "vl-checklist": Format("VL-CheckList (vl_checklist.data_loader, TUPLE_JSON)", True, "vl_checklist", "write",
                           "usage", whole=True),
    "spec": Format("SPEC (spec.dataset.get_data)", True, "spec", "write", "usage", whole=True),
}


@dataclass(frozen=True)
class ExportOptions:
    template: str | None
    captions: str
    shard_bytes: int
    shard_count: int
    csv_separator: str


UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
         "kib": 2**10, "mib": 2**20, "gib": 2**30}


def parse_bytes(text: str | int) -> int:
    """"1GB", "500MB", "64MiB" or a byte count, as bytes."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in UNITS:
        raise UserError(f"--shard-size {text}: give bytes such as 1GB, 500MB, 64MiB or 100000")
    return int(float(m.group(1)) * UNITS[m.group(2).lower()])


def parse_separator(text: str) -> str:
    sep = {"tab": "\t", "\\t": "\t", "comma": ","}.get(text, text)
    if len(sep) != 1 or sep in "\"\n\r":
        raise UserError(f"--csv-separator {text!r}: one character (tab, comma, ';' ...)")
    return sep


def describe_export(folder: Path) -> str:
    """What a marker says an earlier export is (or that the folder holds other files)."""
    try:
        old = read_json(folder / MARKER, "export record") if (folder / MARKER).is_file() else None
    except UserError:
        old = None
    if isinstance(old, dict):
        return f"a comco export ({old.get('format', '?')}) of {old.get('dataset', '?')}"
    return "other files"


def check_out(out: Path, root: Path, overwrite: bool) -> None:
    """Refuse an --out that is a file, a dataset, lies inside the dataset or holds it, cannot be
    replaced (read-only), or holds anything (without --overwrite)."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder")
    resolved = out.resolve()
    if resolved == root or resolved in root.parents:
        raise UserError(f"--out {out} holds the dataset being exported; choose a folder outside {root}")
    if resolved.is_relative_to(root):  # images/, masks/, singles/: --overwrite would replace the dataset's files
        raise UserError(f"--out {out} lies inside the dataset being exported ({root}); choose a folder outside it")
    if (out / INFO).is_file() and (out / SCENES).is_file():
        raise UserError(f"--out {out} is a comco dataset; choose another --out (an export never replaces one)")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise UserError(f"--out {out} holds {describe_export(out)}; pass --overwrite to replace it "
                        f"or choose an empty folder")
    check_replaceable(out)


def check_dataset(dataset: Dataset) -> None:
    """Refuse a dataset that `comco validate` does not accept (its first reason, one line): the export
    carries every record's image, so every image is decoded, rendered or not."""
    first = next(iter(dataset.records()), None)
    if isinstance(first, dict) and isinstance(first.get("image"), str) and not dataset.info.get("rendered"):
        try:
            unrendered = not image_file(dataset.root, first).exists()
        except UserError:
            unrendered = False  # validate names the bad path
        if unrendered:
            raise UserError(f"{dataset.root}: record {first.get('id')} has no image ({first['image']}); "
                            f"render it (`comco render`) first")
    problems = validate_dataset(dataset.root, images=True)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(f"{problems[0]}{more}: the export takes only what `comco validate {dataset.root}` accepts; "
                        f"it lists every problem (`comco render --resume` renders missing images)")


def export_dataset(root: str | Path, to: str, out: str | Path, *, template: str | None = None,
                   captions: str = "all", shard_size: str | int = "1GB", shard_count: int = 10_000,
                   csv_separator: str = "tab", overwrite: bool = False, quiet: bool = False) -> dict:
    """Export a dataset folder for another tool.

    Args:
        root: the dataset folder (rendered: every format carries the images).
        to: a name of FORMATS.
        out: the export's folder.
        template: the caption template (default: the dataset's first).
        captions: "all" (one per mention order, where the format has room) or "first".
        shard_size, shard_count: bounds of one tar shard (bytes such as "1GB"; samples).
        csv_separator: the CSV's delimiter ("tab", "comma" or one character).
        overwrite: replace what --out holds.
        quiet: no progress bar.
    Returns a summary: format, counts, files, and `use`, the command that reads the export.
    """
    if to not in FORMATS:
        raise UserError(f"--to {to}: unknown format; choose one of {', '.join(FORMATS)}")
    fmt = FORMATS[to]
    if captions not in CAPTION_MODES:
        raise UserError(f"--mention-orders {captions}: choose {' or '.join(CAPTION_MODES)}")
    opts = ExportOptions(template, captions, parse_bytes(shard_size), int(shard_count),
                         parse_separator(csv_separator))
    dataset = Dataset(Path(root).resolve())
    # pair formats: each factor's own template unless one is named
    chosen = choose_template(dataset, template) if template is not None or not fmt.whole else None
    if fmt.needs_captions and chosen is None and not fmt.whole:
        raise UserError(f"{root} has no captions, and the {to} layout ({fmt.tool}) pairs each image with text; "
                        f"plan the dataset with caption templates or export it --to hf")
    opts = replace(opts, template=chosen)
    out = Path(out)
    sweep(out)  # what killed exports into --out left
    check_out(out, dataset.root, overwrite)
    check_dataset(dataset)
    module = importlib.import_module(f"comco.data.export.{fmt.module}")
    prepared = module.prepare(dataset, opts) if fmt.whole else None
    counts = dataset.info.get("counts") or {}
    total = int(counts.get("rendered", counts.get("images", 0)) or 0)
    staging = Staging(out)
    try:
        tmp = staging.new
        with progress(total, f"export {to}", "images", quiet) as bar:
            items = prepared if fmt.whole else samples(dataset, chosen, captions)
            summary = getattr(module, fmt.write)(items, tmp, opts, bar)
        chosen = summary.pop("template", chosen) or ("each factor's" if fmt.whole else None)
        summary = {"format": to, "tool": fmt.tool, "dataset": str(dataset.root),
                   "dataset_config_hash": dataset.info.get("config_hash"), "template": chosen,
                   "captions": captions, "generator": f"comco {__version__}", **summary}
        summary["use"] = getattr(module, fmt.usage)(out.resolve(), summary, opts)
        write_json(tmp / MARKER, summary)
        staging.publish()
    except OSError as exc:
        error = write_error(exc, out)
        if error is None:
            raise
        raise error from None
    finally:
        staging.close()
    return summary
