"""Size classes in text (ComCO's claim 1, Fig. 4a): does a caption that opens with a large
object keep the text encoder's attention on its first mention more than one that opens with
a small object?

The classes are the manifest's `size_class`, set from real-world sizes with the paper's
thresholds (small: shorter than a school bag, 0.5 m; large: longer than a car, 4.6 m;
medium between). Two constructions of an n-object caption, each with a large-first and a
small-first group:
- `paper`, as the paper describes it: the opening object of the class, then n - 1 medium ones;
- `script`, as the authors' script builds it: the opening object of the class, n - 2 medium
  ones, and an object of the other class last (so a small-first caption ends with a large one).
TOR then asks which single name each caption is nearest; the first-object accuracy of a
group is the share of its captions whose nearest name is the opening object.
"""

from __future__ import annotations

import numpy as np

from comco.probes import texts
from comco.probes.retrieval import cosine, role_retrieval
from comco.probes.tor import GALLERIES, ORDINALS, gallery_texts

CLASSES = ("large", "small")
VARIANTS = ("paper", "script")


def class_members(names: list[str], object_set) -> dict[str, list[int]]:
    """size class -> indices into `names`."""
    out = {"small": [], "medium": [], "large": []}
    for i, n in enumerate(names):
        out[object_set.get(n).size_class].append(i)
    return out


def missing_classes(names: list[str], object_set, counts: list[int]) -> str | None:
    """Why the probe cannot run on this set (None when it can)."""
    m = class_members(names, object_set)
    lacking = [c for c in ("large", "small") if not m[c]]
    if lacking:
        return f"no {' or '.join(lacking)}-class object in set {object_set.name} (size_class in its manifest)"
    if len(m["medium"]) < max(counts) - 1:
        return f"{len(m['medium'])} medium-class objects, {max(counts) - 1} needed for {max(counts)}-object captions"
    return None


def class_tuples(members: dict[str, list[int]], variant: str, first: str, n: int, count: int,
                 rng: np.random.Generator) -> np.ndarray:
    """`count` ordered n-tuples of name indices built the `variant` way, opening with class `first`."""
    last = "small" if first == "large" else "large"
    middle = n - 1 if variant == "paper" else n - 2
    rows = []
    for _ in range(count):
        row = [int(rng.choice(members[first]))]
        row += rng.choice(members["medium"], size=middle, replace=False).tolist()
        if variant == "script":
            row.append(int(rng.choice(members[last])))
        rows.append(row)
    return np.array(rows, dtype=int)


def size_class_tor(names: list[str], object_set, embedder, template, counts: list[int], *,
                   tuples: int, n_boot: int, seed: int, gallery: str = "names") -> list[dict]:
    """One group per construction, opening class and object count, with TOR's position shares."""
    members = class_members(names, object_set)
    gallery_emb = embedder.texts(gallery_texts(template, names, object_set, gallery))
    groups = []
    for v, variant in enumerate(VARIANTS):
        for n in counts:
            for c, first in enumerate(CLASSES):
                rng = np.random.default_rng([seed, n, v, c])
                tup = class_tuples(members, variant, first, n, tuples, rng)
                caps = [texts.write(template, [names[i] for i in t], object_set) for t in tup]
                res = role_retrieval(cosine(embedder.texts(caps), gallery_emb), tup, ORDINALS[:n],
                                     np.arange(len(tup)), n_boot=n_boot, seed=seed)
                groups.append({"key": f"size classes ({variant}): {first} first, {n} objects, {GALLERIES[gallery]}",
                               "variant": variant, "first_class": first, "template": template.name,
                               "n_objects": n, "tor_gallery": gallery, "skipped": 0, **res})
    return groups
