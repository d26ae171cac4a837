"""Published figures (shared/REFERENCE.md), the one table of them: shown as labelled
reference rows beside what comco measures, never in place of it.

Every value is a percentage as the papers print it. `published_rows` gives the ComCO /
LABCLIP rows in percent (the probe tables' unit); `published_retrieval` and
`published_analysis` give the DeBias-CLIP rows as fractions (the natural reports' unit).
`roles` are this lab's column names.
"""

from __future__ import annotations

COMCO = "ComCO paper, CVPR 2025"
_TOR_ROLES = ["1st", "2nd", "3rd", "4th"]
_IOR_ROLES = ["largest", "2nd largest", "3rd largest", "4th largest"]

_TOR_4 = {
    "CLIP LAION": [63.96, 21.59, 10.68, 3.76],
    "CLIP Datacomp": [71.13, 16.26, 8.74, 3.87],
    "CLIP Roberta": [44.03, 23.73, 18.07, 14.18],
    "SigLIP": [58.11, 21.16, 10.99, 9.73],
    "CLIP openAI": [50.31, 20.74, 14.45, 6.79],
    "NegCLIP": [51.63, 28.92, 14.86, 4.59],
    "SugarCrepe": [44.29, 30.32, 18.73, 6.66],
}
_TOR_ENCODERS = {
    "CLIP text encoder": [56.28, 22.71, 13.17, 7.48],
    "SBERT": [29.02, 19.80, 17.50, 33.57],
    "SimCSE": [27.59, 19.07, 17.76, 34.83],
}
_IOR_4 = {
    "CLIP LAION": [85.45, 6.36, 5.45, 2.73],
    "CLIP Datacomp": [85.16, 5.65, 4.95, 4.24],
    "CLIP Roberta": [87.40, 8.66, 2.36, 1.57],
    "SigLIP": [77.66, 10.11, 6.38, 5.85],
    "CLIP openAI": [65.22, 17.39, 8.70, 8.70],
    "NegCLIP": [61.67, 15.00, 13.33, 10.00],
    "SugarCrepe": [60.0, 18.38, 16.85, 4.7],
}
_MATCHING = {
    "CLIP Datacomp": [99.99, 67.50], "CLIP Roberta": [99.98, 64.75], "SigLIP": [99.49, 72.36],
    "CLIP openAI": [99.59, 52.23], "NegCLIP": [96.82, 46.94], "SugarCrepe": [98.55, 60.43],
}


def _rows(table: dict, roles: list[str], source: str) -> list[dict]:
    return [{"label": name, "source": source, "values": dict(zip(roles, vals))} for name, vals in table.items()]


# (probe, metric, n_objects) -> rows; None for n_objects matches any group.
PUBLISHED = {
    ("tor", "conditional", 4): _rows(_TOR_4, _TOR_ROLES, f"{COMCO}, 4-object captions")
    + _rows(_TOR_ENCODERS, _TOR_ROLES, f"{COMCO}, text-encoder comparison"),
    ("ior", "conditional", 4): _rows(_IOR_4, _IOR_ROLES,
                                     f"{COMCO}, 1 large + 3 small; small 1-3 are not size-ranked; few dozen images"),
    ("matching", "accuracy", None): _rows(_MATCHING, ["scenario 1", "scenario 2"],
                                          f"{COMCO}, ComCO; object count not stated"),
    ("binding", "accuracy", None): [
        {"label": "CLIP ViT-B/32", "source": "LABCLIP (secondary), CLEVR", "values": {"cross-modal": 58.0}},
        {"label": "LABCLIP ViT-B/32", "source": "LABCLIP (secondary), CLEVR", "values": {"cross-modal": 95.0}},
        {"label": "CLIP ViT-B/32 linear probes", "source": "LABCLIP (secondary), CLEVR",
         "values": {"image probe": 96.0, "text probe": 100.0}},
    ],
}


def published_rows(probe: str, metric: str, n_objects) -> list[dict]:
    """ComCO / LABCLIP reference rows for a probe table, values in percent.

    Args:
        probe: "tor", "ior", "matching", "binding".
        metric: the table's metric ("conditional", "accuracy").
        n_objects: the table's object count (rows for any count are added), or None."""
    return PUBLISHED.get((probe, metric, n_objects), []) + (
        PUBLISHED.get((probe, metric, None), []) if n_objects is not None else [])


# The ComCO rows name the weights' training data, not the architecture (REFERENCE.md), so a
# measured model meets a row by where its weights come from: (substring, row label), first match wins.
_COMCO_MATCH = [("negclip", "NegCLIP"), ("sugarcrepe", "SugarCrepe"), ("roberta", "CLIP Roberta"),
                ("siglip2", None), ("siglip 2", None), ("siglip", "SigLIP"), ("openai", "CLIP openAI"),
                ("datacomp", "CLIP Datacomp"), ("laion", "CLIP LAION")]


