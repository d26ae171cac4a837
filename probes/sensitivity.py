"""Two measurements the lab adds to the probes (numpy only; the embedder brings the model).

- `tor_summary`: TOR whose queries are the summary sentence of each `long` caption
  alone ("A photo of a cube, a cone and a torus on a grey floor."), against the same
  template's single-object summaries; the text Long-CLIP and DeBias-CLIP treat as the
  "short" caption.
- `sensitivity`: how far a caption's embedding moves (1 - cosine) when the object
  named at mention position k is replaced by an object absent from the scene; a
  model that reads mostly the first words moves most for k = 1.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


def tor_summary(data, embedder, *, n_boot: int, seed: int, gallery: str = "names") -> list[dict]:
    """TOR whose queries are the summary sentences of the `long` captions.

    Args:
        data: the ProbeData; embedder: the model's Embedder.
        n_boot, seed: the bootstrap.
        gallery: "names" or "template" (see comco probe --tor-gallery)."""
    from comco.probes import texts
    from comco.probes.retrieval import ORDINALS, cosine, role_retrieval
    from comco.probes.tor import gallery_texts
    from comco.probes.words import first_sentence, mention_sequence

    template = texts.get_template(texts.template_book(data.info), "long")
    index = {n: i for i, n in enumerate(data.names)}
    queries, targets, clusters = defaultdict(list), defaultdict(list), defaultdict(list)
    skipped = 0
    for rec in data.records:
        names = [o["name"] for o in rec["objects"]]
        for order, caption in zip(rec["mention_orders"], rec.get("captions", {}).get("long", [])):
            ordered = [names[i] for i in order]
            summary = first_sentence(caption).strip()
            if mention_sequence(summary, data.names, data.forms) != ordered:
                skipped += 1
                continue
            queries[len(order)].append(summary)
            targets[len(order)].append([index[x] for x in ordered])
            clusters[len(order)].append(rec["id"])
    gallery_emb = embedder.texts(gallery_texts(template, data.names, data.object_set, gallery))
    groups = []
    for n in sorted(queries):
        res = role_retrieval(cosine(embedder.texts(queries[n]), gallery_emb), np.array(targets[n]), ORDINALS[:n],
                             clusters[n], n_boot=n_boot, seed=seed)
        groups.append({"key": f"summary sentence, {n} objects", "template": "summary", "n_objects": n,
                       "tor_gallery": gallery, "skipped": skipped, **res})
    return groups


def replacement_captions(data, template_name: str, seed: int):
    """(original, replaced, n_objects, position, record id) for every caption and position.

    The replacement is an object of the set that the scene does not hold, drawn from a
    generator seeded by (seed, image index, order, position), so every model is probed
    with the same texts.
    """
    from comco.probes import texts

    template = texts.get_template(texts.template_book(data.info), template_name)
    rows = []
    for rec in data.records:
        names = [o["name"] for o in rec["objects"]]
        absent = [n for n in data.names if n not in names]
        if len(names) < 2 or not absent:
            continue
        for j, order in enumerate(rec["mention_orders"]):
            ordered = [names[i] for i in order]
            original = texts.write(template, ordered, data.object_set)
            for k in range(len(ordered)):
                rng = np.random.default_rng([seed, int(rec.get("index", 0)), j, k])
                changed = list(ordered)
                changed[k] = absent[int(rng.integers(len(absent)))]
                rows.append((original, texts.write(template, changed, data.object_set), len(ordered), k, rec["id"]))
    return rows


def sensitivity(data, embedder, template_name: str = "and", *, n_boot: int, seed: int) -> dict:
    """{n_objects: [{"role": "1st", "value": mean distance, "lo", "hi", "n"}, ...]}."""
    from comco.probes.retrieval import ORDINALS
    from comco.probes.stats import mean_with_interval

    rows = replacement_captions(data, template_name, seed)
    if not rows:
        return {}
    originals = embedder.texts([r[0] for r in rows])
    changed = embedder.texts([r[1] for r in rows])
    distance = 1.0 - np.einsum("ij,ij->i", originals, changed)
    n_obj = np.array([r[2] for r in rows])
    pos = np.array([r[3] for r in rows])
    ids = np.array([r[4] for r in rows])
    out = {}
    for n in sorted(set(n_obj.tolist())):
        stats = []
        for k in range(n):
            m = (n_obj == n) & (pos == k)
            s = mean_with_interval(distance[m], ids[m], n_boot=n_boot, seed=seed + k)
            stats.append({"role": ORDINALS[k], "value": s["mean"], "lo": s["lo"], "hi": s["hi"], "n": s["n"],
                          "chance": None})
        out[str(n)] = stats
    return out
