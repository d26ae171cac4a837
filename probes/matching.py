"""Image-text matching where the order bias helps (scenario 1) and where it hurts (2).

With L the largest object, s1..s(n-1) the others (by measured size) and A an absent
object of the set:
- scenario 1: correct "L, s1, ..., s(n-1)" vs wrong "A, s1, ..., s(n-1)" - the wrong
  caption opens with an object that is not there;
- scenario 2: correct "s1, ..., s(n-1), L" vs wrong "L, s1, ..., s(n-2), A" - the wrong
  caption opens with the salient object and hides its error at the end.
A trial is correct when the image is closer to the correct caption. Every absent object
is a distractor (or `max_distractors` drawn per image with its own seeded generator).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from comco.probes import texts
from comco.probes.embed import named
from comco.probes.stats import accuracy
from comco.record import measured_ranks

SCENARIOS = ("scenario 1", "scenario 2")


def scenario_captions(by_size: list[str], absent: str) -> dict[str, tuple[list[str], list[str]]]:
    large, small = by_size[0], by_size[1:]
    return {
        "scenario 1": ([large, *small], [absent, *small]),
        "scenario 2": ([*small, large], [large, *small[:-1], absent]),
    }


def matching_trials(data, template, *, max_distractors: int | None, seed: int):
    """(n -> scenario -> [(image index, correct caption id, wrong caption id, record id)], captions by id)."""
    trials = defaultdict(lambda: {s: [] for s in SCENARIOS})
    caps: dict[str, int] = {}

    def cap_id(names):
        return caps.setdefault(texts.write(template, names, data.object_set), len(caps))

    for i, rec in enumerate(data.records):
        ranks = measured_ranks(rec)
        by_size = [o["name"] for _, o in sorted(zip(ranks, rec["objects"]), key=lambda t: t[0])]
        absent = [n for n in data.names if n not in set(by_size)]
        if max_distractors is not None and len(absent) > max_distractors:
            rng = np.random.default_rng([seed, rec.get("index", i)])
            absent = [absent[j] for j in sorted(rng.choice(len(absent), max_distractors, replace=False))]
        for a in absent:
            for s, (good, bad) in scenario_captions(by_size, a).items():
                trials[len(by_size)][s].append((i, cap_id(good), cap_id(bad), rec["id"]))
    return trials, list(caps)


def scenario_groups(trials, scores: dict, key: str, template, *, n_boot: int, seed: int) -> list[dict]:
    """The groups of the matching table: per object count, each metric's accuracy per scenario.

    Args:
        trials: matching_trials' first value.
        scores: metric -> function of a (T, 3) array of trials (image, correct, wrong) to the
            (correct, wrong) score arrays; a trial is right when correct > wrong (ties fail).
        key: what follows "TEMPLATE, N objects" in the group's key ("" for none)."""
    groups = []
    for n in sorted(trials):
        metrics = {}
        for metric, score in scores.items():
            metric_stats = []
            for r, s in enumerate(SCENARIOS):
                t = np.array([x[:3] for x in trials[n][s]], dtype=np.int64).reshape(-1, 3)
                good, bad = score(t)
                stats = accuracy(good > bad, [x[3] for x in trials[n][s]], chance=0.5, n_boot=n_boot, seed=seed + r)
                metric_stats.append({"role": s, **stats})
            metrics[metric] = metric_stats
        groups.append({"key": f"{template.name}, {n} objects{key}", "template": template.name, "n_objects": n,
                       "queries": len(trials[n][SCENARIOS[0]]), "metrics": metrics})
    return groups


def matching(data, embedder, template, *, max_distractors: int | None, n_boot: int, seed: int) -> list[dict]:
    with named(embedder, "scene images"):
        images = embedder.images([data.image_path(r) for r in data.records])
    trials, caps = matching_trials(data, template, max_distractors=max_distractors, seed=seed)
    with named(embedder, f"right and wrong captions (template {template.name})"):
        text_emb = embedder.texts(caps)

    def cosine(t):
        return (np.einsum("ij,ij->i", images[t[:, 0]], text_emb[t[:, 1]]),
                np.einsum("ij,ij->i", images[t[:, 0]], text_emb[t[:, 2]]))

    return scenario_groups(trials, {"accuracy": cosine}, "", template, n_boot=n_boot, seed=seed)
