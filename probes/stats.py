"""Accuracies with counts and bootstrap 95 % intervals.

Trials from one image (several captions, several distractors) are not independent,
so the bootstrap resamples clusters (images, or sampled tuples), not single trials.
"""

from __future__ import annotations

import numpy as np

DEFAULT_BOOTSTRAP = 1000
# More resamples move a 95 % interval's ends by less than its rounding, and each takes a row of
# multinomial draws per table cell: a bound keeps --bootstrap 10**12 from asking for terabytes.
MAX_BOOTSTRAP = 100_000


def accuracy(hits, clusters=None, *, chance: float | None = None, n_boot: int = DEFAULT_BOOTSTRAP,
             seed: int = 0, level: float = 0.95) -> dict:
    """{"acc", "lo", "hi", "n", "clusters", "chance"} for a 0/1 (or fractional) hit vector.

    `clusters` labels each trial with its resampling unit; None means every trial is its own.
    Percentages are not used here: acc is a fraction in [0, 1].
    """
    hits = np.asarray(hits, dtype=np.float64)
    n = int(hits.size)
    out = {"acc": float("nan"), "lo": float("nan"), "hi": float("nan"), "n": n, "clusters": 0,
           "chance": chance}
    if n == 0:
        return out
    if clusters is None:
        sums, counts = hits, np.ones_like(hits)
    else:
        _, inv = np.unique(np.asarray(clusters), return_inverse=True)
        sums = np.bincount(inv, weights=hits)
        counts = np.bincount(inv).astype(np.float64)
    out["acc"] = float(sums.sum() / counts.sum())
    out["clusters"] = int(sums.size)
    lo, hi = cluster_bootstrap(sums, counts, n_boot=n_boot, seed=seed, level=level)
    out["lo"], out["hi"] = lo, hi
    return out


def cluster_bootstrap(sums: np.ndarray, counts: np.ndarray, *, n_boot: int, seed: int,
                      level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of sum(hits)/sum(trials) with clusters drawn with replacement."""
    c = sums.size
    if c < 2 or n_boot <= 0:
        v = float(sums.sum() / counts.sum())
        return v, v
    rng = np.random.default_rng(seed)
    stats = np.empty(n_boot)
    step = max(1, 2_000_000 // c)  # bound the (boots x clusters) weight matrix in memory
    for i in range(0, n_boot, step):
        b = min(step, n_boot - i)
        w = rng.multinomial(c, np.full(c, 1.0 / c), size=b).astype(np.float64)
        den = w @ counts
        stats[i:i + b] = np.divide(w @ sums, den, out=np.full(b, np.nan), where=den > 0)
    a = (1 - level) / 2
    lo, hi = np.nanquantile(stats, [a, 1 - a])
    return float(lo), float(hi)


def macro_accuracy(hits, groups, *, chance: float | None = None, n_boot: int = DEFAULT_BOOTSTRAP,
                   seed: int = 0, level: float = 0.95) -> dict:
    """The mean of per-group accuracies (a benchmark's "macro" score), as `accuracy`'s dict plus
    "groups". The bootstrap resamples trials within each group (the groups are the benchmark's
    fixed categories, so each keeps its size); "clusters" is the number of trials resampled."""
    hits = np.asarray(hits, dtype=np.float64)
    groups = np.asarray(groups)
    names = list(dict.fromkeys(groups.tolist()))
    out = {"acc": float("nan"), "lo": float("nan"), "hi": float("nan"), "n": int(hits.size),
           "clusters": int(hits.size), "chance": chance, "groups": len(names)}
    if not names:
        return out
    members = [hits[groups == g] for g in names]
    out["acc"] = float(np.mean([m.mean() for m in members]))
    if n_boot <= 0 or hits.size < 2:
        out["lo"] = out["hi"] = out["acc"]
        return out
    rng = np.random.default_rng(seed)
    stats = np.zeros(n_boot)
    for m in members:  # each group's bootstrap mean, drawn with its own size
        w = rng.multinomial(m.size, np.full(m.size, 1.0 / m.size), size=n_boot)
        stats += (w @ m) / m.size
    stats /= len(members)
    a = (1 - level) / 2
    out["lo"], out["hi"] = (float(v) for v in np.quantile(stats, [a, 1 - a]))
    return out


def mean_with_interval(values, clusters=None, **kw) -> dict:
    """The same summary for a real-valued measurement (e.g. attention mass)."""
    out = accuracy(values, clusters, **kw)
    out["mean"] = out.pop("acc")
    return out
