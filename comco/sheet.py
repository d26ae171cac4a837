"""Labelled image grids (contact sheets) drawn with PIL: the one home of the plumbing that
`comco objects preview` (comco.scenes.preview) and `comco dataset pairs-sheet`
(comco.data.sheet) share. No bpy, no dataset: tiles in, one PNG out.

A sheet is rows of tiles; each tile is an image and the lines of text under it. Every
image is drawn at one cell size (`tile` pixels wide, the first image's aspect), scaled
with nearest-neighbour (integer pixels, what the model saw) or bicubic resampling, and
each label line is wrapped to the cell's width.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from comco.errors import UserError
from comco.io import atomic_path

RESAMPLE = {"nearest": Image.Resampling.NEAREST, "bicubic": Image.Resampling.BICUBIC}
PAD = 4  # pixels of margin left of the text


@dataclass(frozen=True)
class Tile:
    image: Image.Image
    lines: tuple[str, ...]


def font(px: int):
    """DejaVu Sans at `px` pixels where it is installed, PIL's own font otherwise."""
    for name in ("DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"):
        try:
            return ImageFont.truetype(name, px)
        except OSError:
            continue
    return ImageFont.load_default()


def wrap(text: str, fnt, width: int) -> list[str]:
    """`text` broken at spaces into lines no wider than `width` pixels (a longer word keeps its own line)."""
    lines, line = [], ""
    for word in text.split():
        trial = f"{line} {word}" if line else word
        if line and fnt.getlength(trial) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    return [*lines, line] if line else lines or [""]


def resample_of(name: str):
    if name not in RESAMPLE:
        raise UserError(f"--resample {name}: use {' or '.join(RESAMPLE)}")
    return RESAMPLE[name]


@dataclass(frozen=True)
class Layout:
    """Where draw_grid puts everything: the cell size, the font, each tile's wrapped lines, each row's top."""
    width: int
    height: int
    font: object
    line_h: int
    head: int
    gap: int
    lines: list[list[list[str]]]
    tops: list[int]
    size: tuple[int, int]
    title_lines: tuple[str, ...] = ()

    def box(self, r: int, c: int) -> tuple[int, int, int, int]:
        """The image of row r, column c: (x0, y0, x1, y1)."""
        x, y = c * (self.width + self.gap), self.tops[r]
        return x, y, x + self.width, y + self.height


def layout(rows: list[list[Tile]], *, tile: int | None = None, font_px: int | None = None, title: str = "",
           gap: int = 0) -> Layout:
    """The grid of draw_grid(rows, ...) (same arguments), without drawing it."""
    first = next((t.image for row in rows for t in row), None)
    if first is None:
        raise ValueError("a sheet needs at least one tile")
    width = tile or first.width
    height = max(1, round(width * first.height / first.width))
    px = font_px or max(11, width // 9 - 3)
    fnt, line_h = font(px), px + 3
    lines = [[[w for line in t.lines for w in wrap(line, fnt, width - 2 * PAD)] for t in row] for row in rows]
    columns = max(len(row) for row in rows)
    sheet_w = columns * width + (columns - 1) * gap
    # a title wider than the sheet wraps (a one-line title keeps the head it always had)
    title_lines = tuple(wrap(title, fnt, sheet_w - 2 * PAD - 4)) if title else ()
    head = line_h * len(title_lines) + 8 if title else 0
    tops, y = [], head
    for row in lines:
        tops.append(y)
        n = max((len(x) for x in row), default=0)
        y += height + (line_h * n + 2 if n else 0) + gap
    return Layout(width, height, fnt, line_h, head, gap, lines, tops, (sheet_w, y - gap), title_lines)


def draw_grid(rows: list[list[Tile]], *, tile: int | None = None, font_px: int | None = None, title: str = "",
              resample: str = "nearest", gap: int = 0) -> Image.Image:
    """The sheet as one RGB image: row r, column c holds rows[r][c] and its wrapped label lines.

    Args:
        rows: the tiles, row by row (rows may differ in length; the sheet is as wide as the longest).
        tile: cell width in pixels (default: the first image's own width).
        font_px: label text size (default: a ninth of the cell width less 3, at least 11).
        title: the text above the grid ("" for none), wrapped to the sheet's width.
        resample: "nearest" or "bicubic", for images not already at the cell size.
        gap: white pixels between cells."""
    how = resample_of(resample)
    g = layout(rows, tile=tile, font_px=font_px, title=title, gap=gap)
    sheet = Image.new("RGB", g.size, "white")
    draw = ImageDraw.Draw(sheet)
    for k, line in enumerate(g.title_lines):
        draw.text((PAD + 2, 4 + k * g.line_h), line, fill="black", font=g.font)
    for r, row in enumerate(rows):
        for c, t in enumerate(row):
            x, y, _, _ = g.box(r, c)
            img = t.image.convert("RGB")
            sheet.paste(img if img.size == (g.width, g.height) else img.resize((g.width, g.height), how), (x, y))
            for k, line in enumerate(g.lines[r][c]):
                draw.text((x + PAD, y + g.height + 1 + k * g.line_h), line, fill="black", font=g.font)
    return sheet


def save_png(image: Image.Image, out: str | Path, text: dict[str, str] | None = None) -> None:
    """Write the sheet atomically; `text` goes into PNG tEXt chunks (png_text reads them back)."""
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    for key, value in (text or {}).items():
        info.add_text(key, value)
    with atomic_path(out) as tmp:
        image.save(tmp, format="PNG", optimize=True, pnginfo=info)


def png_text(path: str | Path) -> dict[str, str] | None:
    """A PNG file's tEXt chunks, or None when the file is not a PNG."""
    try:
        with Image.open(path) as im:
            return dict(im.text) if im.format == "PNG" else None
    except (OSError, SyntaxError, ValueError):  # PIL's errors for bytes that are not an image
        return None
