"""Tables for people (Markdown) and for spreadsheets (CSV), and the number formats the
reports share: shares as percentages, intervals as [lo, hi], the minimum count a number
needs to be read (MIN_TRIALS, too_few) and the footnoted reasons of empty cells (Dashes)."""

from __future__ import annotations

import csv
import io
import re
from typing import Sequence

# A "<" that would open an HTML tag, comment or declaration in Markdown (CommonMark passes raw
# HTML through): "<img onerror=...>", "</p>", "<!--", "<?". A "<" before a space or digit stays.
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def md_text(text) -> str:
    """Text for a Markdown document with no raw HTML left in it: what a user wrote (template,
    set, recipe names, a recipe's description, paths) shows as written and never runs.
    Markdown's own marks (`code`, **bold**, *italics*) keep working. Every Markdown line a
    report writes goes through this (Doc.markdown and markdown_table do it themselves)."""
    return _TAG_START.sub("&lt;", str(text))


def md_line(text) -> str:
    """md_text on one line (a heading, a list item): line breaks become spaces, so a name
    cannot start a new block."""
    return " ".join(md_text(text).splitlines())


def md_cell(text) -> str:
    """md_line for a table cell: a "|" is escaped, so it cannot end the cell."""
    return md_line(text).replace("|", "\\|")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence] | Sequence[dict]) -> str:
    """A GitHub Markdown table, every cell escaped (md_cell).

    Args:
        header: the column names.
        rows: lists of cells in header order, or dicts keyed by column name (missing cells blank).
    """
    lines = ["| " + " | ".join(md_cell(c) for c in header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row.get(c, "") for c in header] if isinstance(row, dict) else row
        lines.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def csv_text(header: Sequence[str], rows: Sequence[Sequence] | Sequence[dict]) -> str:
    """CSV with a header line; rows as lists in header order or dicts keyed by column name."""
    buffer = io.StringIO()
    if rows and isinstance(rows[0], dict):
        writer = csv.DictWriter(buffer, list(header), extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    else:
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return buffer.getvalue()


def pct(value: float | None, digits: int = 1) -> str:
    """A share as a percentage without the sign ("" for None)."""
    return "" if value is None else f"{100 * value:.{digits}f}"


def interval(lo: float | None, hi: float | None, digits: int = 1, sep: str = "-") -> str:
    """A share interval as percentages, "51.2-60.3" ("" when unknown)."""
    if lo is None or hi is None:
        return ""
    return f"{100 * lo:.{digits}f}{sep}{100 * hi:.{digits}f}"


MIN_TRIALS = 20  # a number from fewer trials is shown as its count: its interval is too wide to read
SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"


def units(stat: dict | None) -> int | None:
    """What the too-few rule counts for a figure: the units its bootstrap resamples (stat["clusters"]:
    images, pairs, sampled tuples) where there are fewer of them than trials, else its trials ("n").
    32 trials from 8 pairs are 8 draws of the interval, not 32."""
    if not stat:
        return None
    n, c = stat.get("n"), stat.get("clusters")
    if isinstance(c, int) and not isinstance(c, bool) and c > 0 and (n is None or c < n):
        return c
    return n


def too_few(n: int | None, of: int | None = None, unit: str = "trials", clusters: int | None = None) -> str | None:
    """A cell's text when its number comes from fewer than MIN_TRIALS trials ("2 of 32 kept: too
    few to read", `of` the trials it was kept from; "12 images: too few to read"), or from fewer
    than MIN_TRIALS resampled units (`clusters`: "32 trials from 8 resampled units: too few to
    read"), else None."""
    if n is not None and n < MIN_TRIALS:
        return f"{n} of {of} kept: too few to read" if of is not None else f"{n} {unit}: too few to read"
    if clusters is not None and n is not None and 0 < clusters < min(n, MIN_TRIALS):
        return f"{n} {unit} from {clusters} resampled units: too few to read"
    return None


class Dashes:
    """The reasons for a table's empty cells: each "–" carries the mark of its reason, and
    the reasons follow the table as footnotes."""

    def __init__(self):
        self.reasons: list[str] = []

    def dash(self, why: str) -> str:
        if why not in self.reasons:
            self.reasons.append(why)
        return "–" + "".join(SUPERSCRIPTS[int(d)] for d in str(self.reasons.index(why) + 1))

    def note(self) -> str:
        return " ".join(f"{self.dash(why)[1:]} {why}." for why in self.reasons)
