"""`comco eval tradeoff`: one table and one figure with each model's order and size biases
(TOR first share, IOR largest share, from `comco probe` folders or a `comco lab run` folder's
probe stages) beside its compositional, retrieval and zero-shot scores (from `comco eval`
folders), each with its interval, count and chance: the table a de-biasing paper prints.
Models are matched by their label; a lab run's models by their checkpoint, `ckpt:RUN/stages/
STAGE/model.pt` in the eval folders, and named by their stage (scratch-simco-p1-s0)."""

from __future__ import annotations

import json
from pathlib import Path

from comco.errors import UserError
from comco.io import write_text
from comco.report.document import Doc
from comco.report.plots import interval_bars, legend_beside, pyplot, save
from comco.report.tables import MIN_TRIALS, csv_text, interval, pct, too_few

CSV_COLUMNS = ["model", "measure", "score", "lo", "hi", "n", "units", "chance", "from"]


def _stat(acc, lo, hi, n, clusters, chance) -> dict:
    return {"acc": acc, "lo": lo, "hi": hi, "n": n, "clusters": clusters, "chance": chance}


def _probe_measures(results: dict) -> dict[str, dict[str, dict]]:
    """model -> {"TOR first share": stat, "IOR largest share": stat} from a probe's results.json."""
    from comco.probes.page import INDICES, headline

    out: dict[str, dict[str, dict]] = {}
    for label, row in headline(results).items():
        for ix in INDICES:
            if row.get(ix.key):
                name = "TOR first share" if ix.key == "first" else "IOR largest share"
                out.setdefault(label, {})[name] = row[ix.key]["share"]
    return out


def _lab_stat(block: dict | None, role: str, objects: int) -> dict | None:
    """A lab probe's conditional share; with no trials its value is NaN and it stays, counted as 0 trials
    (its chance then 1 / objects, as the share's is)."""
    stat = next((s for s in (block or {}).get("conditional", []) if s.get("role") == role), None)
    if not stat or stat.get("value") is None:
        return None
    chance = stat.get("chance") if stat.get("chance") is not None else 1 / objects
    return _stat(stat["value"], stat.get("lo"), stat.get("hi"), stat.get("n"), stat.get("clusters"), chance)


def lab_models(run: Path) -> dict[str, tuple[Path, dict[str, dict]]]:
    """A lab run's probed models: stage label -> (its checkpoint, {"TOR first share", "IOR largest
    share"}), read from each probe stage on the run's test set as the probe page's headline reads
    them (4 objects where the test set has them, else the most; the `and` captions; ComCO's
    conditional share)."""
    from comco.probes.page import HEADLINE_COUNT, HEADLINE_TEMPLATE

    stages = Path(run) / "stages"
    if not stages.is_dir():
        raise UserError(f"--lab {run} has no stages/ folder; give a comco lab run --out folder")
    out: dict[str, tuple[Path, dict[str, dict]]] = {}
    # the untrained priors, then the scratch models, then the fine-tuned ones (by name within each)
    order = {"prior": 0, "scratch": 1, "finetune": 2}
    for folder in sorted(stages.iterdir(), key=lambda f: (order.get(f.name.removeprefix("probe-").split("-")[0], 3),
                                                           f.name)):
        info, results = folder / "stage.json", folder / "results.json"
        if not (info.is_file() and results.is_file()):
            continue
        try:
            stage, res = (json.loads(p.read_text(encoding="utf-8")) for p in (info, results))
        except (ValueError, UnicodeDecodeError):
            raise UserError(f"--lab {run}: {folder} holds a damaged stage.json or results.json; run the lab "
                            "again to remake that stage") from None
        deps = stage.get("deps") or {}
        if stage.get("kind") != "probe" or not str(deps.get("test", "")).startswith("render-test-"):
            continue  # only the probes on the run's own test set
        model = deps.get("model")
        label = model or folder.name.removeprefix("probe-")
        tor = res.get("tor") or {}
        template = tor.get(HEADLINE_TEMPLATE) or next(iter(tor.values()), {})
        got = {}
        for name, block, role in (("TOR first share", template, "1st"),
                                  ("IOR largest share", res.get("ior"), "largest")):
            counts = [int(k) for k in (block or {}) if str(k).isdigit()]
            if counts:
                n = HEADLINE_COUNT if HEADLINE_COUNT in counts else max(counts)
                if (stat := _lab_stat(block[str(n)], role, n)) is not None:
                    got[name] = stat
        out[label] = ((stages / model / "model.pt") if model else (folder / "model.pt"), got)
    if not out:
        raise UserError(f"--lab {run} holds no finished probe stage; run comco lab run first")
    return out


