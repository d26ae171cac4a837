"""Mention orders: which object a caption names first, second, ...

By default the order is independent of size and slot: each record carries a set of
orders in which every object is at every position equally often (all permutations
for n <= 3, cyclic shifts of a random permutation, a Latin square, for more), so
over a dataset the largest object is first exactly 1/n of the time. The lab's
variable, `order_bias` p, puts the largest object first with probability p.
"""

from __future__ import annotations

import itertools
import math

POLICIES = ("random", "size-desc", "size-asc", "left-to-right")


def balanced_orders(u: list[float], n: int, k: int) -> list[list[int]]:
    """K orders in which each object is at each position equally often, from uniform
    numbers u (at least n * max(k, n) + n of them; see `draws_needed`)."""
    if n <= 3:
        perms = list(itertools.permutations(range(n)))
        return [list(p) for _, p in sorted(zip(u, perms))]  # all of them, shuffled
    base = sorted(range(n), key=u.__getitem__)  # a uniform permutation
    shifts = [base[s:] + base[:s] for s in range(n)]
    if k <= n:
        return [shifts[i] for i in _sample(u[n:n + k], n)]
    return shifts + [_permutation(u[n * (j + 1):n * (j + 2)]) for j in range(k - n)]


def order_count(n: int, k: int) -> int:
    """How many orders a record of n objects carries."""
    return math.factorial(n) if n <= 3 else k


def draws_needed(n: int, k: int) -> int:
    """Uniform numbers one record's orders take: the balanced orders, then a coin and
    n keys per order for order_bias."""
    return n * max(k, n) + n + order_count(n, k) * (n + 1)


def mention_orders(u: list[float], size_ranks: list[int], xs: list[float], *,
                   policy: str = "random", k: int = 4, order_bias: float | None = None) -> list[list[int]]:
    """Orders as lists of object indices, first-mentioned first.

    u: uniform numbers, at least `draws_needed(n, k)`, used in a fixed layout, so
    order_bias changes which orders are biased, never the others. size_ranks[i] is
    object i's size rank (0 = largest); xs[i] its image x (for left-to-right).
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
    biased = u[n * max(k, n) + n:]
    orders = balanced_orders(u, n, k)
    if order_bias:
        largest = size_ranks.index(0)
        for j in range(len(orders)):
            coin, keys = biased[j * (n + 1)], biased[j * (n + 1) + 1:(j + 1) * (n + 1)]
            if coin < order_bias:
                rest = [i for i in orders[j] if i != largest]
                orders[j] = [largest] + [rest[i] for i in _permutation(keys[:len(rest)])]
    return orders


def _permutation(keys: list[float]) -> list[int]:
    """The permutation that sorts uniform keys: uniform over all orders."""
    return sorted(range(len(keys)), key=keys.__getitem__)


def _sample(u: list[float], n: int) -> list[int]:
    """len(u) distinct indices of range(n), uniformly (the first steps of Fisher-Yates)."""
    pool = list(range(n))
    for i, x in enumerate(u):
        j = i + min(int(x * (n - i)), n - i - 1)
        pool[i], pool[j] = pool[j], pool[i]
    return pool[:len(u)]
