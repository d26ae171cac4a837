"""results.json, Markdown and CSV tables, and PNG plots for `comco eval`.

Measured rows say "measured" and name the protocol; published rows say where they
come from. Every file is written to a temporary name first, then renamed.
"""

from __future__ import annotations

import json
from pathlib import Path

from comco.io import write_text
from comco.probes.natural.analyses import ANALYSES
from comco.report.document import Doc
from comco.report.plots import legend_beside, pyplot, save
from comco.report.tables import MIN_TRIALS, Dashes, csv_text, interval, pct, too_few

MEASURED = "measured"


def header_lines(payload: dict) -> list[str]:
    split = payload["split"]
    skipped = ", ".join(f"{n} {why}" for why, n in split["skipped"].items()) or "none"
    return [
        f"benchmark: **{payload['benchmark']}** ({payload['benchmark_about']}), split {split['split']}, "
        f"{split['n_images']} images, {split['n_captions']} captions",
        f"protocol: **{payload['protocol']}** = {payload['protocol_about']}",
        f"left out of the split: {skipped}",
        "values are % (R@k); measured R@1 with a 95 % bootstrap interval (text queries resampled by image); "
        "chance R@1 is 1 / images, a random ranking's R@1 either way",
        f"a measured R@k from fewer than {MIN_TRIALS} queries shows its count instead (\"12 text queries: too few "
        "to read\"); results.json and the CSV keep every number; each – carries a mark whose reason follows its "
        "table",
    ]


CHANCE = "chance R@1"
CHANCE_UNKNOWN = "chance depends on the size of the paper's split"


def chance_r1(n_images) -> str:
    """A random ranking's R@1 as a percentage: one image (or an image's share of the captions) in `n_images`."""
    return pct(1 / n_images) if n_images else ""


def _page(title: str, lines: list[str]) -> Doc:
    doc = Doc()
    doc.h(1, title)
    for line in lines:
        doc.p(line)
    return doc


def _table(doc: Doc, header: list[str], rows: list[dict], dashes: Dashes) -> None:
    doc.table(header, [[row.get(c, "") for c in header] for row in rows])
    if dashes.reasons:
        doc.p(dashes.note())


def _write_page(out: Path, kind: str, doc: Doc, payload: dict) -> list[Path]:
    """`kind`.md beside its PNGs and `kind`.html (figures inline): the probe page's machinery."""
    return [write_text(out / f"{kind}.md", doc.markdown(out)),
            write_text(out / f"{kind}.html", doc.html(f"comco eval {kind}: {payload['benchmark']}"))]


def readable_rows(header: list[str], rows: list[dict], dashes: Dashes, queries, published: str) -> list[dict]:
    """The Markdown table's rows: a measured recall from too few queries says so (`queries(row,
    column)` gives (count, unit) for a recall column, else None), and every empty cell carries
    the mark of its reason (`published`: why a published row lacks it)."""
    out = []
    for row in rows:
        shown = dict(row)
        for column in header:
            q = queries(row, column) if row["source"] == MEASURED else None
            few = too_few(q[0], unit=q[1]) if q else None
            if few:
                shown[column] = few
            elif shown.get(column, "") == "":
                shown[column] = dashes.dash(CHANCE_UNKNOWN if column == CHANCE and row["source"] != MEASURED else
                                            published if row["source"] != MEASURED else
                                            "no interval: the bootstrap was not run" if "CI" in column else
                                            "not measured")
        out.append(shown)
    return out


def _retrieval_queries(row: dict, column: str):
    """T2I recalls rank images for each text; I2T recalls rank texts for each image."""
    if column.startswith("T2I"):
        return row.get("texts"), "text queries"
    if column.startswith("I2T"):
        return row.get("images"), "image queries"
    return None


# ---------------------------------------------------------------- retrieval

RETRIEVAL_COLUMNS = ["source", "model", "protocol", "T2I R@1", "T2I R@1 95% CI", "T2I R@5", "T2I R@10",
                     "I2T R@1", "I2T R@1 95% CI", "I2T R@5", "I2T R@10", "texts", "images", "chance R@1"]


