"""The pair probe: Winoground's three scores on comco's one-factor counterfactual pairs.

For a base image I0 with caption C0 and its variant I1 with caption C1 (the captions of the
template that names the factor, see comco.data.pairing), with s(I, C) the cosine similarity:
- text score: each image prefers its own caption, s(I0, C0) > s(I0, C1) and s(I1, C1) > s(I1, C0);
- image score: each caption prefers its own image, s(I0, C0) > s(I1, C0) and s(I1, C1) > s(I0, C1);
- group score: both. Ties fail (strict >, as Winoground's code compares);
- matching score (Test-Time Matching's group matching, arXiv 2510.07632): the right pairing of the
  2x2 group scores more in total than the swapped one, s(I0, C0) + s(I1, C1) > s(I0, C1) + s(I1, C0).
With four independent scores chance is 1/4, 1/4, 1/6 and 1/2.
`remove` and `add` are scored one way, as SugarCrepe's export keeps them: a caption that leaves an
object out is not false for the image that holds it, so only the comparisons against the caption
that is false (remove: the base's for the variant image; add: the variant's for the base image)
count: text = that image prefers its own caption, image = that caption prefers its own image (chance
1/2, 1/2, and 1/3 for both, the shared loser being the smallest of three). Every caption order of a pair is a
trial; the bootstrap resamples pairs. The swap-size factor is also split by whether the
variant's caption names its (new) largest object first: the order-size interaction ComCO proposes.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from comco.data.pairing import FACTOR_TEMPLATES, FACTORS, ONE_WAY, find_pairs, names_largest_first, pair_captions
from comco.errors import UserError
from comco.probes.report import ALL_COUNTS
from comco.probes.stats import accuracy

ROLES = ("text", "image", "group", "matching")
CHANCE = {"text": 0.25, "image": 0.25, "group": 1 / 6, "matching": 0.5}
CHANCE_ONE_WAY = {"text": 0.5, "image": 0.5, "group": 1 / 3, "matching": 0.5}
SIDES = {"base": 0, "variant": 1}
SPLIT = {True: "variant names the largest first", False: "variant names a smaller object first"}
SPLIT_FACTOR = "swap-size"
# What a group counts as left out: caption pairs with the same two texts, pairs whose records lack the
# factor's template, variants whose base record is not in the data (e.g. cut by --limit).
LEFT_OUT = ("identical", "no_captions", "orphans")


def winoground_scores(sims: np.ndarray, one_way: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """role -> 0/1 per trial, from sims[t, i, c] = similarity of image i and caption c (0 base, 1 variant).

    one_way[t] is -1 for a trial scored both ways, else the side (0, 1) of the image for which the
    other side's caption is false: only the comparisons against that caption count."""
    text = (sims[:, 0, 0] > sims[:, 0, 1]) & (sims[:, 1, 1] > sims[:, 1, 0])
    image = (sims[:, 0, 0] > sims[:, 1, 0]) & (sims[:, 1, 1] > sims[:, 0, 1])
    matching = sims[:, 0, 0] + sims[:, 1, 1] > sims[:, 0, 1] + sims[:, 1, 0]
    if one_way is not None and (one := one_way >= 0).any():
        t, x = np.nonzero(one)[0], one_way[one]
        y = 1 - x
        text[t] = sims[t, x, x] > sims[t, x, y]  # the image prefers its own caption to the false one
        image[t] = sims[t, y, y] > sims[t, x, y]  # the false caption prefers its own image
    return {"text": text, "image": image, "group": text & image, "matching": matching}


def one_way_side(factor: str) -> int:
    """-1 for a factor scored both ways, else the side of the image its partner's caption is false for."""
    return SIDES[ONE_WAY[factor][1]] if factor in ONE_WAY else -1


