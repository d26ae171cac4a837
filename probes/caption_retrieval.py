"""Caption-to-caption retrieval: the competence gate of a text tower trained without images
(comco.train.simcse), beside presence TOR.

Each caption of one template is compared with every other caption of the test set; a hit
is a nearest caption that names exactly the same set of objects (the same scene in another
mention order, or another scene of the same objects). A caption is never compared with a
copy of its own text: where an order bias fixes the first mention, a scene's mention orders
repeat (at p = 1 a 3-object scene's six orders are two texts), and a copy would be a free
hit. Chance per caption is the share of the other texts that name its set. Captions of a
set with no other text are left out.
"""

from __future__ import annotations

import numpy as np

from comco.probes.retrieval import cosine
from comco.probes.stats import accuracy


def caption_sets(data, template_name: str) -> tuple[list[str], list[frozenset], list[str]]:
    """(captions, the set of objects each names, the id of its scene) for one template."""
    caps, sets, ids = [], [], []
    for r in data.records:
        names = frozenset(o["name"] for o in r["objects"])
        for c in r.get("captions", {}).get(template_name) or []:
            caps.append(c)
            sets.append(names)
            ids.append(r["id"])
    return caps, sets, ids


def caption_retrieval(data, embedder, template_name: str = "and", *, n_boot: int, seed: int) -> dict:
    """Accuracy dict (acc, lo, hi, n, clusters, chance) of caption-to-caption set R@1,
    resampled over scenes.

    Args:
        data: a probe dataset (comco.probes.open_dataset). embedder: comco.probes.Embedder.
        template_name: the caption template. n_boot, seed: the bootstrap.
    """
    caps, sets, ids = caption_sets(data, template_name)
    if len(caps) < 2:
        return accuracy([], chance=None, n_boot=0)
    sim = cosine(embedder.texts(caps), embedder.texts(caps))
    copy = np.array([[a == b for b in caps] for a in caps])  # itself and any identical text
    sim[copy] = -np.inf
    same = np.array([[a == b for b in sets] for a in sets]) & ~copy
    usable = same.any(1)
    top = sim.argmax(1)
    hits = same[np.arange(len(caps)), top][usable]
    others = (~copy).sum(1)
    chance = float(np.mean(same.sum(1)[usable] / others[usable])) if usable.any() else None
    return accuracy(hits, [i for i, u in zip(ids, usable, strict=True) if u], chance=chance, n_boot=n_boot,
                    seed=seed)
