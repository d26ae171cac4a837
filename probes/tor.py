"""TOR: text-based object retrieval, per mention position.

A multi-object caption is compared with one single-object text per name of the set;
the most similar one is "retrieved". Positions come from the record's mention
orders, and every caption is checked, by whole-word matching, to name its objects in
that order (a caption that does not is counted in `skipped`, never scored).

The gallery is the bare object names by default, as the ComCO scripts build it (so the
numbers sit beside the published rows); `gallery="template"` writes each name with the
query's template instead ("a photo of a dog."). Every group's key names the choice.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from comco.probes import texts
from comco.probes.embed import named
from comco.probes.retrieval import ORDINALS, cosine, resolution, role_retrieval
from comco.probes.words import first_sentence, mention_sequence

GALLERIES = {"names": "bare-name gallery", "template": "template gallery"}


def check_gallery(gallery: str) -> None:
    """Refuse an unknown TOR gallery kind.

    Args:
        gallery: "names" (bare names, ComCO's protocol) or "template" (the query's template)."""
    from comco.errors import UserError

    if gallery not in GALLERIES:
        raise UserError(f"--tor-gallery {gallery}: use names (ComCO's protocol) or template")


def gallery_texts(template, names: list[str], object_set, gallery: str = "names") -> list[str]:
    """One text per name: the name itself, or the name written with `template`."""
    check_gallery(gallery)
    if gallery == "names":
        return list(names)
    return [texts.write(template, [n], object_set) for n in names]


def tor_dataset(data, embedder, template_names: list[str], *, n_boot: int, seed: int,
                gallery: str = "names") -> list[dict]:
    book = texts.template_book(data.info)
    index = {n: i for i, n in enumerate(data.names)}
    groups = []
    for tname in template_names:
        template = texts.get_template(book, tname)
        queries, targets, clusters = defaultdict(list), defaultdict(list), defaultdict(list)
        skipped = 0
        for rec in data.records:
            caps = rec.get("captions", {}).get(tname)
            if not caps:
                continue
            names = [o["name"] for o in rec["objects"]]
            for order, caption in zip(rec["mention_orders"], caps):
                ordered = [names[i] for i in order]
                text = first_sentence(caption) if template.kind == "long" else caption
                if mention_sequence(text, data.names, data.forms) != ordered:
                    skipped += 1
                    continue
                n = len(order)
                queries[n].append(caption)
                targets[n].append([index[x] for x in ordered])
                clusters[n].append(rec["id"])
        if not queries:
            continue
        with named(embedder, f"gallery texts ({GALLERIES.get(gallery, gallery)}, template {tname})"):
            gallery_emb = embedder.texts(gallery_texts(template, data.names, data.object_set, gallery))
        for n in sorted(queries):
            with named(embedder, f"{n}-object captions (template {tname})"):
                emb = embedder.texts(queries[n])
            res = role_retrieval(cosine(emb, gallery_emb), np.array(targets[n]), ORDINALS[:n], clusters[n],
                                 n_boot=n_boot, seed=seed, dtype=resolution(embedder))
            groups.append({"key": f"{tname}, {n} objects, {GALLERIES[gallery]}", "template": tname, "n_objects": n,
                           "tor_gallery": gallery, "skipped": skipped, **res})
    return groups


def tor_text_only(names: list[str], object_set, embedder, template, counts: list[int], *,
                  tuples: int, n_boot: int, seed: int, gallery: str = "names",
                  names_label: str | None = None) -> list[dict]:
    """TOR from names alone: balanced ordered tuples written with `template`
    (`names_label` names a fixed list such as coco90 in the group keys)."""
    with named(embedder, f"gallery texts ({GALLERIES.get(gallery, gallery)}, template {template.name})"):
        gallery_emb = embedder.texts(gallery_texts(template, names, object_set, gallery))
    groups = []
    for n in counts:
        rng = np.random.default_rng([seed, n])
        tup = texts.balanced_tuples(len(names), n, tuples, rng)
        caps = [texts.write(template, [names[i] for i in t], object_set) for t in tup]
        with named(embedder, f"{n}-object tuples' captions (template {template.name})"):
            emb = embedder.texts(caps)
        res = role_retrieval(cosine(emb, gallery_emb), tup, ORDINALS[:n], np.arange(len(tup)),
                             n_boot=n_boot, seed=seed, dtype=resolution(embedder))
        listed = f" of {names_label}" if names_label else ""
        groups.append({"key": f"text-only {template.name}, {n} objects, {GALLERIES[gallery]}{listed}",
                       "template": template.name, "n_objects": n, "tor_gallery": gallery, "skipped": 0, **res})
    return groups
