"""Where captions mention the largest object (ComCO's claim 2), and the corpus's p.

For each caption that mentions k >= 2 annotated objects, the position of the largest of
them (by mask area) in mention order. Per k: the share of captions at each position, with
a bootstrap interval that resamples images (one image has several captions). The lab's
variable p is "the largest object is named first with probability p, otherwise the order
is balanced", so a caption's first-mention hit has expectation p + (1 - p) / k; the
corpus's p is the mean of (hit - 1/k) / (1 - 1/k) over its captions, the unbiased
estimate of that same p, so it can be placed on a lab run's dose-response.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from comco.probes.natural.corpus import Caption
from comco.probes.stats import DEFAULT_BOOTSTRAP, accuracy, mean_with_interval

COUNTS = (2, 3, 4, 5)  # ComCO reports 2-5-object captions
ORDINALS = ["1st", "2nd", "3rd", "4th", "5th"]


def position_of_largest(c: Caption) -> int | None:
    """0-based mention position of the largest mentioned object; None on a tie for largest."""
    top = max(c.areas)
    if sum(a == top for a in c.areas) > 1:
        return None
    return c.areas.index(top)


def caption_bias(captions: list[Caption], *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> dict:
    """Counts, per-k position shares with intervals, and the corpus's p."""
    counts = {"captions": len(captions), "fewer_than_2": 0, "tie_for_largest": 0, "more_than_5": 0, "kept": 0}
    by_k: dict[int, list[tuple]] = {k: [] for k in COUNTS}
    for c in captions:
        k = len(c.mentioned)
        if k < 2:
            counts["fewer_than_2"] += 1
        elif k > max(COUNTS):
            counts["more_than_5"] += 1
        elif (pos := position_of_largest(c)) is None:
            counts["tie_for_largest"] += 1
        else:
            by_k[k].append((c.image_id, pos))
            counts["kept"] += 1
    rows = []
    for k, items in by_k.items():
        images = [str(i) for i, _ in items]
        pos = np.array([p for _, p in items], dtype=int)
        shares = [accuracy(pos == j, images, chance=1 / k, n_boot=n_boot, seed=seed) for j in range(k)]
        rows.append({"k": k, "captions": len(items), "images": len(set(images)), "shares": shares})
    kept = [(str(i), p, k) for k, items in by_k.items() for i, p in items]
    excess = [((p == 0) - 1 / k) / (1 - 1 / k) for _, p, k in kept]
    clusters = [i for i, _, _ in kept]
    return {
        "counts": counts,
        "by_k": rows,
        "largest_first": accuracy([p == 0 for _, p, _ in kept], clusters, n_boot=n_boot, seed=seed),
        "chance_first": float(np.mean([1 / k for *_, k in kept])) if kept else None,
        "p": mean_with_interval(excess, clusters, n_boot=n_boot, seed=seed),
    }


