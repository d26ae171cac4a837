"""Why presence TOR fails at the lab's medium scale (issue 26): one scratch model trained
with the scale's settings, its weights saved along the run (the `checkpoints` option), and
at each saved step presence measured against other galleries, per object count, per
object, and beside what the training captions hold. docs/lab-medium/DIAGNOSIS.md holds
the numbers and the command.

    python benchmarks/presence.py --train RUN/stages/render-train-comco/data \\
        --test RUN/stages/render-test-comco/data --steps 600 --checkpoints 4 [--train-objects 1,2,3,4 ...]

TRAIN and TEST are a medium run's training renders (their own captions are the p = 0 ones)
and held-out test renders (with singles); `comco lab run` with the scale's stages cut to
render gives both. Printed per saved step (JSON lines):
- `gates`: set R@1, presence TOR and IOR as the lab's gates measure them;
- `bias`: TOR first-mention share and IOR largest share (conditional, per object count);
- `presence_tor`: the `and` captions against galleries of the bare names (the gate's; for the
  `and` template a 1-object caption is the bare name, so this is also "the query template"
  and "names as seen in 1-object training captions"), of the names written with the
  `articles` and `photo` templates (captions the model never saw), of the bare names with the
  mean gallery and caption vectors removed (`centred`), and the rank of the best present name;
- `by_count`: presence TOR per object count;
- `hubs`: how concentrated the wrong top-1s are (the share of all top-1s taken by the five
  most-retrieved names, and those names with how often each appeared alone in training);
- `rare_vs_frequent`: presence TOR of captions whose objects are all among the names seen
  alone most often vs least often in training, and the rank correlation between a name's
  false alarms and its solo count;
- `singles`: each single-object render against the bare names (does the model know each
  name alone?), and each bare name's nearest other name being itself by construction skipped;
- `train_presence`: presence TOR on training captions of 2-4 objects (in distribution);
- `lookalikes`: of the failures, how close the wrongly retrieved name is to the nearest named
  object (name vectors and single renders) against a random absent name, and the most
  frequent (named, retrieved instead) pairs; `presence_tor` also gives the presence of an
  ideal additive caption (the mean of its own names' vectors).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np


def training_stats(records: list[dict], names: list[str]) -> dict:
    """What the training scenes and captions hold: object counts and each name's solo count."""
    counts = Counter(len(r["objects"]) for r in records)
    alone = Counter(r["objects"][0]["name"] for r in records if len(r["objects"]) == 1)
    mentions = Counter(o["name"] for r in records for o in r["objects"])
    solo = np.array([alone.get(n, 0) for n in names])
    total = np.array([mentions.get(n, 0) for n in names])
    return {"scenes": len(records), "objects": {str(k): v / len(records) for k, v in sorted(counts.items())},
            "alone_per_name": {"min": int(solo.min()), "median": float(np.median(solo)), "max": int(solo.max())},
            "scenes_per_name": {"min": int(total.min()), "median": float(np.median(total)), "max": int(total.max())},
            "_alone": dict(zip(names, solo.tolist()))}


def _presence(sim: np.ndarray, present: list[set[int]]) -> float:
    top = sim.argmax(1)
    return float(np.mean([int(t) in p for t, p in zip(top, present, strict=True)]))