def retrieval_rows(payload: dict) -> list[dict]:
    rows = []
    for model in payload["models"]:
        r = model["result"]
        row = {"source": MEASURED, "model": model["label"], "protocol": r["protocol"],
               "texts": r["n_texts"], "images": r["n_images"], CHANCE: chance_r1(r["n_images"])}
        for d, name in (("t2i", "T2I"), ("i2t", "I2T")):
            row.update({f"{name} R@{k}": pct(r[d][f"R@{k}"]) for k in (1, 5, 10)})
            row[f"{name} R@1 95% CI"] = interval(*(r[d].get("R@1_ci95") or (None, None)))
        rows.append(row)
    for ref in payload["published"]:
        rows.append({"source": ref["source"], "model": ref["model"], "protocol": "as published",
                     "T2I R@1": pct(ref["t2i"]["R@1"]), "I2T R@1": pct(ref["i2t"]["R@1"])})
    return rows


def write_retrieval_report(out: Path, payload: dict) -> list[Path]:
    """results.json, retrieval.csv, the R@1 figure and the page (retrieval.md, retrieval.html)."""
    rows, dashes = retrieval_rows(payload), Dashes()
    doc = _page("Retrieval", header_lines(payload))
    _table(doc, RETRIEVAL_COLUMNS, readable_rows(RETRIEVAL_COLUMNS, rows, dashes, _retrieval_queries,
                                                 "the paper publishes R@1 only"), dashes)
    written = [write_text(out / "results.json", json.dumps(payload, indent=2) + "\n"),
               write_text(out / "retrieval.csv", csv_text(RETRIEVAL_COLUMNS, rows))]
    bars = {row["model"] + ("" if row["source"] == MEASURED else " (published)"):
            {"T2I": row["T2I R@1"], "I2T": row["I2T R@1"]} for row in rows}
    written.append(grouped_bars(out / "retrieval_r1.png", bars, ["T2I", "I2T"],
                                f"{payload['benchmark']} R@1 (protocol {payload['protocol']})"))
    doc.img(written[-1], "R@1 per model, both directions")
    return written + _write_page(out, "retrieval", doc, payload)


# ---------------------------------------------------------------- analyses

ANALYSIS_COLUMNS = ["source", "model", "protocol", "analysis", "variant", "direction",
                    "R@1", "R@1 95% CI", "R@5", "R@10", "captions", "excluded captions", "chance R@1"]


def analysis_rows(payload: dict) -> list[dict]:
    rows = []
    for model in payload["models"]:
        for name, entry in model["analyses"].items():
            d = entry["direction"]
            for variant, r in entry["variants"].items():
                rows.append({"source": MEASURED, "model": model["label"], "protocol": entry["protocol"],
                             "analysis": name, "variant": variant, "direction": d,
                             "R@1": pct(r[d]["R@1"]), "R@1 95% CI": interval(*(r[d].get("R@1_ci95") or (None, None))),
                             "R@5": pct(r[d]["R@5"]), "R@10": pct(r[d]["R@10"]),
                             "captions": entry["n_captions"], "excluded captions": entry["excluded_captions"],
                             CHANCE: chance_r1(payload["split"]["n_images"])})
    for name, refs in payload["published"].items():
        for ref in refs:
            for variant, value in ref["r1"].items():
                rows.append({"source": ref["source"], "model": ref["model"], "protocol": "as published",
                             "analysis": name, "variant": variant, "direction": ANALYSES[name].direction,
                             "R@1": pct(value)})
    return rows