def _eval_measures(payload: dict, rename: dict[Path, str] | None = None) -> dict[str, dict[str, dict]]:
    """model -> measure -> stat from a `comco eval retrieval|compositional|zeroshot` results.json;
    `rename` names a `ckpt:` model by its checkpoint (a lab run's stage labels)."""
    out: dict[str, dict[str, dict]] = {}
    for model in payload.get("models", []):
        label = model["label"]
        name = str(model.get("model") or "")
        if rename and name.startswith("ckpt:"):
            label = rename.get(Path(name[5:]).expanduser().resolve(), label)
        got = out.setdefault(label, {})
        if payload["kind"] == "retrieval":
            r = model["result"]
            chance = 1 / r["n_images"] if r["n_images"] else None
            for d, name, n in (("t2i", "T2I", r["n_texts"]), ("i2t", "I2T", r["n_images"])):
                lo, hi = r[d].get("R@1_ci95") or (None, None)
                got[f"{payload['benchmark']} {name} R@1"] = _stat(r[d]["R@1"], lo, hi, n, r["n_images"], chance)
        elif payload["kind"] in ("compositional", "zeroshot"):
            shown = payload.get("headline") or list(model["scores"])  # the authors' headline metrics
            for metric, cats in model["scores"].items():
                if "all" in cats and metric in shown:
                    name = (f"zero-shot {metric}" if payload["kind"] == "zeroshot"
                            else f"{payload['benchmark']} {metric}")
                    got[name] = cats["all"]
    return out


def gather_tradeoff(folders: list[Path], models: list[str] | None = None,
                    lab: Path | None = None) -> tuple[list[str], dict[str, dict[str, dict]]]:
    """(measures in the order first seen, model -> measure -> stat with "from": its folder).

    Args:
        folders: `comco probe` and `comco eval retrieval|compositional|zeroshot` output folders.
        models: the labels to keep, in this order (None: every model, in the order first seen).
        lab: a `comco lab run` folder: its probed models' TOR and IOR shares, and the eval folders'
            `ckpt:` models named by the lab stage whose checkpoint they are.
    """
    if not folders and lab is None:
        raise UserError("give at least one --results DIR (a comco probe or comco eval output folder) or --lab RUN")
    measures: list[str] = []
    table: dict[str, dict[str, dict]] = {}
    rename: dict[Path, str] = {}
    if lab is not None:
        for label, (checkpoint, got) in lab_models(Path(lab)).items():
            rename[checkpoint.resolve()] = label
            for name, stat in got.items():
                if name not in measures:
                    measures.append(name)
                table.setdefault(label, {})[name] = {**stat, "from": str(Path(lab) / "stages")}
            table.setdefault(label, {})
    for folder in folders:
        path = Path(folder) / "results.json"
        if not path.is_file():
            raise UserError(f"--results {folder} has no results.json; give a comco probe or comco eval --out folder")
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as err:
            raise UserError(f"{path} is not JSON ({err}); give a comco probe or comco eval --out folder") from None
        if "probes" in payload:
            found = _probe_measures(payload)
        elif payload.get("kind") in ("retrieval", "compositional", "zeroshot"):
            found = _eval_measures(payload, rename)
        else:
            raise UserError(f"{path} is neither a comco probe nor a comco eval retrieval, compositional or "
                            "zeroshot result")
        for label, got in found.items():
            for name, stat in got.items():
                if name not in measures:
                    measures.append(name)
                table.setdefault(label, {})[name] = {**stat, "from": str(folder)}
    if models:
        if missing := [m for m in models if m not in table]:
            raise UserError(f"--models {missing[0]} is in none of the --results folders; they hold: "
                            f"{', '.join(table) or 'no model'}")
        table = {m: table[m] for m in models}
    return measures, table