def pair_trials(data) -> tuple[list[dict], dict]:
    """The trials (one per pair and caption order) and what was left out, counted."""
    pairs, orphans = find_pairs(data.records)
    left = {k: Counter() for k in LEFT_OUT}  # (factor, object count) -> how many
    for r in orphans:
        left["orphans"][(r["pair"]["factor"], len(r["objects"]))] += 1
    trials = []
    for p in pairs:
        caps, identical = pair_captions(p)
        left["identical"][(p.factor, p.n_objects)] += identical
        if not caps and not identical:
            left["no_captions"][(p.factor, p.n_objects)] += 1
        for c in caps:
            trials.append({"pair": p, "k": c.k, "captions": (c.base, c.variant),
                           "largest_first": names_largest_first(p.variant, c.k)})
    return trials, left


def pairs_probe(data, embedder, *, n_boot: int, seed: int) -> list[dict]:
    """Groups per factor and object count (and all counts together), each with the three scores;
    swap-size adds the two name-first splits. A dataset whose pairs have no caption of their
    factor's template is a UserError."""
    trials, left = pair_trials(data)
    if not trials:
        wanted = ", ".join(f"{f}: {t}" for f, t in FACTOR_TEMPLATES.items())
        raise UserError(f"no pair of {data.root} has two different captions from the template that names its "
                        f"factor ({wanted}); plan the pairs with those caption templates")
    paths = list(dict.fromkeys(data.image_path(r) for t in trials for r in (t["pair"].base, t["pair"].variant)))
    texts = list(dict.fromkeys(c for t in trials for c in t["captions"]))
    image_emb = embedder.images(paths)
    text_emb = embedder.texts(texts)
    pi, ti = {p: i for i, p in enumerate(paths)}, {c: i for i, c in enumerate(texts)}
    img = np.array([[pi[data.image_path(t["pair"].base)], pi[data.image_path(t["pair"].variant)]] for t in trials])
    cap = np.array([[ti[t["captions"][0]], ti[t["captions"][1]]] for t in trials])
    sims = np.einsum("tid,tcd->tic", image_emb[img], text_emb[cap])
    scores = winoground_scores(sims, np.array([one_way_side(t["pair"].factor) for t in trials]))
    groups = []
    factors = [f for f in FACTORS if any(t["pair"].factor == f for t in trials)]
    factors += sorted({t["pair"].factor for t in trials} - set(factors))  # a factor this code does not know
    for factor in factors:
        at = [j for j, t in enumerate(trials) if t["pair"].factor == factor]
        counts = sorted({trials[j]["pair"].n_objects for j in at})
        for n in [*counts, None] if len(counts) > 1 else counts:
            sel = [j for j in at if n is None or trials[j]["pair"].n_objects == n]
            groups.append(_group(factor, n, sel, trials, scores, left, n_boot=n_boot, seed=seed))
    return groups


def _stats(sel: list[int], trials, scores, *, n_boot: int, seed: int) -> list[dict]:
    clusters = [trials[j]["pair"].id + "/" + trials[j]["pair"].factor for j in sel]
    chance = CHANCE_ONE_WAY if sel and trials[sel[0]]["pair"].factor in ONE_WAY else CHANCE
    return [{"role": r, **accuracy(scores[r][sel], clusters, chance=chance[r], n_boot=n_boot, seed=seed + i)}
            for i, r in enumerate(ROLES)]


def _group(factor, n, sel, trials, scores, left, *, n_boot, seed) -> dict:
    metrics = {"scores": _stats(sel, trials, scores, n_boot=n_boot, seed=seed)}
    if factor == SPLIT_FACTOR:
        for first, name in SPLIT.items():
            part = [j for j in sel if trials[j]["largest_first"] == first]
            metrics[name] = _stats(part, trials, scores, n_boot=n_boot, seed=seed)
    pairs = {(trials[j]["pair"].id, factor) for j in sel}
    way = ", scored one way" if factor in ONE_WAY else ""
    key = f"{factor} ({FACTOR_TEMPLATES.get(factor, '?')} captions{way}), " + \
        (f"{n} objects" if n is not None else ALL_COUNTS)
    return {"key": key, "factor": factor, "template": FACTOR_TEMPLATES.get(factor), "n_objects": n,
            "scored": "one way" if factor in ONE_WAY else "both ways",
            "queries": len(sel), "pairs": len(pairs),
            **{k: sum(v for (f, m), v in left[k].items() if f == factor and (n is None or m == n)) for k in LEFT_OUT},
            "metrics": metrics}
