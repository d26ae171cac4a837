"""The dataset contact sheets: `comco dataset sheet DATASET --out DIR` (scenes with their captions
and sizes, at the end) and `comco dataset pairs-sheet DATASET --out DIR` (counterfactual pairs).

One row per pair group (a base record and its variants, in the dataset's order): the base
image, then each variant in the order of the factors. Under a variant: its factor and the
caption pair the pair probe sets against each other (comco.data.pairing: the template that
names the factor, the first mention order whose two captions differ), the variant's caption
first. Under the base: its id and its `and` caption. Drawn with comco.sheet (no bpy).
"""

from __future__ import annotations

import os
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from comco.data.folder import Dataset
from comco.data.pairing import BASE, FACTOR_TEMPLATES, FACTORS, find_pairs, has_pairs, pair_captions
from comco.errors import UserError
from comco.plan import parse_pairs
from comco.sheet import Tile, draw_grid, layout, png_text, resample_of, save_png

GAP = 4  # white pixels between cells
# the PNG text that marks a sheet this command wrote (so --out replaces only such a file)
SOFTWARE_KEY, SOFTWARE = "Software", "comco dataset pairs-sheet"


def pair_groups(records: list[dict], factors: tuple[str, ...] = ()) -> list[tuple[dict, list]]:
    """(base record, [its Pairs in FACTORS order, only `factors` when given]) per pair group, in record order."""
    pairs, _orphans = find_pairs(records)
    groups: dict[str, tuple[dict, list]] = {}
    for p in pairs:
        if not factors or p.factor in factors:
            groups.setdefault(p.id, (p.base, []))[1].append(p)
    rank = {f: k for k, f in enumerate(FACTORS)}
    return [(base, sorted(ps, key=lambda p: rank.get(p.factor, len(rank)))) for base, ps in groups.values()]


def base_lines(base: dict) -> tuple[str, ...]:
    caps = (base.get("captions") or {}).get("and") or [""]
    return f"{base['id']} {BASE}", caps[0]


def variant_lines(pair) -> tuple[str, ...]:
    """The factor (and its template), the variant's caption and the base's, as the probe compares them."""
    template = FACTOR_TEMPLATES.get(pair.factor, "?")
    head = f"{pair.factor} ({template})"
    differ, _identical = pair_captions(pair)
    if differ:
        return head, differ[0].variant, f"base: {differ[0].base}"
    caps = (pair.variant.get("captions") or {}).get(template)
    return (head, caps[0], "(the base's caption is the same)") if caps else (head, f"(no {template} caption)")


def sheet_rows(data: Dataset, *, limit: int, factors: tuple[str, ...] = ()) -> list[list[tuple[Path, tuple]]]:
    """Rows of (image path, label lines): the first `limit` pair groups of the dataset."""
    records = [r for r in data.records() if isinstance(r, dict) and "objects" in r]
    if not has_pairs(records):
        raise UserError(f"{data.root} has no pair records; render it with `comco render --pairs FACTOR[,...]`")
    have = {p.factor for p in find_pairs(records)[0]}
    missing = [f for f in factors if f not in have]
    if missing:
        raise UserError(f"--factors {missing[0]}: {data.root} has no {missing[0]} pairs "
                        f"(it has {', '.join(f for f in FACTORS if f in have)})")
    groups = pair_groups(records, factors)[:limit]
    return [[(data.image_path(base), base_lines(base)), *((data.image_path(p.variant), variant_lines(p)) for p in ps)]
            for base, ps in groups]


def sheet_title(data: Dataset, groups: int, size: tuple[int, int]) -> str:
    """The line above the sheet (wrapped by comco.sheet where the sheet is narrower)."""
    w, h = size
    return (f"{data.root.name} ({data.info.get('object_set', '?')}, {w} x {h} px renders): {groups} pair groups "
            f"(base, then one variant per factor)")


def check_sheet_out(out: Path, software: str = SOFTWARE) -> None:
    """The sheet's PNG file is in a writable folder; an existing file is replaced only when it is a
    sheet this command (`software`) wrote (its PNG text says so), never another file the user keeps there."""
    if out.is_dir():
        raise UserError(f"--out {out} is a folder; give the sheet's PNG file name (e.g. {out / 'sheet.png'})")
    if out.exists() and (png_text(out) or {}).get(SOFTWARE_KEY) != software:
        raise UserError(f"--out {out} exists and is not a sheet `{software}` wrote; choose another folder "
                        f"(only an earlier sheet is replaced)")
    folder = next((p for p in out.absolute().parents if p.exists()), None)  # the sheet's, or where it is made
    if folder is not None and (not folder.is_dir() or not os.access(folder, os.W_OK)):
        why = "is a file" if not folder.is_dir() else "is not writable (read-only)"
        raise UserError(f"--out {out}: {folder} {why}; choose another place for the sheet")


def _open(path: Path, root: Path) -> Image.Image:
    try:
        with Image.open(path) as im:
            return im.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise UserError(f"{path} cannot be read ({exc.__class__.__name__}); `comco validate {root}` "
                        f"lists the broken images") from None


