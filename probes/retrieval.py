"""Top-1 retrieval scored per role (mention position, size rank, slot).

A query (caption or image) holds n objects, each with a role. The most similar
gallery item is "retrieved". Per role:
- unconditional: share of all queries whose top-1 is the object in that role;
- conditional: the same among queries whose top-n items are exactly the n objects
  present (the ComCO paper's metric); over roles these add up to 100 %.
"""

from __future__ import annotations

import numpy as np

from comco.probes.stats import accuracy

ORDINALS = ["1st", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th"]


def size_labels(n: int) -> list[str]:
    return ["largest"] + [f"{ORDINALS[k]} largest" for k in range(1, n)]


def role_retrieval(sim: np.ndarray, targets: np.ndarray, roles: list[str], clusters=None, *,
                   n_boot: int, seed: int) -> dict:
    """Metrics for queries that all hold len(roles) objects.

    sim: (Q, G) query-gallery similarity; targets: (Q, n) gallery index of the object in
    each role (-1 when a query lacks that role, e.g. a slot that is empty).
    """
    sim = np.asarray(sim)
    targets = np.asarray(targets)
    q, g = sim.shape
    present = targets >= 0
    n_present = present.sum(1)
    top1 = sim.argmax(1)
    order = np.argsort(-sim, axis=1, kind="stable")
    exact = np.zeros(q, bool)
    for i in range(q):  # top-n set equals the set of objects present
        k = n_present[i]
        exact[i] = set(order[i, :k].tolist()) == set(targets[i, present[i]].tolist())
    uncond, cond = [], []
    for r, role in enumerate(roles):
        has = present[:, r]
        hit = top1 == targets[:, r]
        cl = None if clusters is None else np.asarray(clusters)
        u = accuracy(hit[has], None if cl is None else cl[has], chance=1.0 / g, n_boot=n_boot, seed=seed + r)
        keep = has & exact
        c = accuracy(hit[keep], None if cl is None else cl[keep],
                     chance=float(np.mean(1.0 / n_present[keep])) if keep.any() else None,
                     n_boot=n_boot, seed=seed + 100 + r)
        uncond.append({"role": role, **u})
        cond.append({"role": role, **c})
    return {"queries": int(q), "gallery": int(g), "kept_conditional": int(exact.sum()),
            "metrics": {"conditional": cond, "unconditional": uncond}}


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Similarity of normalised embeddings, in float64: identical rows score identically
    wherever they sit (float32 BLAS results can differ in the last bit by position), so
    argmax and top-n ties are decided the same way every run."""
    return np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64).T