def analysis_section(doc: Doc, name: str, rows: list[dict]) -> None:
    """One analysis: a heading, what is read, and a table of its variants' R@1 [95 % interval] per model
    with the caption count and chance."""
    analysis = ANALYSES[name]
    variants = list(analysis.variants)
    wide: dict[tuple[str, str], dict] = {}
    for row in rows:
        if row["analysis"] == name:
            key = (row["source"], row["model"])
            cell = wide.setdefault(key, {"source": row["source"], "model": row["model"],
                                         "captions": row.get("captions", ""), CHANCE: row.get(CHANCE, "")})
            ci = row.get("R@1 95% CI", "")
            cell[row["variant"]] = f"{row['R@1']} [{ci}]" if ci and row["R@1"] != "" else row["R@1"]
    direction = "text-to-image" if analysis.direction == "t2i" else "image-to-text"
    header, dashes = ["source", "model", *variants, "captions", CHANCE], Dashes()

    def queries(row: dict, column: str):  # every variant's recall is over the analysis's captions
        return (row.get("captions"), "captions") if column in variants else None

    doc.h(2, f"{name}: {analysis.title}")
    doc.p(f"{direction} R@1, % [95 % bootstrap interval]; chance R@1 is 1 / images")
    _table(doc, header, readable_rows(header, list(wide.values()), dashes, queries, "not published"), dashes)


def write_analyses_report(out: Path, payload: dict) -> list[Path]:
    """results.json, analyses.csv, a figure per analysis and the page (analyses.md, analyses.html)."""
    rows = analysis_rows(payload)
    names = [n for n in ANALYSES if any(n in m["analyses"] for m in payload["models"])]
    excluded = [f"{m['label']} {n}: {e['excluded_captions']} captions left out ({e['excluded_because']})"
                for m in payload["models"] for n, e in m["analyses"].items() if e["excluded_captions"]]
    excluded += [f"{m['label']} {n}: {e['caveat']['captions']} captions with {e['caveat']['why']}"
                 for m in payload["models"] for n, e in m["analyses"].items() if e.get("caveat", {}).get("captions")]
    doc = _page("DeBias-CLIP analyses", header_lines(payload) + excluded)
    written = [write_text(out / "results.json", json.dumps(payload, indent=2) + "\n"),
               write_text(out / "analyses.csv", csv_text(ANALYSIS_COLUMNS, rows))]
    for name in names:
        analysis_section(doc, name, rows)
        series: dict[str, dict] = {}
        for row in rows:
            if row["analysis"] == name:
                label = row["model"] + ("" if row["source"] == MEASURED else " (published)")
                series.setdefault(label, {})[row["variant"]] = row["R@1"]
        title = (f"{payload['benchmark']} ({payload['protocol']}): {ANALYSES[name].title} "
                 f"({ANALYSES[name].direction} R@1)")
        if name == "padding":
            written.append(line_plot(out / "padding.png", series, list(ANALYSES[name].variants), title))
        else:
            written.append(grouped_bars(out / f"{name}.png", series, list(ANALYSES[name].variants), title))
        doc.img(written[-1], title)
    return written + _write_page(out, "analyses", doc, payload)


# ---------------------------------------------------------------- plots


def _figure(n_series: int = 0):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    if n_series > 10:  # the default cycle's 10 colours would give two models one colour
        ax.set_prop_cycle(color=plt.get_cmap("tab20").colors)
    return plt, fig, ax


def _values(series: dict, groups: list[str]) -> list[float]:
    return [float(series[g]) if series.get(g) not in (None, "") else float("nan") for g in groups]


def grouped_bars(path: Path, series: dict[str, dict], groups: list[str], title: str) -> Path:
    """One group of bars per variant, one bar per model; published bars hatched."""
    plt, fig, ax = _figure(len(series))
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        published = label.endswith("(published)")
        ax.bar(xs, _values(values, groups), width, label=label, hatch="//" if published else None,
               alpha=0.6 if published else 1.0, edgecolor="black", linewidth=0.5)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel("R@1 (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=10)
    legend_beside(ax)  # beside the panel: never over a bar
    return save(fig, path)


def line_plot(path: Path, series: dict[str, dict], xs: list[str], title: str) -> Path:
    """R@1 against k; published curves dashed."""
    plt, fig, ax = _figure(len(series))
    ks = [int(x.split("=")[1]) for x in xs]
    for label, values in series.items():
        ax.plot(ks, _values(values, xs), marker="o", label=label,
                linestyle="--" if label.endswith("(published)") else "-")
    ax.set_xlabel('k (copies of "This is a photo." in front)')
    ax.set_ylabel("R@1 (%)")
    ax.set_xticks(ks)
    ax.set_title(title, fontsize=10)
    legend_beside(ax)
    return save(fig, path)
