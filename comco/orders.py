"""Mention orders: which object a caption names first, second, ...

By default the order is independent of size and slot: each record carries a set of
orders in which every object is at every position equally often (all permutations
for n <= 3, cyclic shifts of a random permutation, a Latin square, for more), so
over a dataset the largest object is first exactly 1/n of the time. The lab's
variable, `order_bias` p, puts the largest object first with probability p.
"""

from __future__ import annotations

import itertools

import numpy as np

POLICIES = ("random", "size-desc", "size-asc", "left-to-right")


def balanced_orders(rng: np.random.Generator, n: int, k: int) -> list[list[int]]:
    if n <= 3:
        perms = [list(p) for p in itertools.permutations(range(n))]
        rng.shuffle(perms)
        return perms
    base = [int(i) for i in rng.permutation(n)]
    shifts = [base[s:] + base[:s] for s in range(n)]
    if k <= n:
        pick = rng.choice(n, size=k, replace=False)
        return [shifts[int(i)] for i in pick]
    extra = [[int(i) for i in rng.permutation(n)] for _ in range(k - n)]
    return shifts + extra


def mention_orders(rng: np.random.Generator, size_ranks: list[int], xs: list[float], *,
                   policy: str = "random", k: int = 4, order_bias: float | None = None) -> list[list[int]]:
    """Orders as lists of object indices, first-mentioned first.

    size_ranks[i] is object i's size rank (0 = largest); xs[i] its image x (for
    left-to-right).
    """
    n = len(size_ranks)
    if policy == "size-desc":
        return [sorted(range(n), key=lambda i: size_ranks[i])]
    if policy == "size-asc":
        return [sorted(range(n), key=lambda i: -size_ranks[i])]
    if policy == "left-to-right":
        return [sorted(range(n), key=lambda i: xs[i])]
    if policy != "random":
        raise ValueError(f"unknown order policy {policy}")
    orders = balanced_orders(rng, n, k)
    if order_bias:
        largest = size_ranks.index(0)
        for j in range(len(orders)):
            if rng.random() < order_bias:
                rest = [i for i in orders[j] if i != largest]
                rng.shuffle(rest)
                orders[j] = [largest] + [int(i) for i in rest]
    return orders