def _centred(x: np.ndarray) -> np.ndarray:
    x = x - x.mean(0, keepdims=True)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _spearman(a, b) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def lookalikes(sim: np.ndarray, present: list[set[int]], bare: np.ndarray, emb, test, index) -> dict:
    """Of the presence failures: how similar the wrongly retrieved name is to the most similar
    object the caption does name (between names, and between their single renders), against a
    random absent name; and the caption's similarity to its best present name and to the winner."""
    from comco.probes.retrieval import cosine

    top = sim.argmax(1)
    fail = [i for i in range(len(top)) if int(top[i]) not in present[i]]
    if not fail:
        return {}
    rng = np.random.default_rng(0)
    absent = [int(rng.choice([k for k in range(len(bare)) if k not in present[i]])) for i in fail]
    names_cos = cosine(bare, bare)
    out = {"failures": len(fail),
           "name cos to nearest present: winner / random absent": [
               round(float(np.mean([max(names_cos[top[i], j] for j in present[i]) for i in fail])), 3),
               round(float(np.mean([max(names_cos[a, j] for j in present[i]) for i, a in zip(fail, absent)])), 3)],
           "caption cos: best present / winner": [
               round(float(np.mean([max(sim[i, j] for j in present[i]) for i in fail])), 3),
               round(float(np.mean([sim[i, top[i]] for i in fail])), 3)],
           "mean name-name cos (off-diagonal)": round(float(names_cos[~np.eye(len(bare), dtype=bool)].mean()), 3)}
    if test.singles:
        singles = emb.images([test.image_path(s) for s in test.singles])
        rows = np.zeros((len(bare), singles.shape[1]))
        rows[[index[s["objects"][0]["name"]] for s in test.singles]] = singles
        renders = cosine(rows, rows)
        out["render cos to nearest present: winner / random absent"] = [
            round(float(np.mean([max(renders[top[i], j] for j in present[i]) for i in fail])), 3),
            round(float(np.mean([max(renders[a, j] for j in present[i]) for i, a in zip(fail, absent)])), 3)]
    pairs = Counter()
    for i in fail:
        j = max(present[i], key=lambda k: names_cos[top[i], k])
        pairs[(test.names[j], test.names[int(top[i])])] += 1
    out["most frequent (named, retrieved instead)"] = [[a, b, c] for (a, b), c in pairs.most_common(8)]
    return out


