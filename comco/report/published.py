"""Published figures (shared/REFERENCE.md) shown as labelled reference rows in reports.

They sit under the measured rows, marked "published", and never replace a measurement.
Values are percentages as the papers print them; `roles` are this lab's column names.
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
    return PUBLISHED.get((probe, metric, n_objects), []) + (
        PUBLISHED.get((probe, metric, None), []) if n_objects is not None else [])