def cell(stat: dict | None) -> str:
    """A table cell: score [95 % interval] (n), or the count and "too few to read"."""
    if not stat or stat.get("acc") is None:
        return "–"
    few = too_few(stat.get("n"), clusters=stat.get("clusters"))
    ci = interval(stat.get("lo"), stat.get("hi"))
    return few or f"{pct(stat['acc'])} [{ci}] (n={stat['n']})"


def _chance(value: float | None) -> str:
    """Chance as %, with a second digit when it is under 1 % (1 / 5000 images is 0.02, not 0.0)."""
    return "–" if value is None else pct(value, 2 if value < 0.01 else 1)


def write_tradeoff(out: Path, measures: list[str], table: dict[str, dict[str, dict]]) -> list[Path]:
    """tradeoff.md, tradeoff.html (the same page), tradeoff.csv (one row per model and measure) and
    tradeoff.png (every measure with its interval per model, chance as a grey tick)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder")
    out.mkdir(parents=True, exist_ok=True)
    chance = {m: next((s[m].get("chance") for s in table.values() if m in s and s[m].get("chance") is not None),
                      None) for m in measures}
    doc = Doc()
    doc.h(1, "Trade-off: biases against benchmark scores")
    doc.p("values are %, each with its 95 % bootstrap interval and count (n); the first row is chance (the first "
          "model's, where models differ: tradeoff.csv gives each row's); a score "
          f"from fewer than {MIN_TRIALS} trials or resampled units shows its count instead; – the model has no "
          "such result in the folders given")
    doc.p("TOR first share and IOR largest share: lower is less biased (chance is 1 / objects); every other "
          "column: higher is better")
    doc.table(["model", *measures], [["chance", *(_chance(chance[m]) for m in measures)]]
              + [[label, *(cell(got.get(m)) for m in measures)] for label, got in table.items()])
    rows = [{"model": label, "measure": m, "score": s.get("acc"), "lo": s.get("lo"), "hi": s.get("hi"),
             "n": s.get("n"), "units": s.get("clusters"), "chance": s.get("chance"), "from": s.get("from")}
            for label, got in table.items() for m in measures if (s := got.get(m))]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(8, 1.4 * len(measures) + 4), 5), dpi=100)
    readable = {label: [(s["acc"], s.get("lo"), s.get("hi"))
                        if (s := got.get(m)) and not too_few(s.get("n"), clusters=s.get("clusters")) else None
                        for m in measures] for label, got in table.items()}
    if len(table) > 10:  # the default cycle's 10 colours would give two models one colour
        ax.set_prop_cycle(color=plt.get_cmap("tab20").colors)
    interval_bars(ax, measures, readable)  # a number too few to read is not drawn, as the table shows its count
    for i, m in enumerate(measures):
        if chance[m] is not None:
            ax.hlines(100 * chance[m], i - 0.45, i + 0.45, colors="grey", linestyles="--", linewidth=1)
    ax.set_xticks(range(len(measures)), measures, rotation=20, ha="right", fontsize=9)
    ax.set_ylabel("% (chance dashed)")
    ax.set_ylim(0, 100)
    legend_beside(ax)
    ax.set_title("TOR, IOR: lower is less biased; scores: higher is better", fontsize=10)
    figure = save(fig, out / "tradeoff.png")
    doc.img(figure, "every measure per model with its 95 % interval; chance dashed")
    return [write_text(out / "tradeoff.csv", csv_text(CSV_COLUMNS, rows)), figure,
            write_text(out / "tradeoff.md", doc.markdown(out)),
            write_text(out / "tradeoff.html", doc.html("comco eval tradeoff"))]
