"""Published figures (shared/REFERENCE.md) shown beside measured ones, always labelled.

All values are fractions (0.513 = 51.3 %). The DeBias-CLIP paper's models are
ViT-B/16; it does not say which caption protocol its COCO row used, so every row
carries its source and that caveat instead of a protocol name.
"""

from __future__ import annotations

DEBIAS_SOURCE = "published: DeBias-CLIP paper (CVPR 2026), ViT-B/16, its own protocol"

# benchmark -> model -> (text-to-image R@1, image-to-text R@1)
RETRIEVAL_R1 = {
    "urban1k": {"CLIP": (.534, .675), "Long-CLIP": (.795, .789), "SmartCLIP": (.874, .900),
                "DeBias-CLIP": (.930, .931)},
    "dci": {"CLIP": (.429, .441), "Long-CLIP": (.571, .516), "SmartCLIP": (.640, .649),
            "DeBias-CLIP": (.676, .685)},
    "long-dci": {"CLIP": (.327, .359), "Long-CLIP": (.470, .411), "SmartCLIP": (.528, .534),
                 "DeBias-CLIP": (.574, .578)},
    "docci": {"CLIP": (.571, .606), "Long-CLIP": (.714, .631), "SmartCLIP": (.780, .774),
              "DeBias-CLIP": (.800, .797)},
    "coco": {"Long-CLIP": (.404, .576), "SmartCLIP": (.424, .619), "DeBias-CLIP": (.430, .613)},
    "flickr30k": {"Long-CLIP": (.341, .468), "SmartCLIP": (.363, .556), "DeBias-CLIP": (.366, .566)},
}

# analysis -> model -> {variant: R@1 in the analysis's own direction}; DOCCI test only.
ANALYSES_R1 = {
    "padding": {
        "CLIP": dict(zip((f"k={k}" for k in range(6)), (.513, .514, .504, .500, .492, .476))),
        "SigLIP2": dict(zip((f"k={k}" for k in range(6)), (.698, .676, .651, .610, .547, .479))),
    },
    "order": {
        "CLIP": {"first-2": .519, "swap-2": .492, "first-only": .424},
        "SigLIP2": {"first-2": .673, "swap-2": .588, "first-only": .594},
    },
    "summary": {
        "Long-CLIP": {"keep": .715, "move-to-4th": .618, "remove": .543},
        "DeBias-CLIP": {"keep": .800, "move-to-4th": .767, "remove": .667},
    },
}
ANALYSES_BENCHMARK = "docci"


def published_retrieval(benchmark: str) -> list[dict]:
    return [{"model": model, "source": DEBIAS_SOURCE, "t2i": {"R@1": t2i}, "i2t": {"R@1": i2t}}
            for model, (t2i, i2t) in RETRIEVAL_R1.get(benchmark, {}).items()]


def published_analysis(benchmark: str, analysis: str) -> list[dict]:
    """Published rows for an analysis, only where they were measured (DOCCI test)."""
    if benchmark != ANALYSES_BENCHMARK:
        return []
    return [{"model": model, "source": DEBIAS_SOURCE, "r1": values}
            for model, values in ANALYSES_R1.get(analysis, {}).items()]
