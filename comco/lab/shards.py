"""Large renders in pieces: a render stage of more than `render.shard_images` images becomes
K shard stages (`comco render --shard i/K`: image i goes to shard i mod K, the singles to
shard 0) and a merge stage under the render's own id (`comco dataset merge`), so the
stages that read the render do not change, and the shards run side by side (a job array
under --executor slurm, one GPU each under --executor node)."""

from __future__ import annotations

import math
from dataclasses import replace


def split_renders(stages: list, render: dict) -> list:
    """The stages with every render above render["shard_images"] images split (in place of it:
    the shards, then the merge, so inputs still come first)."""
    per = render.get("shard_images")
    if not per:
        return stages
    out = []
    for st in stages:
        k = math.ceil(st.config.get("n", 0) / per) if st.kind == "render" else 1
        if k <= 1:
            out.append(st)
            continue
        # new stages of the graph's own type (comco.lab.graph.Stage), made from the render's
        shards = [replace(st, key=replace(st.key, shard=(i, k)), config={**st.config, "shard": [i, k]}, deps={},
                          hash="") for i in range(k)]
        out.extend(shards)
        out.append(replace(st, config={**st.config, "shards": k}, hash="",
                           deps={f"shard{i}": s.id for i, s in enumerate(shards)}))
    return out
