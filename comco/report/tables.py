"""Tables for people (Markdown) and for spreadsheets (CSV), and the number formats the
reports share: shares as percentages, intervals as [lo, hi]."""

from __future__ import annotations

import csv
import io
from typing import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence] | Sequence[dict]) -> str:
    """A GitHub Markdown table.

    Args:
        header: the column names.
        rows: lists of cells in header order, or dicts keyed by column name (missing cells blank).
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row.get(c, "") for c in header] if isinstance(row, dict) else row
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
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
