"""ComCO's mitigation (`--text-aggregate per-object`) and the half-truths on a lab run's gated
models (issue 21): what averaging per-object phrases removes from the first-mention share,
what it costs in set R@1, and how each model scores half-truths, whole captions against the
aggregate, beside an untrained model of the same size.

    python benchmarks/mitigation.py --lab RUN [--object-set simco] [--out FILE.md]

RUN is a finished `comco lab run` folder (its results.json says which models pass the gates;
only those enter the means). Per model it probes the run's test render with the `and`
template (the lab's), whole and per object: TOR's conditional first-mention share and the
first mention's share of the present-object hits at 3 and 4 objects, presence TOR, set R@1
and the half-truth shares per kind. Prints one JSON line per model, then per p and figure
the mean over passing models with a 95 % t-interval, and the change per object - whole
paired by model; `--out` writes the same tables as Markdown.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

FIGURES = ("TOR first, 3 objects", "TOR first, 4 objects", "TOR first of hits, 3 objects",
           "TOR first of hits, 4 objects", "presence TOR", "set R@1")
BLIND = "half-truth wrong relation"  # the per-object aggregate cannot see it (README)
STAGE = re.compile(r"^scratch-(?P<set>[a-z0-9_]+)-p(?P<p>[0-9.]+)-s(?P<seed>\d+)$")


def _figures(test, emb, template) -> dict:
    from comco.probes import development_point
    from comco.probes.half_truth import METRIC, half_truth
    from comco.probes.tor import tor_dataset

    point = development_point(test, emb, "and")
    out = {k: point.get(k) for k in FIGURES}
    # the conditional share's count: a model whose top-n is rarely exactly its n objects has a
    # share from a handful of queries (an untrained tower), which the table must not print as a rate
    for g in tor_dataset(test, emb, ["and"], n_boot=0, seed=0):
        out[f"TOR kept queries, {g['n_objects']} objects"] = g["metrics"]["conditional"][0]["n"]
    for g in half_truth(test, emb, template, n_boot=0, seed=0):
        where = "all" if g["n_objects"] is None else f"{g['n_objects']} objects"
        for m in g["metrics"][METRIC]:
            out[f"half-truth {m['role']}, {where}"] = m["acc"]
    return out


def _probe(test, model_path: Path, template, names, forms, modifiers) -> dict:
    from comco.models import load_model
    from comco.probes import Embedder
    from comco.probes.aggregate import PerObjectTexts

    # a throw-away embedding cache: development_point, tor_dataset and half_truth embed the
    # same captions, renders and names, each once instead of up to three times
    with tempfile.TemporaryDirectory(prefix="comco-mitigation-") as cache:
        emb = Embedder(load_model(f"ckpt:{model_path}", None, "cpu"), cache_dir=Path(cache), batch_size=256)
        return {"whole": _figures(test, emb, template),
                "per-object": _figures(test, PerObjectTexts(emb, names, forms, modifiers), template)}


def _models(run: Path, object_set: str) -> list[dict]:
    results = json.loads((run / "results.json").read_text())
    gates = results["object_sets"][object_set]["gates"]["models"]
    rows = []
    for stage in sorted((run / "stages").iterdir()):
        m = STAGE.match(stage.name)
        if not m or m["set"] != object_set or not (stage / "model.pt").exists():
            continue
        verdict = gates.get(f"probe-{stage.name}", {})
        rows.append({"stage": stage.name, "p": float(m["p"]), "seed": int(m["seed"]),
                     "passed": bool(verdict.get("passed")) and not verdict.get("failed"),
                     "model": stage / "model.pt"})
    return rows


def _cell(s: dict, count: bool = False) -> str:
    if s["mean"] is None:
        return "–"
    f = (lambda v: f"{v:.0f}") if count else (lambda v: f"{100 * v:.1f}")
    if s["lo"] is None:
        return f"{f(s['mean'])} (1 model)"
    return f"{f(s['mean'])} [{f(s['lo'])}, {f(s['hi'])}]"


def _one(value, count: bool, kept) -> str:
    """A single model's figure; a conditional share from fewer than MIN_TRIALS kept queries is not a rate."""
    from comco.report import MIN_TRIALS

    if value is None or value != value:
        return "–"
    if count:
        return f"{value:.0f}"
    if kept is not None and kept < MIN_TRIALS:
        return f"({kept} kept)"
    return f"{100 * value:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lab", type=Path, required=True)
    ap.add_argument("--object-set", default="simco")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    from comco.errors import UserError
    from comco.lab.report.stats import paired, summarize
    from comco.probes import open_dataset, texts
    from comco.probes.aggregate import modifier_words

    if not (args.lab / "lab.json").is_file() or not (args.lab / "stages").is_dir():
        raise UserError(f"--lab {args.lab} is not a `comco lab run --out` folder (no lab.json and stages/)")
    test = open_dataset(args.lab / "stages" / f"render-test-{args.object_set}" / "data")
    book = texts.template_book(test.info)
    template = texts.get_template(book, "and")
    agg = (test.names, test.forms, modifier_words(test.object_set, book))
    models = _models(args.lab, args.object_set)
    if not models:
        raise SystemExit(f"{args.lab}: no scratch-{args.object_set}-p*-s* stage with a model.pt")
    rows = []
    for m in models:
        fig = _probe(test, m["model"], template, *agg)
        rows.append({**m, **fig})
        print(json.dumps({"stage": m["stage"], "passed": m["passed"],
                          **{f"{side}: {k}": None if v is None else round(v, 4)
                             for side in ("whole", "per-object") for k, v in fig[side].items()}}), flush=True)
    # the lab's own untrained model of seed 0 (its prior stage), the reference a random tower gives
    prior = args.lab / "stages" / f"probe-prior-{args.object_set}-s0" / "model.pt"
    untrained = _probe(test, prior, template, *agg) if prior.exists() else None

    keys = [k for k in rows[0]["whole"]]
    lines = [f"# Mitigation and half-truths on `{args.lab}` ({args.object_set}, `and` template)", "",
             "Shares in %, mean over the models that pass the gates with a 95 % t-interval across them; the change "
             "is paired by model. `TOR kept queries` counts the captions whose top-n names are exactly their n "
             "objects (the conditional share's denominator, of 720 / 480 test captions). Per object, a wrong "
             "relation ties its correct caption in every trial (the aggregate has no relation words), so that "
             "row is left out there.", ""]
    for p in sorted({r["p"] for r in rows}):
        group = [r for r in rows if r["p"] == p and r["passed"]]
        lines += [f"## p = {p:g}: {len(group)} of {len([r for r in rows if r['p'] == p])} models pass the gates", "",
                  "| figure | whole captions | per object (mean) | per object - whole, paired |"
                  + (" untrained (seed 0) whole / per object |" if untrained else ""), "|---|---|---|---|"
                  + ("---|" if untrained else "")]
        for k in keys:
            count = k.startswith("TOR kept")
            blind = k.startswith(BLIND)
            whole = [r["whole"][k] for r in group]
            per = [None if blind else r["per-object"][k] for r in group]
            diff = paired(per, whole)
            if count:  # counts are not shares: no clipping to [0, 1]
                diff = summarize([a - b for a, b in zip(per, whole)], None)
            bounds = (0, float("inf")) if count else (0, 1)
            line = (f"| {k} | {_cell(summarize(whole, bounds), count)} | "
                    f"{'left out' if blind else _cell(summarize(per, bounds), count)} | "
                    f"{'left out' if blind else _cell(diff, count)} |")
            if untrained:
                n = re.search(r"(\d) objects", k) if k.startswith("TOR first,") else None
                cells = []
                for side in ("whole", "per-object"):
                    kept = untrained[side].get(f"TOR kept queries, {n[1]} objects") if n else None
                    cells.append("left out" if blind and side == "per-object" else
                                 _one(untrained[side].get(k), count, kept))
                line += " " + " / ".join(cells) + " |"
            lines.append(line)
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    from comco.errors import UserError

    try:
        main()
    except UserError as exc:  # a wrong folder: one line, as comco's commands say it
        print(f"mitigation.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
