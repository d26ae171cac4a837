"""Competence gates: can a model do the task at all, before any of its biases is read?

On the held-out test set, with the dataset's own captions of one template:
- retrieval: each image against every caption of every test image; R@1 and R@5 (one of
  the image's own captions is ranked first / in the top five) and set R@1 (the first
  caption names exactly the image's set of objects, in any order);
- swap matching: the image against its caption and against the same caption with one
  object replaced by an object the scene does not hold, once for the largest object
  and once for a small one (chance 50 %);
- presence: the share of TOR queries (captions against single-object texts) and IOR
  queries (images against single-object renders) whose top-1 is an object present in
  the query (chance n / set size).
Every figure carries its chance level and a bootstrap interval over images
(`comco.probes.stats.accuracy`). A query whose top-1 is decided by rounding (a candidate that
would count differently scores within float resolution of the best: retrieval.near_ties) is
counted in the figure's "ties" and as a miss: a gate asks whether the model can make the
decision, and a tie is none (the bias shares instead leave ties out: retrieval).
A number from a model below its gates is not a result: the lab lists it and leaves it out
of every fit.

`ior_present_only` is the IOR form of the ComCO scripts: among the n present objects
only, which one's single render is most similar to the image.
"""

from __future__ import annotations

from math import comb

import numpy as np

from comco.probes.stats import accuracy

GATE_FIGURES = ("R@1", "R@5", "set R@1", "swap largest", "swap small", "presence TOR", "presence IOR")


def _ranks(records: list[dict]) -> list[list[int]]:
    from comco.record import measured_ranks

    return [measured_ranks(r) for r in records]


def gate_figures(data, embedder, template_name: str = "and", *, n_boot: int, seed: int) -> dict:
    """{figure: accuracy dict (acc, lo, hi, n, clusters, chance)} for FIGURES (presence
    IOR only when the dataset has single-object renders)."""
    from comco.probes import texts
    from comco.probes.tor import gallery_texts

    template = texts.get_template(texts.template_book(data.info), template_name)
    recs = [r for r in data.records if r.get("captions", {}).get(template_name)]
    if not recs:
        return {}
    ids = [r["id"] for r in recs]
    from comco.probes.retrieval import cosine, near_ties, resolution, tie_tolerance

    dtype = resolution(embedder)

    images = embedder.images([data.image_path(r) for r in recs])
    out: dict[str, dict] = {}

    # retrieval among every caption of every test image
    caps, owner, sets = [], [], []
    for i, r in enumerate(recs):
        names = frozenset(o["name"] for o in r["objects"])
        for c in r["captions"][template_name]:
            caps.append(c)
            owner.append(i)
            sets.append(names)
    cap_emb = embedder.texts(caps)
    owner = np.array(owner)
    sim = cosine(images, cap_emb)  # float64, as every probe: ties and near-ties decided alike every run
    order = np.argsort(-sim, axis=1, kind="stable")
    n_caps = len(caps)
    own = np.bincount(owner, minlength=len(recs))
    rec_sets = [frozenset(o["name"] for o in r["objects"]) for r in recs]
    same_set = np.array([sum(s == rs for s in sets) for rs in rec_sets])  # captions naming that set
    top1 = order[:, 0]
    hit1 = owner[top1] == np.arange(len(recs))
    hit5 = (owner[order[:, :5]] == np.arange(len(recs))[:, None]).any(1)
    set_hit = np.array([sets[top1[i]] == rec_sets[i] for i in range(len(recs))])
    k5 = min(5, n_caps)
    chance5 = float(np.mean([1 - comb(n_caps - k, k5) / comb(n_caps, k5) for k in own]))
    kw = {"n_boot": n_boot}
    mine = owner[None, :] == np.arange(len(recs))[:, None]  # (images, captions): the image's own captions
    tied1 = near_ties(sim, dtype, mine)
    tied_set = near_ties(sim, dtype, np.array([[s == rs for s in sets] for rs in rec_sets]))
    out["R@1"] = _untied(hit1, tied1, ids, chance=float(np.mean(own / n_caps)), seed=seed, **kw)
    out["R@5"] = accuracy(hit5, ids, chance=chance5, seed=seed + 1, **kw)
    out["set R@1"] = _untied(set_hit, tied_set, ids, chance=float(np.mean(same_set / n_caps)), seed=seed + 2, **kw)

    # swap matching: the caption against the same caption with one object replaced
    ranks = _ranks(recs)
    pairs = {"swap largest": [], "swap small": []}  # (image row, original, replaced, id)
    for i, r in enumerate(recs):
        names = [o["name"] for o in r["objects"]]
        absent = [n for n in data.names if n not in names]
        if len(names) < 2 or not absent:
            continue
        largest = ranks[i].index(0)
        for j, mention in enumerate(r["mention_orders"]):
            ordered = [names[k] for k in mention]
            original = texts.write(template, ordered, data.object_set)
            rng = np.random.default_rng([seed, int(r.get("index", i)), j])
            small = [k for k in mention if k != largest]
            for fig, victim in (("swap largest", largest), ("swap small", small[int(rng.integers(len(small)))])):
                changed = [absent[int(rng.integers(len(absent)))] if k == victim else names[k] for k in mention]
                pairs[fig].append((i, original, texts.write(template, changed, data.object_set), r["id"]))
    for r_, fig in enumerate(pairs):
        rows = pairs[fig]
        if not rows:
            continue
        picked = np.asarray(images[[x[0] for x in rows]], dtype=np.float64)
        good = np.einsum("ij,ij->i", picked, np.asarray(embedder.texts([x[1] for x in rows]), dtype=np.float64))
        bad = np.einsum("ij,ij->i", picked, np.asarray(embedder.texts([x[2] for x in rows]), dtype=np.float64))
        tied = np.abs(good - bad) <= tie_tolerance(np.maximum(good, bad), dtype)
        out[fig] = _untied(good > bad, tied, [x[3] for x in rows], chance=0.5, seed=seed + 3 + r_, **kw)

    # presence: is the top-1 single-object text (TOR) / render (IOR) one the query holds?
    index = {n: k for k, n in enumerate(data.names)}
    gallery = embedder.texts(gallery_texts(template, data.names, data.object_set))
    tsim = cosine(cap_emb, gallery)
    top = tsim.argmax(1)
    present = [{index[n] for n in sets[c]} for c in range(n_caps)]
    hits = np.array([int(top[c]) in present[c] for c in range(n_caps)])
    held = np.zeros(tsim.shape, bool)
    for c, p in enumerate(present):
        held[c, sorted(p)] = True
    out["presence TOR"] = _untied(hits, near_ties(tsim, dtype, held), [ids[o] for o in owner],
                                  chance=float(np.mean([len(p) / len(data.names) for p in present])),
                                  seed=seed + 5, **kw)
    if data.singles:
        from comco.probes.ior import _singles_gallery

        sindex, key = _singles_gallery(data)
        usable = [i for i, r in enumerate(recs) if all(key(o) in sindex for o in r["objects"])]
        if usable:
            singles = embedder.images([data.image_path(s) for s in data.singles])
            isim = cosine(images[usable], singles)
            top = isim.argmax(1)
            want = [{sindex[key(o)] for o in recs[i]["objects"]} for i in usable]
            hits = np.array([int(t) in w for t, w in zip(top, want, strict=True)])
            held = np.zeros(isim.shape, bool)
            for k, w in enumerate(want):
                held[k, sorted(w)] = True
            out["presence IOR"] = _untied(hits, near_ties(isim, dtype, held), [ids[i] for i in usable],
                                          chance=float(np.mean([len(w) / len(singles) for w in want])),
                                          seed=seed + 6, **kw)
    return out


