"""Long-CLIP and DeBias fine-tunes of the p = 1 models: the biases before and after, what
the long captions cost the short ones, the DeBias analyses and the paper's claims. Every
comparison here is paired by seed (each fine-tune starts from the base of its seed)."""

from __future__ import annotations

from comco.lab.keys import finetune_key, probe_key, scratch_key
from comco.lab.report.context import SetContext
from comco.lab.report.dose import NOT_PUBLISHED, PRIOR, footnotes, prior_stat
from comco.lab.report.figures import bar_plot
from comco.lab.report.stats import counted, metric, paired, pct, signed, summarize
from comco.lab.report.verdict import DOWN, NEITHER, UP, compare, direction, judge_paired, loo_sentence
from comco.report import Dashes

NO_PASSING = "no model passed its gates here"

COLS = [("TOR `and`: 1st share", "tor", "and", 0), ("TOR summary: 1st share", "tor", "summary", 0),
        ("IOR: largest share", "ior", None, 0), ("sensitivity: 1st share", "sens", None, 0)]


def _models(c: SetContext) -> list[tuple[str, list]]:
    """(label, the probe key per seed) of the base and each fine-tuned variant the graph holds."""
    p1 = c.s["finetune"]["order_bias"]
    out = [("base (scratch, p = %g)" % p1, [probe_key(scratch_key(c.oset, p1, seed)) for seed in c.seeds])]
    out += [(v["name"], [probe_key(finetune_key(c.oset, v["name"], seed)) for seed in c.seeds])
            for v in c.s["finetune"]["variants"]]
    return [(label, keys) for label, keys in out if all(c.run.has(k) for k in keys)]


