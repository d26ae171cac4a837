"""Linear probes on frozen embeddings: TOC (object at each mention position, from caption
embeddings) and IOC (object at each slot, from image embeddings).

Train and test are split by image, so no image's captions are on both sides; the
chance level is what always answering the training set's most common label scores on
the test set.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

import numpy as np

from comco.probes.embed import named
from comco.probes.retrieval import ORDINALS
from comco.probes.stats import accuracy

SLOT_ORDER = ["M", "UL", "UR", "BL", "BR"]


def in_test(key: str, seed: int, test_fraction: float) -> bool:
    """A stable split: the same key lands on the same side for every model and run."""
    h = int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:8], 16)
    return h / 0xFFFFFFFF < test_fraction


def fit_predict(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, *, l2: float = 1.0) -> np.ndarray:
    """A ridge-regression classifier (least squares onto one-hot labels) -> labels for x_test.

    Closed form, so a probe per object and position costs one small solve, not an
    iterative fit; on standardised features it ranks classes like a linear probe should.
    """
    classes, y = np.unique(y_train, return_inverse=True)
    if len(classes) == 1:
        return np.full(len(x_test), classes[0])
    mu, sd = x_train.mean(0), x_train.std(0) + 1e-6
    xt = np.hstack([(x_train - mu) / sd, np.ones((len(x_train), 1))]).astype(np.float64)
    targets = np.eye(len(classes))[y]
    reg = l2 * np.eye(xt.shape[1])
    reg[-1, -1] = 0.0  # the bias is not shrunk
    if xt.shape[0] < xt.shape[1]:  # fewer samples than features: solve in sample space
        w = xt.T @ np.linalg.solve(xt @ xt.T + l2 * np.eye(len(xt)), targets)
    else:
        w = np.linalg.solve(xt.T @ xt + reg, xt.T @ targets)
    xs = np.hstack([(x_test - mu) / sd, np.ones((len(x_test), 1))])
    return classes[(xs @ w).argmax(1)]


def probe_accuracy(x: np.ndarray, y: np.ndarray, test: np.ndarray, clusters, role: str, *,
                   n_boot: int, seed: int) -> dict:
    train = ~test
    if train.sum() < 2 or test.sum() == 0:
        return {"role": role, **accuracy([], chance=None)}
    pred = fit_predict(x[train], y[train], x[test])
    values, counts = np.unique(y[train], return_counts=True)
    chance = float(np.mean(y[test] == values[counts.argmax()]))
    return {"role": role, **accuracy(pred == y[test], np.asarray(clusters)[test], chance=chance,
                                     n_boot=n_boot, seed=seed)}


def toc(data, embedder, template_name: str, *, test_fraction: float, n_boot: int, seed: int) -> list[dict]:
    rows = defaultdict(lambda: {"text": [], "labels": [], "ids": []})
    for rec in data.records:
        caps = rec.get("captions", {}).get(template_name)
        if not caps:
            continue
        names = [o["name"] for o in rec["objects"]]
        for order, caption in zip(rec["mention_orders"], caps):
            g = rows[len(order)]
            g["text"].append(caption)
            g["labels"].append([names[i] for i in order])
            g["ids"].append(rec["id"])
    groups = []
    for n in sorted(rows):
        g = rows[n]
        with named(embedder, f"{n}-object captions"):
            x = embedder.texts(g["text"])
        labels = np.array(g["labels"])
        test = np.array([in_test(i, seed, test_fraction) for i in g["ids"]])
        metric = [probe_accuracy(x, labels[:, k], test, g["ids"], ORDINALS[k], n_boot=n_boot, seed=seed + k)
                  for k in range(n)]
        groups.append({"key": f"{template_name}, {n} objects", "template": template_name, "n_objects": n,
                       "queries": len(g["ids"]), "metrics": {"held-out accuracy": metric}})
    return groups


def ioc(data, embedder, *, test_fraction: float, n_boot: int, seed: int) -> list[dict]:
    with named(embedder, "scene images"):
        images = embedder.images([data.image_path(r) for r in data.records])
    by_n = defaultdict(list)
    for i, rec in enumerate(data.records):
        by_n[len(rec["objects"])].append(i)
    groups = []
    for n, rows in sorted(by_n.items()):
        recs = [data.records[i] for i in rows]
        x = images[rows]
        ids = np.array([r["id"] for r in recs])
        test = np.array([in_test(i, seed, test_fraction) for i in ids])
        metric = []
        for k, slot in enumerate(SLOT_ORDER):
            label = np.array([next((o["name"] for o in r["objects"] if o["slot"] == slot), "") for r in recs])
            has = label != ""
            if not has.any():
                continue
            metric.append(probe_accuracy(x[has], label[has], test[has], ids[has], slot, n_boot=n_boot, seed=seed + k))
        groups.append({"key": f"{n} objects", "n_objects": n, "queries": len(rows),
                       "metrics": {"held-out accuracy": metric}})
    return groups