def _untied(hits: np.ndarray, tied: np.ndarray, clusters: list, **kw) -> dict:
    """accuracy() with the queries decided by rounding counted as misses, and counted ("ties")."""
    tied = np.asarray(tied, bool)
    return {**accuracy(np.asarray(hits, bool) & ~tied, clusters, **kw), "ties": int(tied.sum())}


def gate_passes(figures: dict, thresholds: dict[str, float]) -> tuple[bool, list[str]]:
    """(passed, the gates it failed): each thresholded figure's value must reach its threshold;
    a figure that was not measured fails its gate (near-ties count as misses: gate_figures)."""
    failed = []
    for name, lo in thresholds.items():
        f = figures.get(name)
        v = None if f is None else f.get("acc", f.get("value"))
        if v is None or (isinstance(v, float) and np.isnan(v)) or v < lo:
            failed.append(name)
    return not failed, failed


def ior_present_only(data, embedder, *, n_boot: int, seed: int) -> list[dict]:
    """Per object count: for each image, which of its own objects' single renders is most
    similar (size ranks by measured pixels; chance 1/n). Shares of all images, summing to 1."""
    from comco.probes.ior import _by_count, _singles_gallery
    from comco.probes.retrieval import cosine, near_ties, resolution, size_labels

    if not data.singles:
        return []
    sindex, key = _singles_gallery(data)
    usable = [r for r in data.records if all(key(o) in sindex for o in r["objects"])]
    if not usable:
        return []
    singles = embedder.images([data.image_path(s) for s in data.singles])
    images = embedder.images([data.image_path(r) for r in usable])
    row = {r["id"]: i for i, r in enumerate(usable)}
    groups = []
    for n, recs in _by_count(usable).items():
        best, tied = [], []
        for r in recs:
            cols = [sindex[key(o)] for o in r["objects"]]
            sims = cosine(images[row[r["id"]]][None], singles[cols])
            best.append(_ranks([r])[0][int(np.argmax(sims[0]))])
            tied.append(bool(near_ties(sims, resolution(embedder))[0]))
        best, keep = np.array(best), ~np.array(tied, bool)
        ids = [r["id"] for r, k in zip(recs, keep) if k]
        stats = [{"role": role, **accuracy(best[keep] == k, ids, chance=1.0 / n, n_boot=n_boot, seed=seed + k),
                  "ties": int((~keep).sum())}
                 for k, role in enumerate(size_labels(n))]
        groups.append({"key": f"{n} objects, present only", "n_objects": n, "queries": len(recs),
                       "ties": int((~keep).sum()), "metrics": {"present_only": stats}})
    return groups
