"""IOR (image vs single-object renders) and I2TOR (image vs object-name texts).

Roles are size ranks from measured pixels (largest first) and, for IOR, separately
slot x {large, small}: the largest object usually sits in a known slot, so a slot
view shows whether a "size" effect is really a position effect.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from comco.probes import texts
from comco.probes.embed import named
from comco.probes.retrieval import cosine, resolution, role_retrieval, size_labels
from comco.record import measured_ranks

SLOT_ORDER = ["M", "UL", "UR", "BL", "BR"]


def _singles_gallery(data):
    """Gallery keys and a key function: (name, colour) when the singles are per colour."""
    by_color = any(s.get("color") for s in data.singles)
    keys = [(s["name"], s.get("color")) if by_color else s["name"] for s in data.singles]
    index = {k: i for i, k in enumerate(keys)}
    return index, (lambda o: (o["name"], o.get("color")) if by_color else o["name"])


def _by_count(records):
    groups = defaultdict(list)
    for r in records:
        groups[len(r["objects"])].append(r)
    return dict(sorted(groups.items()))


def ior(data, embedder, *, n_boot: int, seed: int) -> tuple[list[dict], list[dict]]:
    """(groups by size rank, groups by slot)."""
    index, key = _singles_gallery(data)
    with named(embedder, "single-object renders (the gallery)"):
        gallery = embedder.images([data.image_path(s) for s in data.singles])
    usable = [r for r in data.records if all(key(o) in index for o in r["objects"])]
    skipped = len(data.records) - len(usable)
    with named(embedder, "scene images"):
        images = embedder.images([data.image_path(r) for r in usable])
    row = {r["id"]: i for i, r in enumerate(usable)}
    by_size, by_slot = [], []
    for n, recs in _by_count(usable).items():
        sim = cosine(images[[row[r["id"]] for r in recs]], gallery)
        ids = [r["id"] for r in recs]
        targets = np.array([_rank_targets(r, lambda o: index[key(o)]) for r in recs])
        res = role_retrieval(sim, targets, size_labels(n), ids, n_boot=n_boot, seed=seed, dtype=resolution(embedder))
        by_size.append({"key": f"{n} objects", "n_objects": n, "skipped": skipped, **res})
        slots = [s for s in SLOT_ORDER if any(o["slot"] == s for r in recs for o in r["objects"])]
        roles = [f"{s}/{size}" for s in slots for size in ("large", "small")]
        targets = np.full((len(recs), len(roles)), -1)
        for i, r in enumerate(recs):
            for o, rank in zip(r["objects"], measured_ranks(r)):
                targets[i, roles.index(f"{o['slot']}/{'large' if rank == 0 else 'small'}")] = index[key(o)]
        res = role_retrieval(sim, targets, roles, ids, n_boot=n_boot, seed=seed, dtype=resolution(embedder))
        by_slot.append({"key": f"{n} objects, by slot", "n_objects": n, "skipped": skipped, **res})
    return by_size, by_slot


def i2tor(data, embedder, template, *, n_boot: int, seed: int) -> list[dict]:
    index = {n: i for i, n in enumerate(data.names)}
    with named(embedder, f"object-name texts (template {template.name})"):
        gallery = embedder.texts([texts.write(template, [n], data.object_set) for n in data.names])
    with named(embedder, "scene images"):
        images = embedder.images([data.image_path(r) for r in data.records])
    row = {r["id"]: i for i, r in enumerate(data.records)}
    groups = []
    for n, recs in _by_count(data.records).items():
        sim = cosine(images[[row[r["id"]] for r in recs]], gallery)
        targets = np.array([_rank_targets(r, lambda o: index[o["name"]]) for r in recs])
        res = role_retrieval(sim, targets, size_labels(n), [r["id"] for r in recs], n_boot=n_boot, seed=seed,
                             dtype=resolution(embedder))
        groups.append({"key": f"{template.name}, {n} objects", "template": template.name,
                       "n_objects": n, "skipped": 0, **res})
    return groups


def _rank_targets(record: dict, to_index) -> list[int]:
    out = [0] * len(record["objects"])
    for o, rank in zip(record["objects"], measured_ranks(record)):
        out[rank] = to_index(o)
    return out
