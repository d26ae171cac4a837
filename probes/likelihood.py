"""The matching scenarios (comco.probes.matching) for a generative VLM: the image prefers the
caption the model finds likelier as its answer to the matching prompt. Two scores, both kept
and named: the mean log-probability per caption token (length-fair: the right and wrong captions
can differ in tokens) and the sum (the caption's whole log-probability)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from comco.probes.matching import matching_trials, scenario_groups

MEAN, SUM = "accuracy (mean log-prob per caption token)", "accuracy (sum of caption log-probs)"
KEY = ", caption likelihood"


def likelihood_matching(data, vlm, template, prompt: str, *, max_distractors: int | None, n_boot: int, seed: int,
                        batch_size: int, progress=None) -> tuple[list[dict], int]:
    """(the matching groups, how many (image, caption) pairs were scored)."""
    from PIL import Image

    trials, caps = matching_trials(data, template, max_distractors=max_distractors, seed=seed)
    needed = defaultdict(set)  # image index -> caption ids it is scored with
    for scenarios in trials.values():
        for rows in scenarios.values():
            for i, good, bad, _ in rows:
                needed[i] |= {good, bad}
    total = sum(len(v) for v in needed.values())
    advance = progress(f"matching: scoring {total} captions given their image", total, "captions") if progress else None
    logp, tokens = {}, {}
    for i in sorted(needed):
        ids = sorted(needed[i])
        with Image.open(data.image_path(data.records[i])) as im:
            image = im.convert("RGB")
        for c, (s, n) in zip(ids, vlm.caption_logprobs(image, prompt, [caps[c] for c in ids], batch_size)):
            logp[i, c], tokens[i, c] = s, max(n, 1)
        if advance:
            advance(len(ids))

    def by(mean: bool):
        def score(t):
            def one(col):
                return np.array([logp[i, c] / (tokens[i, c] if mean else 1) for i, c in zip(t[:, 0], t[:, col])])
            return one(1), one(2)
        return score

    groups = scenario_groups(trials, {MEAN: by(True), SUM: by(False)}, KEY, template, n_boot=n_boot, seed=seed)
    for g in groups:
        g["prompt"] = prompt
    return groups, total