def write_caption_bias(result: dict, out: Path, *, sources: dict, prediction: list[dict] | None = None) -> dict:
    """results.json, positions.csv, caption-bias.md/.html and caption-bias.png in `out`."""
    from comco.io import write_json, write_text
    from comco.report import Doc, csv_text, published_caption_bias

    out.mkdir(parents=True, exist_ok=True)
    header = ["objects mentioned", "captions", "images", *[f"{o} (%)" for o in ORDINALS], "chance (%)"]
    rows = []
    for r in result["by_k"]:
        cells = [_cell(s) for s in r["shares"]] + ["–"] * (len(ORDINALS) - r["k"])
        rows.append([r["k"], r["captions"], r["images"], *cells, f"{100 / r['k']:.1f}"])
    write_text(out / "positions.csv", csv_text(
        ["k", "position", "share", "lo", "hi", "captions", "images"],
        [[r["k"], j + 1, s["acc"], s["lo"], s["hi"], r["captions"], r["images"]]
         for r in result["by_k"] for j, s in enumerate(r["shares"])]))
    figure = _figure(result, out / "caption-bias.png")
    c, p = result["counts"], result["p"]
    doc = Doc()
    doc.h(1, "Where captions mention the largest object")
    doc.p(f"captions: `{sources['captions']}`; instances: `{sources['instances']}`; synonyms: "
          f"`{sources['synonyms']}`. Sizes are each category's summed mask area in the image; a category is "
          f"mentioned when its name, plural or a synonym appears as a whole word.")
    doc.p(f"{c['captions']} captions of annotated images; kept {c['kept']} that mention 2-5 annotated objects "
          f"with one largest (left out: {c['fewer_than_2']} mention fewer than 2, {c['tie_for_largest']} tie for "
          f"the largest, {c['more_than_5']} mention more than 5).")
    doc.p(f"**The corpus's p** (the lab's order-bias variable: the largest object named first with probability p, "
          f"balanced otherwise): **{_num(p['mean'])} [{_num(p['lo'])}, {_num(p['hi'])}]** (95 % bootstrap over "
          f"{p['clusters']} images). The largest object comes first in {_cell(result['largest_first'])} % of kept "
          f"captions against {_pct(result['chance_first'])} % by chance.")
    for ref in published_caption_bias():
        doc.p(f"*published:* {ref['label']}: {ref['value']:.0f} % ({ref['source']}).")
    doc.p("Share of captions by the mention position of the largest object (%, 95 % interval):")
    doc.table(header, rows)
    doc.img(figure, "position of the largest object in captions")
    if prediction:
        doc.h(2, "On the lab's dose-response")
        doc.p("The TOR first-mention share a lab model trained at the corpus's p would show, from the line fitted "
              "through every gated model of the run (95 % interval of the fitted mean, widened to the ends of "
              "p's interval).")
        doc.table(["object set", "captions", "predicted TOR first share (%)", "fitted at p", "note"],
                  [[x["object_set"], f"{x['n']} objects", f"{_pct(x['mean'])} [{_pct(x['lo'])}, {_pct(x['hi'])}]",
                    ", ".join(f"{v:g}" for v in x["ps"]), x["note"]] for x in prediction])
    write_text(out / "caption-bias.md", doc.markdown(out))
    write_text(out / "caption-bias.html", doc.html("caption bias"))
    payload = {"sources": sources, **result, "lab_prediction": prediction}
    write_json(out / "results.json", payload)
    return payload


def _figure(result: dict, path: Path) -> Path | None:
    from comco.report import interval_bars, pyplot, save

    groups = [f"{r['k']} objects\n({r['captions']} captions)" for r in result["by_k"] if r["captions"]]
    if not groups:
        return None  # nothing kept: no figure, and the page says why
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    kept = [r for r in result["by_k"] if r["captions"]]
    series = {o: [(r["shares"][j]["acc"], r["shares"][j]["lo"], r["shares"][j]["hi"]) if j < r["k"] else None
                  for r in kept] for j, o in enumerate(ORDINALS)}
    interval_bars(ax, groups, series)
    ax.set_xticks(range(len(groups)), groups)
    for x, r in enumerate(kept):
        ax.hlines(100 / r["k"], x - 0.4, x + 0.4, colors="k", linestyles=":", label="chance" if x == 0 else None)
    ax.set_ylabel("captions (%)")
    ax.set_title("Mention position of the largest object")
    ax.legend(title="largest is", loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=9)
    return save(fig, path, rect=(0, 0, 1, 1))


def _cell(s: dict) -> str:
    if not s["n"]:
        return "–"
    return f"{100 * s['acc']:.1f} [{100 * s['lo']:.1f}, {100 * s['hi']:.1f}]"


def _pct(v) -> str:
    return "–" if v is None or v != v else f"{100 * v:.1f}"


def _num(v) -> str:
    return "–" if v is None or v != v else f"{v:.3f}"