def diagnose(model_path: Path, test, train_records: list[dict], alone: dict[str, int]) -> dict:
    from comco.models import load_model
    from comco.probes import Embedder, gate_figures
    from comco.probes import texts as T
    from comco.probes.development import development_point
    from comco.probes.retrieval import cosine

    emb = Embedder(load_model(f"ckpt:{model_path}", None, "cpu"), cache_dir=None, batch_size=256)
    names, index = test.names, {n: i for i, n in enumerate(test.names)}
    book = T.template_book(test.info)
    figs = gate_figures(test, emb, "and", n_boot=0, seed=0)
    out: dict = {"gates": {k: round(figs[k]["acc"], 3) for k in ("set R@1", "presence TOR", "presence IOR")}}
    point = development_point(test, emb, "and")
    out["bias"] = {k: round(v, 3) for k, v in point.items() if k.startswith(("TOR", "IOR"))}

    caps, present, count = [], [], []
    for r in test.records:
        for c in r["captions"]["and"]:
            caps.append(c)
            present.append({index[o["name"]] for o in r["objects"]})
            count.append(len(r["objects"]))
    q = emb.texts(caps)
    galleries = {g: emb.texts([T.write(T.get_template(book, g), [n], test.object_set) for n in names])
                 for g in ("and", "articles", "photo")}
    bare = galleries["and"]
    sim = cosine(q, bare)
    order = np.argsort(-sim, axis=1, kind="stable")
    best_rank = [min(int(np.where(order[i] == j)[0][0]) for j in present[i]) for i in range(len(caps))]
    out["presence_tor"] = {"bare names": round(_presence(sim, present), 3),
                           "articles template": round(_presence(cosine(q, galleries["articles"]), present), 3),
                           "photo template": round(_presence(cosine(q, galleries["photo"]), present), 3),
                           "centred": round(_presence(cosine(_centred(q), _centred(bare)), present), 3),
                           "best present rank (median, 90th pct)": [float(np.median(best_rank)),
                                                                     float(np.percentile(best_rank, 90))]}
    # an ideal additive caption: the normalised mean of its own names' vectors. If it fails
    # presence too, the names' geometry (lookalikes close together), not the caption encoding, sets it
    mix = np.stack([bare[sorted(p)].mean(0) for p in present])
    mix /= np.linalg.norm(mix, axis=1, keepdims=True)
    out["presence_tor"]["mean of its own names (additive caption)"] = round(_presence(cosine(mix, bare), present), 3)
    out["lookalikes"] = lookalikes(sim, present, bare, emb, test, index)
    count = np.array(count)
    hit = np.array([int(t) in p for t, p in zip(sim.argmax(1), present, strict=True)])
    out["by_count"] = {str(n): round(float(hit[count == n].mean()), 3) for n in sorted(set(count))}
    top = Counter(sim.argmax(1).tolist())
    five = top.most_common(5)
    out["hubs"] = {"top-1 share of the 5 most retrieved names": round(sum(c for _, c in five) / len(caps), 3),
                   "names retrieved at least once": len(top),
                   "the five (top-1 share, solo scenes in training)": [[names[i], round(c / len(caps), 3),
                                                                        alone.get(names[i], 0)] for i, c in five]}
    false_alarms = np.zeros(len(names))
    for t, p in zip(sim.argmax(1), present, strict=True):
        if int(t) not in p:
            false_alarms[int(t)] += 1
    solo = np.array([alone.get(n, 0) for n in names])
    hi, lo = solo >= np.median(solo), solo < np.median(solo)
    all_in = lambda mask: np.array([all(mask[j] for j in p) for p in present])  # noqa: E731
    out["rare_vs_frequent"] = {
        "presence, objects all seen alone >= median": round(float(hit[all_in(hi)].mean()), 3)
        if all_in(hi).any() else None,
        "presence, objects all seen alone < median": round(float(hit[all_in(lo)].mean()), 3)
        if all_in(lo).any() else None,
        "spearman(false alarms, solo count)": round(_spearman(false_alarms, solo), 3)}
    if test.singles:
        singles = emb.images([test.image_path(s) for s in test.singles])
        want = [index[s["objects"][0]["name"]] for s in test.singles]
        out["singles"] = {"render -> own bare name (top-1)": round(float(np.mean(
            cosine(singles, bare).argmax(1) == np.array(want))), 3)}
    rng = np.random.default_rng(0)
    multi = [r for r in train_records if len(r["objects"]) > 1]
    pick = [multi[i] for i in rng.choice(len(multi), size=min(600, len(multi)), replace=False)]
    tq = emb.texts([r["captions"]["and"][0] for r in pick])
    tpresent = [{index[o["name"]] for o in r["objects"]} for r in pick]
    out["train_presence"] = round(_presence(cosine(tq, bare), tpresent), 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=Path, required=True)
    ap.add_argument("--test", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--checkpoints", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--vision-width", type=int, default=None, help="the image tower's width (default --width)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--resolution", type=int, default=96)
    ap.add_argument("--text-attention", default="causal")
    ap.add_argument("--text-pool", default=None)
    ap.add_argument("--logit-scale", type=float, default=None, help="a fixed logit scale (default: learned)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="keep the run here (default: a temporary folder)")
    ap.add_argument("--only-untrained", action="store_true", help="probe the untrained model alone")
    ap.add_argument("--probe-only", action="store_true",
                    help="probe the snapshots already in --out (e.g. of a run still training), train nothing")
    ap.add_argument("--steps-to-probe", default=None, help="comma-separated snapshot steps to probe (default all)")
    args = ap.parse_args()

    import torch

    from comco.data.folder import Dataset
    from comco.probes import open_dataset
    from comco.train import make_config, run_training
    from comco.train.snapshots import list_snapshots

    torch.set_num_threads(args.threads)
    w = args.width
    options = {"captions": ["and"], "resolution": args.resolution, "patch_size": 8, "context_length": 32,
               "vision_width": args.vision_width or w, "text_width": w, "embed_dim": w, "vision_layers": args.layers,
               "text_layers": args.layers, "vision_tower": "conv", "checkpoints": args.checkpoints,
               "text_attention": args.text_attention}
    if args.logit_scale is not None:
        options["logit_scale"] = args.logit_scale
    if args.text_pool:
        options["text_pool"] = args.text_pool
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        if args.only_untrained:
            from comco.train import save_initial

            save_initial(out / "snapshots" / "step-000000.pt", args.seed, options)
        elif not (args.probe_only or (out / "model.pt").is_file()):  # a finished run is probed, not retrained
            cfg = make_config("scratch", data=str(args.train), out=str(out), seed=args.seed, steps=args.steps,
                              batch_size=args.batch_size, lr=args.lr, warmup=args.warmup, weight_decay=0.1,
                              device="cpu", workers=0, quiet=True, checkpoint_every=10 ** 9, options=options)
            t = time.perf_counter()
            run_training(cfg)
            print(json.dumps({"train_s": round(time.perf_counter() - t, 1)}), flush=True)
        test = open_dataset(args.test)  # read after training: it may still be rendering when training starts
        train_records = list(Dataset(args.train).records())
        stats = training_stats(train_records, test.names)
        alone = stats.pop("_alone")
        print(json.dumps({"training data": stats}), flush=True)
        wanted = {int(x) for x in args.steps_to_probe.split(",")} if args.steps_to_probe else None
        for step, path in list_snapshots(out):
            if wanted is not None and step not in wanted:
                continue
            print(json.dumps({"step": step, **diagnose(path, test, train_records, alone)}), flush=True)


if __name__ == "__main__":
    main()