def published_model(name: str, pretrained: str | None = None, identity: str = "") -> str | None:
    """The ComCO paper's row for the same weights ("CLIP openAI" for `--pretrained openai`), or None.

    Args:
        name: the model name (`ViT-B-32`, `hf:DIR`, `ckpt:PATH`).
        pretrained: its weights tag or file (None for folders and checkpoints).
        identity: the loaded model's identity (names the transformers model type of `hf:` folders)."""
    text = f"{name} {pretrained or ''} {identity}".lower()
    if pretrained in (None, "", "none") and not name.startswith("hf:"):
        return None  # random weights or a comco checkpoint: no published row is the same model
    return next((label for key, label in _COMCO_MATCH if key in text), None)


def published_biases() -> list[dict]:
    """The ComCO rows' headline numbers (4-object captions / 1 large + 3 small, conditional, %):
    {"label", "source", "first" (TOR 1st share), "largest" (IOR largest share)}, None where not reported."""
    tor = {r["label"]: r for r in PUBLISHED[("tor", "conditional", 4)]}
    ior = {r["label"]: r for r in PUBLISHED[("ior", "conditional", 4)]}
    return [{"label": label, "source": COMCO,
             "first": tor[label]["values"]["1st"] if label in tor else None,
             "largest": ior[label]["values"]["largest"] if label in ior else None}
            for label in dict.fromkeys([*tor, *ior])]


DEBIAS_SOURCE = "published: DeBias-CLIP paper (CVPR 2026), ViT-B/16, its own protocol"

# ---------------------------------------------------------------- DeBias-CLIP (CVPR 2026)
# Its models are ViT-B/16; it does not say which caption protocol its COCO row used, so
# every row carries its source and that caveat instead of a protocol name.

# benchmark -> model -> (text-to-image R@1, image-to-text R@1), %
RETRIEVAL_R1 = {
    "urban1k": {"CLIP": (53.4, 67.5), "Long-CLIP": (79.5, 78.9), "SmartCLIP": (87.4, 90.0),
                "DeBias-CLIP": (93.0, 93.1)},
    "dci": {"CLIP": (42.9, 44.1), "Long-CLIP": (57.1, 51.6), "SmartCLIP": (64.0, 64.9),
            "DeBias-CLIP": (67.6, 68.5)},
    "long-dci": {"CLIP": (32.7, 35.9), "Long-CLIP": (47.0, 41.1), "SmartCLIP": (52.8, 53.4),
                 "DeBias-CLIP": (57.4, 57.8)},
    "docci": {"CLIP": (57.1, 60.6), "Long-CLIP": (71.4, 63.1), "SmartCLIP": (78.0, 77.4),
              "DeBias-CLIP": (80.0, 79.7)},
    "coco": {"Long-CLIP": (40.4, 57.6), "SmartCLIP": (42.4, 61.9), "DeBias-CLIP": (43.0, 61.3)},
    "flickr30k": {"Long-CLIP": (34.1, 46.8), "SmartCLIP": (36.3, 55.6), "DeBias-CLIP": (36.6, 56.6)},
}

# analysis -> model -> {variant: R@1 % in the analysis's own direction}; DOCCI test only.
ANALYSES_R1 = {
    "padding": {
        "CLIP": dict(zip((f"k={k}" for k in range(6)), (51.3, 51.4, 50.4, 50.0, 49.2, 47.6))),
        "SigLIP2": dict(zip((f"k={k}" for k in range(6)), (69.8, 67.6, 65.1, 61.0, 54.7, 47.9))),
    },
    "order": {
        "CLIP": {"first-2": 51.9, "swap-2": 49.2, "first-only": 42.4},
        "SigLIP2": {"first-2": 67.3, "swap-2": 58.8, "first-only": 59.4},
    },
    "summary": {
        "Long-CLIP": {"keep": 71.5, "move-to-4th": 61.8, "remove": 54.3},
        "DeBias-CLIP": {"keep": 80.0, "move-to-4th": 76.7, "remove": 66.7},
    },
}
ANALYSES_BENCHMARK = "docci"


def published_retrieval(benchmark: str) -> list[dict]:
    """DeBias-CLIP's published R@1 rows for a benchmark, values as fractions.

    Args:
        benchmark: comco eval's benchmark name ("urban1k", "docci", ...)."""
    return [{"model": model, "source": DEBIAS_SOURCE, "t2i": {"R@1": round(t2i / 100, 4)},
             "i2t": {"R@1": round(i2t / 100, 4)}}
            for model, (t2i, i2t) in RETRIEVAL_R1.get(benchmark, {}).items()]


def published_analysis(benchmark: str, analysis: str) -> list[dict]:
    """Published rows for an analysis, only where they were measured (DOCCI test)."""
    if benchmark != ANALYSES_BENCHMARK:
        return []
    return [{"model": model, "source": DEBIAS_SOURCE, "r1": {k: round(v / 100, 4) for k, v in values.items()}}
            for model, values in ANALYSES_R1.get(analysis, {}).items()]


def published_caption_bias() -> list[dict]:
    """ComCO's claim 2 as printed: how often a caption's first-mentioned object is its largest
    (percent; LAION from the text, COCO only as a figure, so it has no number here)."""
    return [{"label": "LAION, largest object mentioned first", "value": 40.0,
             "source": f"{COMCO}, section 4.2.3 (200,000 captions, areas from segmentation masks; 'about 40 %')"}]
