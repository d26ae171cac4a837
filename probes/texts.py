"""Captions the probes write themselves: single-object gallery texts, text-only tuples,
matching captions. They use the dataset's caption templates (comco.plan.captions), so a
probe caption reads exactly like a dataset caption of the same template.
"""

from __future__ import annotations

import numpy as np

from comco.errors import UserError


def template_book(info: dict | None = None):
    from comco.plan import captions

    config = (info or {}).get("config") or {}
    extra, text = config.get("templates"), config.get("templates_text")
    try:
        return captions.load_templates(extra, text=text)
    except UserError:
        return captions.load_templates()  # the dataset's template file moved; built-ins still apply


def get_template(book, name: str):
    if name not in book.templates:
        raise UserError(f"unknown caption template '{name}'; known: {', '.join(book.templates)}")
    return book.templates[name]


def write(template, names: list[str], object_set, colors: list[str | None] | None = None) -> str:
    """The template's caption naming `names` in this order (list form; a long template's summary)."""
    from comco.plan import captions

    objs = [{"name": n, "color": c} for n, c in zip(names, colors or [None] * len(names))]
    if object_set is None:
        raise UserError("captions with articles need the dataset's object set; its manifest did not load")
    return captions.write_list_caption(template, objs, object_set)


def balanced_tuples(n_names: int, k: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Ordered k-tuples of distinct indices where every index is equally often at each position.

    Cyclic windows over a fresh random permutation: each round of n_names tuples puts
    every name once at every position (a Latin rectangle), with no index-order confound.
    `count` is rounded up to whole rounds so the balance is exact.
    """
    if k > n_names:
        raise UserError(f"cannot name {k} distinct objects from a set of {n_names}")
    rounds = max(1, -(-count // n_names))
    out = []
    for _ in range(rounds):
        perm = rng.permutation(n_names)
        for j in range(n_names):
            out.append([perm[(j + p) % n_names] for p in range(k)])
    return np.asarray(out, dtype=np.int64)