def finetune_sections(c: SetContext, passing: set, prior: list) -> dict:
    from comco.lab.recipe import SCRATCH_ONLY_GATES

    models = _models(c)
    if len(models) < 2:  # no fine-tune in the graph
        return {}
    # a model below its gates counts nowhere
    res = {label: [c.run.results(k) if k in passing else {} for k in keys] for label, keys in models}
    s, seeds, need = c.s, c.seeds, c.need
    variants = [v for v in s["finetune"]["variants"] if v["name"] in res]
    p1 = s["finetune"]["order_bias"]
    numbers: dict = {}
    c.h(3, "Before and after Long-CLIP and DeBias fine-tuning")
    rows = []
    for v in variants:
        weights = f"{v.get('short_weight', 0.1):g} short : {1 - v.get('short_weight', 0.1):g} long"
        extra = "" if v["kind"] == "longclip" else ", ".join(
            f"{k} {'on' if v.get(k, True) else 'off'}" for k in ("remove_summary", "sample", "pad"))
        rows.append([v["name"], v["kind"], weights, extra or "short caption = summary sentence"])
    c.doc.p(f"The p = {p1:g} models (one per seed) are fine-tuned on the same images' `long` captions with the same "
            f"steps and seeds ({s['finetune']['steps']} steps, batch {s['finetune']['batch_size']}, lr "
            f"{s['finetune']['lr']:g}, text positions stretched with the first {s['finetune']['keep']} kept):")
    c.doc.table(["variant", "sampler", "loss weights", "short caption"], rows)
    ran = [c.run.results(k) for _, keys in models for k in keys]
    counts = sorted({n for r in ran for n in r.get("tor", {}).get("and", {})}, key=int)
    n = counts[-1] if counts else None
    table, per_metric, dashes = [], {col[0]: {} for col in COLS}, Dashes()
    raw_cols = COLS[:3]  # raw top-1 beside the retrieval shares (sensitivity's raw is a distance)
    for label, _ in models:
        row = [label, sum(bool(r) for r in res[label])]
        for cname, fam, tpl, idx in COLS:
            vals = [None if metric(r, fam, n, tpl) is None else metric(r, fam, n, tpl)["share"][idx]
                    for r in res[label]]
            per_metric[cname][label] = vals
            row.append(pct(counted(summarize(vals), _trials(res[label], fam, n, tpl, idx)), dashes=dashes,
                           missing=NO_PASSING))
        for _, fam, tpl, idx in raw_cols:
            raw = [None if metric(r, fam, n, tpl) is None else metric(r, fam, n, tpl)["raw"][idx] for r in res[label]]
            row.append(pct(counted(summarize(raw), _trials(res[label], fam, n, tpl, idx)), dashes=dashes,
                           missing=NO_PASSING))
        table.append(row)
    if prior:
        table.append([PRIOR, dashes.dash("the untrained models have no gates to pass")]
                     + [pct(prior_stat(prior, fam, n, tpl, idx), dashes=dashes) for _, fam, tpl, idx in COLS]
                     + [pct(prior_stat(prior, fam, n, tpl, idx, "raw"), dashes=dashes)
                        for _, fam, tpl, idx in raw_cols])
    c.doc.p(f"**{n}-object test scenes**, in % (mean over the seeds whose model passed the competence gates, 95 % "
            f"t-interval); chance {100 / int(n):.1f} % for a share:")
    c.doc.table(["model", "seeds passing"] + [col[0] for col in COLS]
                + [col[0].replace("share", "raw top-1") for col in raw_cols], table)
    footnotes(c, dashes)
    base_label = models[0][0]
    series = {label: [summarize(per_metric[col[0]][label]) for col in COLS] for label, _ in models}
    path = bar_plot(c.fig / f"{c.oset}-finetune.png", f"Before / after fine-tuning ({c.oset}, {n} objects)",
                    [col[0] for col in COLS], series, "share (%)", chance=1 / int(n))
    c.doc.img(path, "before and after fine-tuning")
    sentences = []
    for label, _ in models[1:]:
        for cname, *_ in COLS[:2]:
            a, b = per_metric[cname][label], per_metric[cname][base_label]
            d = paired(a, b)
            j = judge_paired(a, b, seeds, need=need, claimed=DOWN)
            numbers.setdefault(label, {})[cname] = {"value": summarize(a), "change": d, "verdict": j.to_dict()}
            if d["n"] < need:
                sentences.append(f"{label}, {cname}: {d['n']} seed(s) where both it and the base passed the gates "
                                 f"(fewer than {need}), so this scale cannot answer whether fine-tuning moves it.")
            else:
                sentences.append(change_sentence(label, cname, d) + loo_sentence(j))
    c.doc.p("Paired by seed against the base model: " + " ".join(sentences))
    costs, numbers["short_costs"] = [], {}
    for figure in SCRATCH_ONLY_GATES:  # the short-caption gates, not gated for fine-tunes: their change is a result
        short = {label: [r.get("gates", {}).get(figure, {}).get("value") if r else None for r in res[label]]
                 for label, _ in models}
        kept = [f"{label} {pct(summarize(short[label]))} (paired change "
                f"{signed(paired(short[label], short[base_label]))})" for label, _ in models[1:]]
        costs.append(f"{figure} is {pct(summarize(short[base_label]))} for the base and " + "; ".join(kept))
        numbers["short_costs"][figure] = {label: summarize(v) for label, v in short.items()}
    c.doc.p("What the long captions cost the short ones (the short `and` captions, gated for the base only): "
            + ". ".join(costs) + ".")
    c.doc.p(sampler_paragraph(per_metric, [v["name"] for v in variants], variants, need))
    an = analyses_section(c, res, models)
    if an:
        numbers["analyses"] = an
    return numbers


def change_sentence(label: str, cname: str, d: dict) -> str:
    if d.get("mean") is None:
        return f"{label}, {cname}: not measured."
    if d.get("lo") is None:
        return f"{label} changes {cname} by {100 * d['mean']:+.1f} points (one seed, no interval)."
    how = {UP: "up, and the paired interval excludes zero", DOWN: "down, and the paired interval excludes zero",
           NEITHER: "the paired interval includes zero"}[direction(d["lo"], d["hi"])]
    return f"{label} changes {cname} by {signed(d)} ({how})."


def sampler_paragraph(per_metric: dict, names: list, variants: list, need: int = 2) -> str:
    """The samplers against each other, paired by seed (both fine-tune the same base)."""
    by_name = {v["name"]: v for v in variants}
    lc = [n for n in names if by_name[n]["kind"] == "longclip"]
    db = [n for n in names if by_name[n]["kind"] == "debias"]
    if not lc or not db:
        return "Only one sampler was run, so samplers cannot be compared."
    a, b = lc[0], db[0]
    first = COLS[0][0]
    few = [x for x in (a, b) if sum(v is not None for v in per_metric[first][x]) < need]
    if few:
        return (f"Long-CLIP ({a}) against DeBias ({b}): fewer than {need} models of {', '.join(few)} passed the "
                "competence gates, so this scale cannot answer which sampler moves the biases more.")

    def versus(x: str, y: str, cname: str) -> str:
        vx, vy = per_metric[cname][x], per_metric[cname][y]
        return compare(x, summarize(vx), y, summarize(vy), cname, d=paired(vx, vy))

    parts = [f"Long-CLIP ({a}) against DeBias ({b}), paired by seed:"]
    parts += [versus(b, a, cname) for cname, *_ in COLS[:2]]
    nopad = [n for n in db if by_name[n].get("pad", True) is False]
    if nopad:
        parts.append("Padding: " + versus(b, nopad[0], COLS[1][0]))
    weights = [n for n in db if n != b and by_name[n].get("short_weight", 0.1) != by_name[b].get("short_weight", 0.1)
               and by_name[n].get("pad", True) == by_name[b].get("pad", True)]
    if weights:
        parts.append("Loss weights: " + versus(b, weights[0], COLS[1][0]))
    return " ".join(parts)


