"""What holds LABCLIP's binding near 56 % at the lab's small scale (issue 26, item 5).

One colour base (a lab stage `scratch-colors-SET-sS/model.pt`, or trained here with the
small scale's settings), its frozen embeddings of a colour dataset (the lab's map data,
`render-colors-SET/data`), and on held-out combinations (the binding probe's split: the
sorted (name, colour) pairs of a scene, 20 % held out) the factors that could set the
ceiling. docs/lab-small/LABCLIP.md holds the numbers and the command.

    python benchmarks/labclip.py --base RUN/stages/scratch-colors-simco-s0/model.pt \\
        --data RUN/stages/render-colors-simco/data [--extra-data RUN/stages/render-colors-train-simco/data]
    python benchmarks/labclip.py --train-base RUN/stages/captions-colors-simco-p1/data --base-steps 2400 ...

Printed (JSON lines, one per measurement, `train` and `test` binding where a map is fitted):
- `base`: cross-modal binding of the base alone (the identity map; chance 50 %);
- `unimodal`: the lab's colour probes (a ridge probe per object reads its colour from the
  image / the caption embedding), also per size rank (the largest object against the others);
- `map`: the lab's map (D x D, identity-initialised, learnt temperature, in-batch captions
  and the colour-swapped captions as negatives, 500 steps of 64 at lr 1e-3), then with more
  steps, without the hard negatives, with the hard negatives alone (the two-way binding
  loss), a residual MLP instead of the matrix, and with a quarter, half, all the map rows (and
  more data where --extra-data is given);
- `oracle`: a linear probe of (object, colour) pairs (ridge onto the scene's multi-hot pairs),
  read as binding: does the scene's own assignment of its two colours outscore the swapped
  one? On the image embeddings this is binding with a perfect text side (an upper bound of
  any map on the text embeddings that scores linearly), on the caption embeddings it asks
  whether the text embedding holds the binding at all; and the lab's map trained on perfect
  text features (the pairs' multi-hot code mapped into the image space);
- `geometry`: cosine of a caption to its colour swap against a random other caption.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

TEST_FRACTION, SPLIT_SEED = 0.2, 0  # the binding probe's (ProbeOptions.test_fraction, the lab's seed 0)
LAB_MAP = {"steps": 500, "batch_size": 64, "lr": 1e-3}  # recipes/order-bias.toml [scales.small.labclip]


# ---------------------------------------------------------------- data

def binding_rows(records: list[dict]) -> list[dict]:
    """One row per (scene, attributes caption) whose first two mentioned objects differ in
    colour (the swap changes nothing otherwise): the scene's (name, colour) pairs and the
    pairs after the swap."""
    rows = []
    for i, r in enumerate(records):
        caps = r.get("captions", {})
        for order, cap, swapped in zip(r["mention_orders"], caps.get("attributes", []),
                                       caps.get("attributes_swapped", [])):
            if len(order) < 2:
                continue
            a, b = r["objects"][order[0]], r["objects"][order[1]]
            if a.get("color") is None or a["color"] == b["color"]:
                continue
            pairs = [(o["name"], o["color"]) for o in r["objects"]]
            swap = list(pairs)
            swap[order[0]], swap[order[1]] = (a["name"], b["color"]), (b["name"], a["color"])
            rows.append({"scene": i, "caption": cap, "swapped": swapped, "pairs": pairs, "swap_pairs": swap})
    return rows


def codes(pair_lists: list[list[tuple[str, str]]], vocabulary: dict) -> np.ndarray:
    """Multi-hot (object, colour) codes: the perfect colour-object features of a caption."""
    out = np.zeros((len(pair_lists), len(vocabulary)), np.float32)
    for k, pairs in enumerate(pair_lists):
        for p in pairs:
            out[k, vocabulary[p]] = 1.0
    return out


def held_out(records: list[dict]) -> np.ndarray:
    from comco.probes.binding import combination_key
    from comco.probes.linear import in_test

    return np.array([in_test(combination_key(r), SPLIT_SEED, TEST_FRACTION) for r in records])


# ---------------------------------------------------------------- probes on fixed features

def colour_probe(feats: np.ndarray, records: list[dict], test: np.ndarray, *, ranks=None) -> float:
    """The lab's uni-modal probe (comco.probes.binding): per object name a ridge classifier
    reads that object's colour from one feature row per scene; `ranks` keeps objects of
    those size ranks only in the test rows."""
    from comco.probes.linear import fit_predict

    hits = []
    for name in sorted({o["name"] for r in records for o in r["objects"]}):
        rows = [(i, o["color"], o.get("size_rank")) for i, r in enumerate(records)
                for o in r["objects"] if o["name"] == name]
        idx = np.array([i for i, _, _ in rows])
        y = np.array([c for _, c, _ in rows])
        rank = np.array([-1 if s is None else s for _, _, s in rows])
        tr, te = ~test[idx], test[idx]
        if ranks is not None:
            te = te & np.isin(rank, ranks)
        if tr.sum() < 2 or te.sum() == 0 or len(set(y[tr])) < 2:
            continue
        hits.extend(fit_predict(feats[idx[tr]], y[tr], feats[idx[te]]) == y[te])
    return float(np.mean(hits)) if hits else float("nan")


def pair_scores(x_train: np.ndarray, code_train: np.ndarray, x_test: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """A linear probe of (object, colour) pairs: ridge from standardised features onto the
    multi-hot pair codes; returns a score per pair for each test row."""
    mu, sd = x_train.mean(0), x_train.std(0) + 1e-6

    def design(x):
        return np.hstack([(x - mu) / sd, np.ones((len(x), 1))]).astype(np.float64)

    xt = design(x_train)
    reg = l2 * np.eye(xt.shape[1])
    reg[-1, -1] = 0.0
    w = np.linalg.solve(xt.T @ xt + reg, xt.T @ code_train.astype(np.float64))
    return design(x_test) @ w


def binding_of_scores(scores: np.ndarray, good: np.ndarray, swap: np.ndarray) -> float:
    """Share of rows whose own (object, colour) assignment outscores the swapped one."""
    return float(((scores * good).sum(1) > (scores * swap).sum(1)).mean())


# ---------------------------------------------------------------- maps trained on cached embeddings

def train_map(image, text, negative, image_of, rows, *, steps: int, batch_size: int, lr: float,
              negatives: str = "hard", kind: str = "linear", seed: int = 0, scale: float = 1 / 0.07):
    """A map on the text side fitted as the lab fits LABCLIP (comco.train.labclip), on rows
    `rows` of the cached embeddings. negatives: "hard" (the lab's: images choose among the
    batch's captions and their colour swaps), "none" (the batch's captions only) or "only"
    (each image between its caption and its swap: the binding objective itself).
    kind: "linear" (D x D, identity-initialised where the text is already in image space,
    else a random projection of the text features) or "mlp" (the linear map plus a residual
    two-layer MLP of width 4 D, its output layer at zero). Returns text -> mapped text."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from comco.train.labclip import TextMap

    torch.manual_seed(seed)
    d_in, d_out = text.shape[1], image.shape[1]
    if d_in == d_out:
        module = TextMap(d_out, scale)
    else:
        module = TextMap(d_out, scale)
        module.text_map = nn.Linear(d_in, d_out, bias=False)
    if kind == "mlp":
        module.residual = nn.Sequential(nn.Linear(d_in, 4 * d_out), nn.GELU(), nn.Linear(4 * d_out, d_out))
        nn.init.zeros_(module.residual[2].weight)
        nn.init.zeros_(module.residual[2].bias)
    elif kind != "linear":
        raise ValueError(f"map kind {kind}")

    def mapped(t):
        t = F.normalize(t, dim=-1)
        out = module.text_map(t) + (module.residual(t) if kind == "mlp" else 0)
        return F.normalize(out, dim=-1)

    image, text, negative = (torch.as_tensor(np.asarray(a), dtype=torch.float32) for a in (image, text, negative))
    image = F.normalize(image, dim=-1)
    image_of, rows = torch.as_tensor(image_of), torch.as_tensor(rows)
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        pick = rows[torch.randint(len(rows), (min(batch_size, len(rows)),), generator=gen)]
        img, t, n = image[image_of[pick]], mapped(text[pick]), mapped(negative[pick])
        s = module.logit_scale.exp()
        targets = torch.arange(len(pick))
        if negatives == "only":
            logits = s * torch.stack([(img * t).sum(-1), (img * n).sum(-1)], 1)
            loss = F.cross_entropy(logits, torch.zeros(len(pick), dtype=torch.long))
        else:
            gallery = torch.cat([t, n]) if negatives == "hard" else t
            loss = (F.cross_entropy(s * img @ gallery.T, targets) + F.cross_entropy(s * t @ img.T, targets)) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
    module.eval()

    def apply(t):
        with torch.no_grad():
            return mapped(torch.as_tensor(np.asarray(t), dtype=torch.float32)).numpy()
    return apply


