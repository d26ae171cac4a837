"""Attribute binding on colour datasets (LABCLIP's tests).

- Uni-modal: for each object name, a linear probe predicts that object's colour from
  the image embedding and from the caption embedding. Train and test hold different
  combinations (the sorted (name, colour) pairs of a scene), so a probe cannot pass by
  recognising a whole scene it has seen.
- Cross-modal: the image is closer to its `attributes` caption than to the same caption
  with the first two mentioned objects' colours swapped (chance 50 %). Captions whose
  first two objects share a colour are left out (the swap changes nothing).
"""

from __future__ import annotations

import numpy as np

from comco.errors import UserError
from comco.probes.embed import named
from comco.probes.linear import fit_predict, in_test
from comco.probes.stats import accuracy


def combination_key(record: dict) -> str:
    return "|".join(sorted(f"{o['name']}:{o.get('color')}" for o in record["objects"]))


def binding(data, embedder, *, test_fraction: float, n_boot: int, seed: int) -> list[dict]:
    if not data.has_colors:
        raise UserError("probe 'binding' needs a colour dataset; plan and render one with --colors")
    recs = [r for r in data.records if r.get("captions", {}).get("attributes")]
    if not recs:
        raise UserError("probe 'binding' needs `attributes` captions; plan the dataset with --colors")
    with named(embedder, "colour scene images"):
        images = embedder.images([data.image_path(r) for r in recs])
    with named(embedder, "attribute captions"):
        first_caps = embedder.texts([r["captions"]["attributes"][0] for r in recs])
    test_rec = np.array([in_test(combination_key(r), seed, test_fraction) for r in recs])

    metric = []
    for r_i, (label, feats) in enumerate((("image probe", images), ("text probe", first_caps))):
        hits, clusters, chance_hits = [], [], []
        for name in sorted({o["name"] for r in recs for o in r["objects"]}):
            rows = [(i, o["color"]) for i, r in enumerate(recs) for o in r["objects"] if o["name"] == name]
            idx = np.array([i for i, _ in rows])
            y = np.array([str(c) for _, c in rows])
            test = test_rec[idx]
            if (~test).sum() < 2 or test.sum() == 0 or len(set(y[~test])) < 2:
                continue  # too few examples of this object to train a probe on
            pred = fit_predict(feats[idx[~test]], y[~test], feats[idx[test]])
            values, counts = np.unique(y[~test], return_counts=True)
            hits.extend(pred == y[test])
            chance_hits.extend(y[test] == values[counts.argmax()])
            clusters.extend(recs[i]["id"] for i in idx[test])
        chance = float(np.mean(chance_hits)) if chance_hits else None
        metric.append({"role": label, **accuracy(hits, clusters, chance=chance, n_boot=n_boot, seed=seed + r_i)})

    good, bad, ids = [], [], []
    for i, r in enumerate(recs):
        for order, cap, swapped in zip(r["mention_orders"], r["captions"]["attributes"],
                                       r["captions"].get("attributes_swapped", [])):
            a, b = (r["objects"][order[0]].get("color"), r["objects"][order[1]].get("color")) \
                if len(order) > 1 else (None, None)
            if a is None or a == b:
                continue
            good.append((i, cap))
            bad.append(swapped)
            ids.append(r["id"])
    if good:
        with named(embedder, "attribute captions and their colour swaps"):
            g = embedder.texts([c for _, c in good])
            b = embedder.texts(bad)
        img = images[[i for i, _ in good]]
        hit = np.einsum("ij,ij->i", img, g) > np.einsum("ij,ij->i", img, b)
    else:
        hit = np.zeros(0, bool)
    metric.append({"role": "cross-modal", **accuracy(hit, ids, chance=0.5, n_boot=n_boot, seed=seed + 7)})
    return [{"key": "colours", "n_objects": None, "queries": len(recs), "metrics": {"accuracy": metric}}]
