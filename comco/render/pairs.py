"""Rendering a pair dataset (--pairs): a scene's base and variants come from one planning
attempt, so they are rendered, re-planned and kept as one group.

When one image of a group fails its render checks, the whole group is planned again with
the next retry, but only once none of its images is still queued or in flight (a stale image
written after its replacement would overwrite it). A group is kept only when every image of
it rendered from the same attempt; otherwise each of its images is listed as failed.
"""

from __future__ import annotations

from comco.record import PAIR_BASE


def scene_key(rec: dict) -> str:
    """A scene image's journal key: scene:INDEX for a scene or a pair's base, scene:INDEX:FACTOR
    for a variant."""
    pair = rec.get("pair")
    if not pair or pair["factor"] == PAIR_BASE:
        return f"scene:{rec['index']}"
    return f"scene:{rec['index']}:{pair['factor']}"


def group_keys(index: int, factors: tuple[str, ...]) -> list[str]:
    return [f"scene:{index}"] + [f"scene:{index}:{f}" for f in factors]


class PairGroups:
    """Which groups a render run still owes, and the groups being planned again."""

    def __init__(self, factors: tuple[str, ...]):
        self.factors = tuple(factors)
        self.first_retry: dict[int, int] = {}  # index -> the attempt a resumed group starts from
        self.pending: dict[int, set[str]] = {}  # index -> keys queued or in flight
        self.redoing: dict[int, tuple[int, int]] = {}  # index -> (next retry, render retries)

    def to_render(self, indices, done: dict) -> list[int]:
        """The scenes to render: those whose group is not whole and from one attempt in `done`
        (their entries are dropped from it: the group is rendered again, whole)."""
        out = []
        for i in indices:
            keys = group_keys(i, self.factors)
            got = [done.get(k) for k in keys]
            retries = {e["record"].get("retry", 0) for e in got if e}
            if all(got) and len(retries) == 1:
                continue
            for k in keys:
                done.pop(k, None)
            if retries:
                self.first_retry[i] = max(retries)
            out.append(i)
        return out

    def jobs(self, group: list[dict], opts, render_retries: int = 0) -> list[dict]:
        out = []
        for rec in group:
            if render_retries:
                rec["render_retries"] = render_retries
            job = {"kind": "scene", "key": scene_key(rec), "record": rec, "mask": opts.masks or opts.coco}
            self.pending.setdefault(rec["index"], set()).add(job["key"])
            out.append(job)
        return out

    def arrived(self, job: dict, msg: dict) -> bool:
        """A worker answered for `job`: False when its group is being planned again (drop it)."""
        if job["kind"] != "scene":
            return True
        i = job["record"]["index"]
        self.pending.get(i, set()).discard(job["key"])
        return i not in self.redoing

    def sent_again(self, job: dict) -> None:
        if job["kind"] == "scene":
            self.pending.setdefault(job["record"]["index"], set()).add(job["key"])

    def redo(self, rec: dict, queue: list) -> None:
        """Plan `rec`'s group again with the next retry; its images not yet sent are dropped now."""
        i = rec["index"]
        self.redoing[i] = (rec["retry"] + 1, rec.get("render_retries", 0) + 1)
        mine = [j for j in queue if j["kind"] == "scene" and j["record"]["index"] == i]
        queue[:] = [j for j in queue if not (j["kind"] == "scene" and j["record"]["index"] == i)]
        for j in mine:
            self.pending[i].discard(j["key"])

    def ready(self, planner, opts) -> list[dict]:
        """Jobs of the re-planned groups none of whose old images is still out, base first."""
        out = []
        for i, (retry, tries) in list(self.redoing.items()):
            if not self.pending.get(i):
                del self.redoing[i]
                out += self.jobs(planner.plan_group(i, retry), opts, tries)
        return out


def whole_groups(entries: dict[str, dict], factors: tuple[str, ...]) -> dict[str, dict]:
    """Journal entries with every image of an incomplete or mixed group turned into a failure."""
    by_index: dict[int, list[str]] = {}
    for key in entries:
        if key.startswith("scene:"):
            by_index.setdefault(int(key.split(":")[1]), []).append(key)
    out = dict(entries)
    for i, keys in by_index.items():
        group = [entries.get(k) for k in group_keys(i, factors)]
        whole = all(e is not None and e["status"] == "ok" for e in group)
        if whole and len({e["record"].get("retry", 0) for e in group}) == 1:
            continue
        why = next((f"{e['record']['id']}: {e['reason']}" for e in group if e is not None and e["status"] != "ok"),
                   "its images come from different attempts")
        for k in keys:
            e = entries[k]
            if e["status"] == "ok":
                out[k] = {**e, "status": "failed", "reason": f"another image of its pair failed ({why})"}
    return out
