"""One point of a bias-development curve: a model saved along its training (comco.train
snapshots) probed for what appears when (ComCO Fig. 4c; issue 26).

On the order-balanced test set with the bare-name gallery: the TOR first-mention share and
the IOR largest-object share among the queries whose top-n are exactly their n objects
(ComCO's conditional metric, chance 1/n), per object count, and the first mention's
(largest object's) share of all TOR (IOR) queries whose top-1 is a present object (chance
1/n, the dose-response tables' figures); beside them the competence
figures that say whether the model could do its task yet (set R@1, presence TOR / IOR).
Point estimates only: the curves' intervals come from the seeds.
"""

from __future__ import annotations

POINT_GATES = ("set R@1", "presence TOR", "presence IOR")


def development_point(data, embedder, template: str = "and", *, seed: int = 0) -> dict:
    """{figure: share} for one saved model (NaN where no query qualifies).

    Args:
        data: the test set (comco.probes.open_dataset, with singles for IOR).
        embedder: comco.probes.Embedder of the model. template: the caption template.
    """
    from comco.probes.gates import gate_figures
    from comco.probes.ior import ior
    from comco.probes.tor import tor_dataset

    out = {}
    for g in tor_dataset(data, embedder, [template], n_boot=0, seed=seed):
        n, metrics = g["n_objects"], g["metrics"]
        out[f"TOR first, {n} objects"] = metrics["conditional"][0]["acc"]
        # the first mention's share of the present-object hits (every query counts; steadier
        # than the conditional share where few queries have exactly their objects on top)
        out[f"TOR first of hits, {n} objects"] = _share_of_hits(metrics)
    if data.singles:
        for g in ior(data, embedder, n_boot=0, seed=seed)[0]:
            n, metrics = g["n_objects"], g["metrics"]
            out[f"IOR largest, {n} objects"] = metrics["conditional"][0]["acc"]
            # the conditional share is undefined until some image has exactly its objects on
            # top, and rests on a few images after: the half-rise steps read this one
            out[f"IOR largest of hits, {n} objects"] = _share_of_hits(metrics)
    figs = gate_figures(data, embedder, template, n_boot=0, seed=seed)
    out.update({k: figs[k]["acc"] for k in POINT_GATES if k in figs})
    return out


def _share_of_hits(metrics: dict) -> float:
    """The first role's share of the queries whose top-1 is one of their own objects."""
    hits = [m["acc"] for m in metrics["unconditional"]]
    return hits[0] / sum(hits) if sum(hits) else float("nan")