def pair_sheet(dataset: str | Path, out: str | Path, *, limit: int = 8, factors: str | None = None,
               tile: int = 192, resample: str = "nearest") -> dict:
    """Draw the sheet of `dataset` to the PNG `out`; returns rows, columns and the sheet's size.

    Args:
        limit: pair groups (rows) to show, the first ones in the dataset's order.
        factors: comma-separated factors to show (default: every factor of the dataset).
        tile: cell width in pixels; 64 px renders are scaled up to it.
        resample: "nearest" (the rendered pixels, enlarged) or "bicubic"."""
    root = Path(dataset)
    if not root.is_dir():
        raise UserError(f"{root} does not exist or is not a folder; give a dataset rendered with "
                        f"`comco render --pairs`")
    out = Path(out)
    check_sheet_out(out)
    if limit < 1:
        raise UserError(f"--limit {limit}: show at least one pair group")
    if not 16 <= tile <= 1024:
        raise UserError(f"--tile {tile}: use 16..1024 pixels")
    resample_of(resample)
    chosen = parse_pairs(factors, "--factors") if factors is not None else ()
    data = Dataset(root)
    rows = sheet_rows(data, limit=limit, factors=chosen)
    absent = [p for row in rows for p, _ in row if not p.is_file()]
    if absent:
        raise UserError(f"{root}: {len(absent)} of the sheet's images are not rendered (first: "
                        f"{absent[0].relative_to(root)}); render the dataset with `comco render` first")
    tiles = [[Tile(_open(p, root), lines) for p, lines in row] for row in rows]
    grid = {"tile": tile, "gap": GAP, "title": sheet_title(data, len(rows), tiles[0][0].image.size),
            "font_px": max(11, tile // 15)}
    try:
        save_png(draw_grid(tiles, resample=resample, **grid), out, {SOFTWARE_KEY: SOFTWARE})
    except OSError as exc:
        raise UserError(f"--out {out}: the sheet could not be written ({exc.strerror}); nothing was written") from None
    return {"rows": len(rows), "columns": max(len(r) for r in rows), "size": layout(tiles, **grid).size}


# ---------------------------------------------------------------- the dataset's own sheet

DATASET_SOFTWARE = "comco dataset sheet"


def scene_lines(record: dict, template: str | None = None) -> tuple[str, ...]:
    """Under a scene: its id and resolution, its first caption (of `template`, else the first
    template the record has) and each object's name with its size: the share of the image it
    covers as rendered (measured), else its planned scale, largest first."""
    caps = record.get("captions") or {}
    name = template if template in caps else next(iter(caps), None)
    caption = f"{name}: {caps[name][0]}" if name and caps[name] else "(no caption)"
    w, h = (record.get("resolution") or ["?", "?"])[:2]
    objs = sorted(record.get("objects") or [], key=lambda o: o.get("size_rank", 0))
    sizes = []
    for o in objs:
        fraction = (o.get("measured") or {}).get("fraction")
        size = f"{100 * fraction:.1f}%" if isinstance(fraction, (int, float)) else f"x{o.get('scale', 0):.2g}"
        sizes.append(f"{o.get('name', '?')} {size}")
    return f"{record.get('id', '?')}  {w} x {h} px", caption, ", ".join(sizes)


def dataset_sheet(dataset: str | Path, out: str | Path, *, limit: int = 16, columns: int = 4, tile: int = 192,
                  template: str | None = None, resample: str = "nearest") -> dict:
    """Draw a contact sheet of a rendered dataset to the PNG `out`: its first `limit` scenes, each
    with its id, size in pixels, a caption and every object's size (share of the image).

    Args:
        dataset: a dataset folder made by `comco render`.
        out: the PNG file to write (an existing file is replaced only when this function wrote it).
        limit: scenes to show, the first ones in the dataset's order.
        columns: scenes per row.
        tile: cell width in pixels; small renders are scaled up to it.
        template: the caption template shown under each image (default: "and", else the record's first).
        resample: "nearest" (the rendered pixels, enlarged) or "bicubic".

    Returns:
        A dict with the number of scenes shown, the rows and columns and the sheet's size in pixels.
    """
    root = Path(dataset)
    if not root.is_dir():
        raise UserError(f"{root} does not exist or is not a folder; give a dataset made by `comco render`")
    out = Path(out)
    check_sheet_out(out, DATASET_SOFTWARE)
    if limit < 1 or columns < 1:
        raise UserError(f"--limit {limit}, --columns {columns}: show at least one scene in at least one column")
    if not 16 <= tile <= 1024:
        raise UserError(f"--tile {tile}: use 16..1024 pixels")
    resample_of(resample)
    data = Dataset(root)
    records = []
    for r in data.records():
        if isinstance(r, dict) and "objects" in r:
            records.append(r)
        if len(records) == limit:
            break
    if not records:
        raise UserError(f"{root} holds no scene records; make it with `comco render`")
    absent = [r for r in records if not data.image_path(r).is_file()]
    if absent:
        raise UserError(f"{root}: {len(absent)} of the sheet's {len(records)} images are not rendered (first: "
                        f"{absent[0].get('image')}); a planned dataset has none: render it with `comco render`")
    cells = [Tile(_open(data.image_path(r), root), scene_lines(r, template or "and")) for r in records]
    rows = [cells[k:k + columns] for k in range(0, len(cells), columns)]
    size = cells[0].image.size
    title = (f"{root.name} ({data.info.get('object_set', '?')}, {size[0]} x {size[1]} px): first {len(cells)} "
             f"of {len(data)} scenes; sizes are each object's share of the image")
    grid = {"tile": tile, "gap": GAP, "title": title, "font_px": max(11, tile // 15)}
    try:
        save_png(draw_grid(rows, resample=resample, **grid), out, {SOFTWARE_KEY: DATASET_SOFTWARE})
    except OSError as exc:
        raise UserError(f"--out {out}: the sheet could not be written ({exc.strerror}); nothing was written") from None
    return {"scenes": len(cells), "rows": len(rows), "columns": min(columns, len(cells)),
            "size": layout(rows, **grid).size}