ANALYSIS_TITLES = {"padding": ('"This is a photo." prepended k times (text-to-image R@1)', "t2i"),
                   "order": ("First-2 / Swap-2 / First-only (image-to-text R@1)", "i2t"),
                   "summary": ("Summary Keep / Move-to-4th / Remove (text-to-image R@1)", "t2i")}


def analyses_section(c: SetContext, res: dict, models: list) -> dict:
    from comco.report import published_analysis

    s = c.s
    names = [n for n in s["probe"]["analyses"] if any(r.get("analyses", {}).get(n) for rs in res.values() for r in rs)]
    if not names:
        if s["probe"]["analyses"]:  # asked for, but every model that ran them is below its gates
            c.h(3, "DeBias analyses on held-out synthetic long captions")
            c.doc.p("No fine-tuned model passed the competence gates, so this scale cannot answer what the DeBias "
                    "analyses (summary Keep / Move / Remove, sentence order, prefix padding) show.")
        return {}
    numbers: dict = {}
    c.h(3, "DeBias analyses on held-out synthetic long captions")
    c.doc.p("Retrieval among the held-out test images with their `long` captions (a summary sentence naming every "
            "object, then one sentence per object), rewritten as the DeBias-CLIP paper does. R@1 in %, mean over "
            "seeds with a 95 % t-interval. Published rows are DOCCI figures of ViT-B/16 models, for orientation "
            "only. Within one model the caption variants are compared paired by seed.")
    for name in names:
        title, task = ANALYSIS_TITLES[name]
        variants = None
        rows, series, per_seed, dashes = [], {}, {}, Dashes()
        for label, _ in models:
            entries = [r.get("analyses", {}).get(name) for r in res[label]]
            if not any(entries):
                continue
            variants = variants or list(next(e for e in entries if e)["variants"])
            vals = [[e["variants"][v][task]["value"] if e else None for e in entries] for v in variants]
            stats = [summarize(v) for v in vals]
            series[label], per_seed[label] = stats, vals
            trials = [[e["variants"][v][task].get("n") if e else None for e in entries] for v in variants]
            rows.append([label] + [pct(counted(x, t), dashes=dashes, missing=NO_PASSING)
                                   for x, t in zip(stats, trials)])
            numbers.setdefault(name, {})[label] = {v: st for v, st in zip(variants, stats)}
        for ref in published_analysis("docci", name):
            rows.append([f"*published:* {ref['model']} (DeBias-CLIP paper, DOCCI)"] +
                        [f"{100 * ref['r1'][v]:.1f}" if v in ref["r1"] else
                         dashes.dash(NOT_PUBLISHED.replace("the shares", "other variants")) for v in variants])
        c.doc.p(f"**{title}**")
        c.doc.table(["model"] + variants, rows)
        footnotes(c, dashes)
        path = bar_plot(c.fig / f"{c.oset}-analysis-{name}.png", f"{title} ({c.oset})", variants, series, "R@1 (%)")
        c.doc.img(path, f"analysis {name}")
        c.doc.p(analysis_paragraph(name, series, per_seed))
    claims = claims_table(c, res, models)
    if claims:
        numbers["claims"] = claims
    return numbers


# The DeBias-CLIP paper's claims as gaps between caption variants of one model: each gap
# is a cost a robust model does not pay (analysis, direction, variant a, variant b).
CLAIMS = (("less reliance on the summary sentence", "summary", "t2i", "keep", "remove", "Keep - Remove"),
          ("robustness to sentence order", "order", "i2t", "first-2", "swap-2", "First-2 - Swap-2"),
          ("robustness to early filler tokens", "padding", "t2i", "k=0", "k=5", "k = 0 - k = 5"))