def binding_of_map(apply, image, text, negative, image_of, rows) -> float:
    img = image[image_of[rows]]
    img = img / np.linalg.norm(img, axis=1, keepdims=True)
    t, n = (apply(text[rows]), apply(negative[rows])) if apply else (text[rows], negative[rows])
    return float(((img * t).sum(1) > (img * n).sum(1)).mean())


# ---------------------------------------------------------------- the diagnosis

def embed(model_path: Path, records: list[dict], images: list[Path], rows: list[dict]) -> dict:
    from comco.models import load_model
    from comco.probes import Embedder

    loaded = load_model(f"ckpt:{model_path}", None, "cpu")
    emb = Embedder(loaded, cache_dir=None, batch_size=256, workers=1)
    first = [r["captions"]["attributes"][0] for r in records]
    scale = getattr(loaded.model, "logit_scale", None)
    return {"image": emb.images(images), "first_caption": emb.texts(first),
            "text": emb.texts([row["caption"] for row in rows]),
            "negative": emb.texts([row["swapped"] for row in rows]),
            "scale": float(scale.detach().exp()) if scale is not None else 1 / 0.07}


def diagnose(e: dict, records: list[dict], rows: list[dict], test_scene: np.ndarray, *,
             n_extra: int = 0, map_steps: int = LAB_MAP["steps"], long_steps: int = 5000, seed: int = 0):
    """Yields (measurement, figures). The first len(records) - n_extra records are the map's
    own data (their held-out combinations are the test rows); the last n_extra records add
    training rows only."""
    image, text, negative = e["image"], e["text"], e["negative"]
    image_of = np.array([row["scene"] for row in rows])
    n_own = len(records) - n_extra
    own = image_of < n_own
    test_rows = np.flatnonzero(own & test_scene[image_of])
    train_rows = np.flatnonzero(own & ~test_scene[image_of])
    extra_rows = np.flatnonzero(~own & ~test_scene[image_of])
    own_records, own_test = records[:n_own], test_scene[:n_own]
    yield "data", {"scenes": n_own, "extra_scenes": n_extra, "rows_train": len(train_rows),
                   "rows_test": len(test_rows), "rows_extra": len(extra_rows)}

    yield "base", {"train": binding_of_map(None, image, text, negative, image_of, train_rows),
                   "test": binding_of_map(None, image, text, negative, image_of, test_rows)}

    majority = []
    for name in sorted({o["name"] for r in own_records for o in r["objects"]}):
        ys = [(o["color"], own_test[i]) for i, r in enumerate(own_records) for o in r["objects"] if o["name"] == name]
        train_y = [c for c, t in ys if not t]
        if train_y:
            top = max(set(train_y), key=train_y.count)
            majority += [c == top for c, t in ys if t]
    uni = {"image": colour_probe(image[:n_own], own_records, own_test),
           "text": colour_probe(e["first_caption"][:n_own], own_records, own_test),
           "image_largest": colour_probe(image[:n_own], own_records, own_test, ranks=[0]),
           "image_smaller": colour_probe(image[:n_own], own_records, own_test, ranks=[1, 2, 3]),
           "text_largest": colour_probe(e["first_caption"][:n_own], own_records, own_test, ranks=[0]),
           "text_smaller": colour_probe(e["first_caption"][:n_own], own_records, own_test, ranks=[1, 2, 3]),
           "majority": float(np.mean(majority))}
    yield "unimodal", uni

    vocabulary = {p: k for k, p in enumerate(sorted({p for row in rows for p in row["pairs"] + row["swap_pairs"]}))}
    good, swap = codes([r["pairs"] for r in rows], vocabulary), codes([r["swap_pairs"] for r in rows], vocabulary)
    fit_rows = train_rows  # as the lab's map: the extra data is a map variant below
    img_rows = image[image_of]
    yield "oracle: pair probe on images", {
        "train": binding_of_scores(pair_scores(img_rows[fit_rows], good[fit_rows], img_rows[train_rows]),
                                   good[train_rows], swap[train_rows]),
        "test": binding_of_scores(pair_scores(img_rows[fit_rows], good[fit_rows], img_rows[test_rows]),
                                  good[test_rows], swap[test_rows])}
    # the caption embedding fitted to its own pairs; binding: its own assignment outscores the swap
    yield "oracle: pair probe on captions", {
        "train": binding_of_scores(pair_scores(text[fit_rows], good[fit_rows], text[train_rows]),
                                   good[train_rows], swap[train_rows]),
        "test": binding_of_scores(pair_scores(text[fit_rows], good[fit_rows], text[test_rows]),
                                  good[test_rows], swap[test_rows])}

    def cos(a, b):
        return float(np.mean(np.sum(a * b, 1)))
    perm = np.random.default_rng(seed).permutation(len(rows))
    yield "geometry", {"caption_vs_swap": cos(text, negative), "caption_vs_random_caption": cos(text, text[perm])}

    def fit(rows_, **kw):
        t0 = time.perf_counter()
        opts = {**LAB_MAP, "steps": map_steps, "seed": seed, "scale": e["scale"], **kw}
        apply = train_map(image, text, negative, image_of, rows_, **opts)
        return {"train": binding_of_map(apply, image, text, negative, image_of, train_rows),
                "test": binding_of_map(apply, image, text, negative, image_of, test_rows),
                "seconds": round(time.perf_counter() - t0, 1), **{k: v for k, v in kw.items()}}

    yield "map: the lab's", fit(train_rows)
    yield "map: hard negatives only", fit(train_rows, steps=long_steps, negatives="only")
    yield "map: more steps", fit(train_rows, steps=long_steps)
    t0 = time.perf_counter()
    apply = train_map(image, good, swap, image_of, fit_rows, **{**LAB_MAP, "steps": long_steps, "seed": seed,
                                                                "scale": e["scale"]})
    yield "oracle: the map on perfect text features", {
        "train": binding_of_map(apply, image, good, swap, image_of, train_rows),
        "test": binding_of_map(apply, image, good, swap, image_of, test_rows),
        "seconds": round(time.perf_counter() - t0, 1)}
    yield "map: residual MLP", fit(train_rows, steps=long_steps, kind="mlp")
    yield "map: no hard negatives", fit(train_rows, steps=long_steps, negatives="none")
    rng = np.random.default_rng(seed)
    for share in (0.25, 0.5):
        sub = np.sort(rng.choice(train_rows, int(share * len(train_rows)), replace=False))
        yield f"map: {share:g} of the rows", fit(sub, steps=long_steps)
    if len(extra_rows):
        yield "map: with the extra data", fit(np.concatenate([train_rows, extra_rows]), steps=long_steps)


