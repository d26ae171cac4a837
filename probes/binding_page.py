"""LABCLIP's binding accuracy as a page (report.md and report.html beside binding.json) and as the
lines `comco train labclip` prints: each number with its count, its 95 % interval resampled by
image, chance, and the too-few rule, as the probe page reads its numbers."""

from __future__ import annotations

from pathlib import Path

from comco.io import write_text
from comco.report import MIN_TRIALS, Dashes, Doc, interval, pct, stat_text, too_few, units

SPLITS = {"test": "held-out images", "train": "training images"}
ABOUT = ("binding accuracy: how often an image is closer to its own caption than to the same caption with two "
         "attributes swapped (LABCLIP's cross-modal binding); before is the frozen model (identity map), after the "
         "trained text map")


def binding_lines(report: dict) -> list[str]:
    """One line per split and moment: "held-out before: 37.5 % [0.0-50.0], n=8 (2 images), chance 50.0 %"
    (with the count first when too few), then the held-out change with its paired interval."""
    lines = []
    for split, name in SPLITS.items():
        for when in ("before", "after"):
            stat = (report.get("binding_stats") or {}).get(when, {}).get(split)
            if stat:
                lines.append(f"{name.split()[0]} {when}: {stat_text(stat, 'images')}")
    change = (report.get("binding_change") or {}).get("test")
    if change:
        lines.append(f"held-out change (after - before, paired by caption): {change_text(change)}")
    return lines


def change_text(change: dict) -> str:
    """"+12.5 points [-3.1, +25.0], n=40 (10 images)", the count first when too few to read."""
    value = (f"{100 * change['acc']:+.1f} points [{100 * change['lo']:+.1f}, {100 * change['hi']:+.1f}], "
             f"n={change['n']} ({change['clusters']} images)")
    few = too_few(units(change), unit="images")
    return f"{few} ({value})" if few else value


def write_binding_page(out: Path, report: dict) -> list[Path]:
    """report.md and report.html: the binding table with count, interval, resampled images and chance
    in every row; a number from fewer than MIN_TRIALS images shows its count instead."""
    out = Path(out)
    dashes = Dashes()
    rows = []
    for split, name in SPLITS.items():
        for when in ("before", "after"):
            s = (report.get("binding_stats") or {}).get(when, {}).get(split)
            if not s:
                rows.append([name, when, dashes.dash("no captions in this split"), "", "", "", ""])
                continue
            few = too_few(units(s), unit="images")
            rows.append([name, when, few or pct(s["acc"]), "" if few else interval(s["lo"], s["hi"]), s["n"],
                         s["clusters"], pct(s["chance"])])
    doc = Doc()
    doc.h(1, "LABCLIP: attribute binding before and after the text map")
    doc.p(ABOUT + ".")
    doc.p(f"Values are %; 95 % bootstrap interval resampled by image (an image's captions are not independent); "
          f"n counts captions, images the resampled units; a number from fewer than {MIN_TRIALS} images shows its "
          "count instead (\"8 images: too few to read\"); binding.json keeps every number.")
    doc.table(["images", "map", "binding accuracy", "95% CI", "n", "images resampled", "chance"], rows)
    if dashes.reasons:
        doc.p(dashes.note())
    change = (report.get("binding_change") or {}).get("test")
    if change:
        doc.p(f"Held-out change, after - before (the same captions, paired; resampled by image): "
              f"{change_text(change)}.")
    return [write_text(out / "report.md", doc.markdown(out)),
            write_text(out / "report.html", doc.html("comco train labclip: binding"))]
