"""Top-1 retrieval scored per role (mention position, size rank, slot).

A query (caption or image) holds n objects, each with a role. The most similar
gallery item is "retrieved". Per role:
- unconditional: share of all queries whose top-1 is the object in that role;
- conditional: the same among queries whose top-n items are exactly the n objects
  present (the ComCO paper's metric); over roles these add up to 100 %.

Ties are ties: a query whose best and second-best scores lie within the float resolution of
the embeddings (`near_ties`) retrieves no one object, so it is counted in `ties` and left
out of every share (never split, never decided by rounding). A figure whose queries are
mostly such ties (`mostly_ties`) reads as "no preference measurable", not as a number: an
untrained image tower maps every image to nearly one embedding, and which object it
"retrieves" there flips with the batch an image was encoded in.
"""

from __future__ import annotations

import numpy as np

from comco.probes.stats import accuracy

ORDINALS = ["1st", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th"]

# The one rule for near-ties. The embeddings are float32 (a model's output dtype), so a
# cosine carries their rounding: two encoding paths of one image (another batch, another
# kernel) move it by about one unit in the last place (ulp) of float32 at its magnitude
# (1.2e-7 near 1). A best score within TIE_ULPS such units of a candidate that would count
# differently is a tie: the top-1 there is rounding, not a preference.
TIE_ULPS = 4
TIE_RULE = (f"near-ties left out of the shares: a query whose best score is within {TIE_ULPS} units in the last "
            "place of the embeddings' float type (float32: 4.8e-7 near 1) of a candidate that would count "
            "differently retrieves no one object")
MOSTLY = 0.5  # a figure with more than this share of its queries tied shows no preference
NO_PREFERENCE = "no preference measurable"


def tie_tolerance(best: np.ndarray, dtype=np.float32) -> np.ndarray:
    """TIE_ULPS units in the last place of `dtype` at each best score's magnitude."""
    dt = np.dtype(dtype) if np.issubdtype(np.dtype(dtype), np.floating) else np.dtype(np.float32)
    return TIE_ULPS * np.spacing(np.abs(np.asarray(best, dtype=np.float64)).astype(dt)).astype(np.float64)


def near_ties(sim: np.ndarray, dtype=np.float32, outcome: np.ndarray | None = None) -> np.ndarray:
    """(Q,) True where a query's top-1 is decided by rounding: another candidate scores within
    `tie_tolerance` of the best and would count differently. `outcome` (Q, G) labels what each
    candidate would count as (a role, hit or miss); None: every candidate is its own. Two
    candidates with one outcome (two absent objects, two captions of the image) tie harmlessly.
    `dtype` is the embeddings' float type (their resolution)."""
    sim = np.asarray(sim, dtype=np.float64)
    q = sim.shape[0]
    if q == 0 or sim.shape[1] < 2:
        return np.zeros(q, bool)
    rows = np.arange(q)
    top = sim.argmax(1)
    best = sim[rows, top]
    close = sim >= (best - tie_tolerance(best, dtype))[:, None]
    if outcome is None:
        return close.sum(1) > 1
    outcome = np.broadcast_to(np.asarray(outcome), sim.shape)
    return (close & (outcome != outcome[rows, top][:, None])).any(1)


def mostly_ties(ties: int | None, counted: int | None) -> bool:
    """Whether a figure rests mostly on ties (more than MOSTLY of its queries tied)."""
    if not ties:
        return False
    return ties > MOSTLY * (ties + (counted or 0))


def resolution(embedder) -> np.dtype:
    """The float type an embedder's vectors were computed in (float32 where it does not say)."""
    return np.dtype(getattr(embedder, "resolution", np.float32))


def size_labels(n: int) -> list[str]:
    return ["largest"] + [f"{ORDINALS[k]} largest" for k in range(1, n)]


def role_retrieval(sim: np.ndarray, targets: np.ndarray, roles: list[str], clusters=None, *,
                   n_boot: int, seed: int, dtype=np.float32) -> dict:
    """Metrics for queries that all hold len(roles) objects.

    sim: (Q, G) query-gallery similarity; targets: (Q, n) gallery index of the object in
    each role (-1 when a query lacks that role, e.g. a slot that is empty); dtype: the
    embeddings' float type. Near-ties (`near_ties`) are counted in "ties" (per role: among
    the queries that hold it) and left out of every share.
    """
    sim = np.asarray(sim)
    targets = np.asarray(targets)
    q, g = sim.shape
    present = targets >= 0
    role_of = np.full((q, g), -1)  # what each gallery item would count as: its role for this query, or a miss
    for r in range(targets.shape[1]):
        rows = np.flatnonzero(present[:, r])
        role_of[rows, targets[rows, r]] = r
    tied = near_ties(sim, dtype, role_of)
    n_present = present.sum(1)
    top1 = sim.argmax(1)
    order = np.argsort(-sim, axis=1, kind="stable")
    exact = np.zeros(q, bool)
    for i in range(q):  # top-n set equals the set of objects present
        k = n_present[i]
        exact[i] = set(order[i, :k].tolist()) == set(targets[i, present[i]].tolist())
    uncond, cond = [], []
    for r, role in enumerate(roles):
        has = present[:, r] & ~tied
        hit = top1 == targets[:, r]
        cl = None if clusters is None else np.asarray(clusters)
        u = accuracy(hit[has], None if cl is None else cl[has], chance=1.0 / g, n_boot=n_boot, seed=seed + r)
        keep = has & exact
        c = accuracy(hit[keep], None if cl is None else cl[keep],
                     chance=float(np.mean(1.0 / n_present[keep])) if keep.any() else None,
                     n_boot=n_boot, seed=seed + 100 + r)
        uncond.append({"role": role, **u, "ties": int((present[:, r] & tied).sum())})
        cond.append({"role": role, **c, "ties": int((present[:, r] & exact & tied).sum())})
    return {"queries": int(q), "gallery": int(g), "kept_conditional": int((exact & ~tied).sum()),
            "ties": int(tied.sum()), "tie_share": float(tied.mean()) if q else 0.0, "tie_rule": TIE_RULE,
            "metrics": {"conditional": cond, "unconditional": uncond}}


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Similarity of normalised embeddings, in float64: identical rows score identically
    wherever they sit (float32 BLAS results can differ in the last bit by position), so
    argmax and top-n ties are decided the same way every run."""
    return np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64).T