def train_base(data: Path, out: Path, steps: int, seed: int, snapshots: int = 0) -> Path:
    """A colour base with the small scale's scratch settings (recipes/order-bias.toml);
    `snapshots` > 0 also saves the weights at that many steps along the run."""
    from comco.train import make_config, run_training

    options = {"captions": ["attributes"], "resolution": 64, "patch_size": 8, "context_length": 32,
               "vision_width": 128, "text_width": 128, "embed_dim": 128, "vision_layers": 2, "text_layers": 2,
               "vision_tower": "conv", **({"checkpoints": snapshots} if snapshots else {})}
    cfg = make_config("scratch", data=str(data), out=str(out), seed=seed, steps=steps, batch_size=64, lr=2e-3,
                      warmup=50, weight_decay=0.1, device="cpu", workers=0, quiet=True,
                      checkpoint_every=10 ** 9, options=options)
    run_training(cfg)
    return out / "model.pt"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, help="a colour base's model.pt (a lab stage's)")
    ap.add_argument("--train-base", type=Path, help="train a base here on this colour dataset instead")
    ap.add_argument("--base-steps", type=int, default=600)
    ap.add_argument("--base-out", type=Path, help="keep the trained base here (default: a temporary folder)")
    ap.add_argument("--base-snapshots", type=int, default=0,
                    help="with --train-base: save N snapshots along the run and diagnose each trained one too")
    ap.add_argument("--data", type=Path, required=True, help="the map's colour dataset (render-colors-SET/data)")
    ap.add_argument("--extra-data", type=Path, help="more colour scenes for the map's training rows only")
    ap.add_argument("--scenes", type=int, default=0, help="use the map data's first N scenes only (0: all)")
    ap.add_argument("--map-steps", type=int, default=LAB_MAP["steps"])
    ap.add_argument("--long-steps", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if (args.base is None) == (args.train_base is None):
        ap.error("give one of --base MODEL.pt or --train-base DATA")

    import torch

    from comco.data.folder import Dataset

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        bases = [("given", args.base)]
        if args.base is None:
            from comco.train.snapshots import list_snapshots

            t0 = time.perf_counter()
            out = args.base_out or Path(tmp)
            final = train_base(args.train_base, out, args.base_steps, args.seed, args.base_snapshots)
            print(json.dumps({"base_trained": str(final), "steps": args.base_steps,
                              "seconds": round(time.perf_counter() - t0, 1)}), flush=True)
            bases = [(args.base_steps, final)] + [
                (step, path) for step, path in list_snapshots(out) if 0 < step < args.base_steps]
        records = list(Dataset(args.data).records())
        records = records[:args.scenes] if args.scenes > 0 else records
        test = held_out(records)
        extra = list(Dataset(args.extra_data).records()) if args.extra_data else []
        if extra:  # the extra scenes train only: none of their combinations may be a held-out one
            keep = ~held_out(extra)
            extra = [r for r, k in zip(extra, keep) if k]
        recs = records + extra
        rows = binding_rows(recs)
        images = [args.data / r["image"] for r in records] + [args.extra_data / r["image"] for r in extra]
        for base_step, base in bases:
            t0 = time.perf_counter()
            e = embed(base, recs, images, rows)
            print(json.dumps({"base_step": base_step, "embedded_seconds": round(time.perf_counter() - t0, 1)}),
                  flush=True)
            for name, figures in diagnose(e, recs, rows, np.concatenate([test, np.zeros(len(extra), bool)]),
                                          n_extra=len(extra), map_steps=args.map_steps,
                                          long_steps=args.long_steps, seed=args.seed):
                print(json.dumps({"base_step": base_step, "measurement": name, **figures}), flush=True)


if __name__ == "__main__":
    main()
