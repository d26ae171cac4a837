"""Half-truths: does the image prefer its correct caption to the same caption plus one wrong
detail? ("CS-CLIP", arXiv 2602.23906: CLIP prefers the correct one only 40.6 % of the time
on COCO, 32.9 % when the detail is a relation.) An encoder that reads a caption as a bag of
mostly-first words scores the longer, half-true caption as well as or better than the true one.

The correct caption names the image's objects in the record's first mention order, colour-
free, with the probe's template ("a photo of a cube, a cone and a sphere"). Each kind of
wrong detail changes nothing else:
- absent object: an object of the set the image does not hold, named last;
- wrong colour (colour datasets): a colour the object does not have, put before its name;
- wrong relation: the relation clause of the first two mentioned objects with the opposite
  relation ("..., the cube is behind the cone" where it stands in front), from their slots
  and depths (the `relations_depth` template);
- wrong count: "two" of an object the image holds once ("two cubes").
The object that takes a wrong colour or count and the absent object are drawn per image with
its own seeded generator. A trial is won when the image is strictly closer to the correct
caption (a tie, within float resolution: retrieval.tie_tolerance, is lost); chance is 50 %.
The bootstrap resamples images.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np

from comco.plan import captions
from comco.probes.embed import named
from comco.probes.report import ALL_COUNTS
from comco.probes.retrieval import resolution, tie_tolerance
from comco.probes.stats import accuracy

KINDS = ("absent object", "wrong colour", "wrong relation", "wrong count")
METRIC = "prefers the correct caption"
RELATION_TEMPLATE = "relations_depth"  # left/right from slots, in front of/behind from depth
OPPOSITE = {"left": "right", "right": "left", "above": "below", "below": "above", "front": "behind", "behind": "front"}
CLAUSE_JOIN = ", "  # between the correct caption and the wrong relation clause
WRONG_COUNT = "2"  # [words.count]'s key of the count a wrong-count caption gives


def half_truths(record: dict, template, book, object_set, names: list[str], rng: np.random.Generator,
                colors: bool) -> tuple[str, dict[str, str]]:
    """(correct caption, kind -> the caption with that wrong detail) for one record."""
    objs = [record["objects"][i] for i in record["mention_orders"][0]]
    phrases = [captions.object_phrase(template, {"name": o["name"]}, object_set) for o in objs]
    correct = captions.join_caption(template, phrases)
    held = {o["name"] for o in objs}
    absent = [n for n in names if n not in held]
    out = {}
    if absent:
        extra = captions.object_phrase(template, {"name": absent[int(rng.integers(len(absent)))]}, object_set)
        out["absent object"] = captions.join_caption(template, [*phrases, extra])
    if colors:
        k = int(rng.integers(len(objs)))
        spec = object_set.get(objs[k]["name"])
        others = [c for c in spec.allowed_colors(object_set.palette) if c != objs[k].get("color")]
        if others:
            pattern = template.object.replace("{name}", "{color} {name}")
            colour = others[int(rng.integers(len(others)))]
            wrong = captions.object_phrase(replace(template, object=pattern), {"name": objs[k]["name"],
                                                                                "color": colour}, object_set)
            out["wrong colour"] = captions.join_caption(template, [*phrases[:k], wrong, *phrases[k + 1:]])
    if len(objs) >= 2 and RELATION_TEMPLATE in book.templates:
        t, (i, j) = book.templates[RELATION_TEMPLATE], record["mention_orders"][0][:2]
        key = OPPOSITE[captions.relation_of(t, record, i, j)]
        out["wrong relation"] = correct + CLAUSE_JOIN + captions.relation_clause(t, record, i, j, book, object_set,
                                                                                   key=key)
    if WRONG_COUNT in book.count_words:
        k = int(rng.integers(len(objs)))
        two = f"{book.count_words[WRONG_COUNT]} {object_set.get(objs[k]['name']).plural}"
        out["wrong count"] = captions.join_caption(template, [*phrases[:k], two, *phrases[k + 1:]])
    return correct, out


HALF_TRUTH_METRIC = METRIC  # the name other layers read the share under


def half_truth_groups(data, embedder, template_name: str, *, n_boot: int, seed: int) -> list[dict]:
    """half_truth with the template given by its name in the dataset's template book."""
    from comco.probes import texts

    template = texts.get_template(texts.template_book(data.info), template_name)
    return half_truth(data, embedder, template, n_boot=n_boot, seed=seed)


def half_truth(data, embedder, template, *, n_boot: int, seed: int) -> list[dict]:
    """One group per object count and one over all counts: the share of images preferring the correct
    caption, per kind of wrong detail."""
    from comco.probes import texts

    book = texts.template_book(data.info)
    colors = data.has_colors
    recs, trials, caps, skipped = [], [], {}, 0
    for i, rec in enumerate(data.records):
        if len({o["name"] for o in rec["objects"]}) != len(rec["objects"]) or not rec.get("mention_orders"):
            skipped += 1  # an object held more than once: "a cube" would already be a half-truth
            continue
        rng = np.random.default_rng([seed, rec.get("index", i)])
        correct, wrong = half_truths(rec, template, book, data.object_set, data.names, rng, colors)
        for kind, text in wrong.items():
            trials.append((len(recs), kind, caps.setdefault(correct, len(caps)), caps.setdefault(text, len(caps))))
        recs.append(rec)
    with named(embedder, "scene images"):
        images = embedder.images([data.image_path(r) for r in recs])
    with named(embedder, f"correct and half-true captions (template {template.name})"):
        text_emb = embedder.texts(list(caps))
    by_count = defaultdict(list)
    for t in trials:
        by_count[len(recs[t[0]]["objects"])].append(t)
    groups = []
    for n, rows in [*sorted(by_count.items()), (None, trials)]:
        if n is None and len(by_count) < 2:
            continue  # one object count: its group is the whole set
        metric, ties = [], 0
        for r, kind in enumerate(KINDS):
            t = np.array([(x[0], x[2], x[3]) for x in rows if x[1] == kind], dtype=np.int64).reshape(-1, 3)
            if not len(t):
                continue
            good = np.einsum("ij,ij->i", images[t[:, 0]], text_emb[t[:, 1]])
            bad = np.einsum("ij,ij->i", images[t[:, 0]], text_emb[t[:, 2]])
            # a difference within float resolution is a tie, and a tie is no decision (a miss)
            tied = np.abs(good.astype(np.float64) - bad) <= tie_tolerance(np.maximum(good, bad), resolution(embedder))
            ties += int(tied.sum())
            stat = accuracy((good > bad) & ~tied, [recs[k]["id"] for k in t[:, 0]], chance=0.5, n_boot=n_boot,
                            seed=seed + r)
            metric.append({"role": kind, **stat})
        where = ALL_COUNTS if n is None else f"{n} objects"
        groups.append({"key": f"{template.name}, {where}", "template": template.name, "n_objects": n,
                       "queries": len({x[0] for x in rows}), "skipped": skipped, "ties": ties,
                       "metrics": {METRIC: metric}})
    return groups