CLAIM_WORDS = {"supported": "reproduced", "contradicted": "**opposite**", "fragile": "fragile"}


def claims_table(c: SetContext, res: dict, models: list) -> dict:
    """Which of the DeBias paper's claims the lab reproduces: each claim's gap per seed,
    paired DeBias - Long-CLIP (the claim holds where the interval lies below zero)."""
    by_name = {v["name"]: v for v in c.s["finetune"]["variants"]}
    labels = [label for label, _ in models]
    lc = next((n for n in labels if by_name.get(n, {}).get("kind") == "longclip"), None)
    db = next((n for n in labels if by_name.get(n, {}).get("kind") == "debias"), None)
    if lc is None or db is None:
        return {}

    def gap(label, name, task, a, b):
        out = []
        for r in res[label]:
            v = r.get("analyses", {}).get(name, {}).get("variants", {})
            out.append(v[a][task]["value"] - v[b][task]["value"] if a in v and b in v else None)
        return out

    rows, numbers, verdicts, found, dashes = [], {}, [], [], Dashes()
    for claim, name, task, a, b, what in CLAIMS:
        gaps = {label: gap(label, name, task, a, b) for label in labels}
        if not any(x is not None for x in gaps[db]):
            continue
        d = paired(gaps[db], gaps[lc])
        j = judge_paired(gaps[db], gaps[lc], c.seeds, need=c.need, claimed=DOWN)
        verdict = CLAIM_WORDS.get(j.verdict, f"cannot answer ({j.reason})")
        band = "–" if d.get("lo") is None else f"{100 * d['mean']:+.1f} [{100 * d['lo']:+.1f}, {100 * d['hi']:+.1f}]"
        shown = dashes.dash("fewer than two seeds with both models: no paired interval") if band == "–" else band
        rows.append([claim, f"{what} ({task} R@1)"]
                    + [pct(summarize(gaps[label], (-1.0, 1.0)), dashes=dashes, missing=NO_PASSING) for label in labels]
                    + [shown, verdict])
        numbers[claim] = {"gaps": {label: summarize(gaps[label], (-1.0, 1.0)) for label in labels},
                          "debias_minus_longclip": d, "verdict": verdict.strip("*"), "judgement": j.to_dict()}
        verdicts.append(f"{claim}: {verdict.strip('*')}")
        found.append((f"DeBias-CLIP's {claim}: is DeBias's {what} gap smaller than Long-CLIP's (paired)?",
                      f"{band} points", j))
    if not rows:
        return {}
    c.doc.p("**The DeBias-CLIP paper's claims.** Each claim is a gap between two caption variants of one model, in "
            "points of R@1 (a model that does not lean on the summary, the sentence order or the first tokens pays "
            "no gap); means over passing seeds with a 95 % t-interval, and the gap of DeBias minus that of "
            "Long-CLIP paired by seed. A claim is reproduced where that paired interval lies below zero with every "
            "seed and with any one seed left out (fragile where it does so only with every seed).")
    c.doc.table(["claim", "gap"] + labels + [f"{db} - {lc}, paired", "verdict"], rows)
    footnotes(c, dashes)
    c.doc.p("In short: " + "; ".join(verdicts) + ".")
    for question, number, j in found:
        c.find(question, number, j)
    return numbers


def analysis_paragraph(name: str, series: dict, per_seed: dict) -> str:
    """Within each model, the first caption variant against the last (or swap-2), paired by seed."""
    parts = []
    for label, stats in series.items():
        vals = per_seed[label]
        if name == "padding":
            i, j, a, b = 0, len(stats) - 1, "k = 0", f"k = {len(stats) - 1}"
        elif name == "order":
            i, j, a, b = 0, 1, "first-2", "swap-2"
        else:
            i, j, a, b = 0, len(stats) - 1, "keep", "remove"
        parts.append(compare(a, stats[i], b, stats[j], f"for {label}, R@1", d=paired(vals[i], vals[j])))
    lead = {"padding": "Does filler text in front of the caption cost retrieval (the paper's early-token bias)?",
            "order": "Does swapping the first two sentences cost retrieval?",
            "summary": "How much of retrieval rests on the summary sentence?"}[name]
    return lead + " " + " ".join(parts)



def _trials(results: list, family: str, n, template, idx: int) -> list:
    """The trial count behind each model's figure (counted() keeps the fewest)."""
    return [None if (m := metric(r, family, n, template)) is None or idx >= len(m["n"]) else m["n"][idx]
            for r in results]
