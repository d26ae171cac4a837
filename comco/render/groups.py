"""The render group: the one unit the render loop schedules, retries, settles and journals.

A scene and its pair variants (--pairs) come from one planning attempt, so they are rendered,
planned again and kept together; a scene of a plain dataset, and a single-object reference
render, is a group of one, through the same code.

A group settles when every image of its attempt has a verdict and none is in flight. Then it
is planned again whole (an image failed its checks and retries are left) or journaled whole,
each image with its own verdict, in one write. A group is never planned again while an image
of its old attempt is out (a stale image written after its replacement would overwrite it),
and the render loop runs while any group is unjournaled, so no path can drop one image of it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from comco.record import PAIR_BASE
from comco.render.checks import check_rendered
from comco.render.journal import CRASHED_TWICE


def scene_key(rec: dict) -> str:
    """A scene image's journal key: scene:INDEX for a scene or a pair's base, scene:INDEX:FACTOR
    for a variant."""
    pair = rec.get("pair")
    if not pair or pair["factor"] == PAIR_BASE:
        return f"scene:{rec['index']}"
    return f"scene:{rec['index']}:{pair['factor']}"


def group_keys(index: int, factors: tuple[str, ...]) -> list[str]:
    return [f"scene:{index}"] + [f"scene:{index}:{f}" for f in factors]


def owed_scenes(indices, done: dict, factors: tuple[str, ...]) -> list[tuple[int, int]]:
    """(index, first retry) of the scenes still to render: those whose group is not whole and
    from one attempt in `done`. Their entries are dropped from `done` (the group is rendered
    again, whole, from the latest attempt it reached)."""
    out = []
    for i in indices:
        keys = group_keys(i, factors)
        got = [done.get(k) for k in keys]
        retries = {e["record"].get("retry", 0) for e in got if e}
        if all(got) and len(retries) == 1:
            continue
        for k in keys:
            done.pop(k, None)
        out.append((i, max(retries, default=0)))
    return out


def job(kind: str, rec: dict, mask: bool) -> dict:
    """What a worker is sent for one image."""
    key = scene_key(rec) if kind == "scene" else f"single:{rec['id']}"
    return {"kind": kind, "key": key, "record": rec, "mask": mask}


@dataclass
class Group:
    """One attempt's images (base first) and what is known of each."""

    jobs: list[dict]
    render_retries: int = 0  # re-plans after failed render checks so far
    unsent: list[int] = field(default_factory=list)  # positions to send, in order
    out: set[int] = field(default_factory=set)  # positions in flight
    verdicts: dict[int, dict] = field(default_factory=dict)  # position -> journal entry
    crashed_once: set[str] = field(default_factory=set)  # keys whose worker crashed once (any attempt)
    replan: bool = False  # an image failed its checks: plan again once none is out

    def __post_init__(self):
        self.unsent = list(range(len(self.jobs)))

    @property
    def kind(self) -> str:
        return self.jobs[0]["kind"]

    def entries(self) -> list[dict]:
        return [self.verdicts[p] for p in range(len(self.jobs))]


class Schedule:
    """The groups a render run owes, in order; the loop asks it what to send and tells it
    what came back, and journals what it hands back."""

    def __init__(self, groups, planner, opts, stats: dict):
        self.waiting = deque(groups)  # not started
        self.active: list[Group] = []  # started and not yet journaled, in start order
        self.owner: dict[str, Group] = {}  # key of an image sent or to send -> its group
        self.planner, self.opts, self.stats = planner, opts, stats

    def owes(self) -> bool:
        """Whether some group is not yet journaled: the render loop runs until none is."""
        if self.active and not self.waiting and not any(g.unsent or g.out for g in self.active):
            raise RuntimeError("render: a group is owed with nothing of it in flight or left to send")
        return bool(self.waiting or self.active)

    def next_job(self) -> dict | None:
        """The next image to send: the started groups' first, in order, then a new group's."""
        group = next((g for g in self.active if g.unsent), None)
        while group is None and self.waiting:
            group = self.waiting.popleft()
            self.active.append(group)
            self.owner.update((j["key"], group) for j in group.jobs)
        if group is None:
            return None
        pos = group.unsent.pop(0)
        group.out.add(pos)
        return group.jobs[pos]

    def answer(self, sent: dict, msg: dict) -> list[dict]:
        """A worker answered `sent` (or crashed on it): its group's journal entries once the
        group is settled, else []."""
        group = self.owner.get(sent["key"])
        pos = next((p for p, j in enumerate(group.jobs) if j is sent), None) if group else None
        if pos not in (group.out if group else ()):  # only the current attempt is ever out
            raise RuntimeError(f"render: an answer for {sent['key']}, which is not in flight")
        group.out.remove(pos)
        self._judge(group, pos, msg)
        if group.out or group.unsent:  # more to come (a group to plan again has nothing left to send)
            return []
        if group.replan:
            self._plan_again(group)
            return []
        self.active.remove(group)
        for j in group.jobs:
            del self.owner[j["key"]]
        entries = group.entries()
        self.stats["rendered"] += sum(e["status"] == "ok" for e in entries)
        self.stats["failed"] += sum(e["status"] == "failed" for e in entries)
        return entries

    def _judge(self, group: Group, pos: int, msg: dict) -> None:
        sent = group.jobs[pos]
        key, rec = sent["key"], sent["record"]
        if msg["kind"] == "crashed":
            self.stats["crashes" if msg["why"] == "crashed" else "hung"] += 1
            if group.replan:  # the group is planned again anyway
                return
            if key not in group.crashed_once:  # a crash is no verdict on the scene: once more
                group.crashed_once.add(key)
                group.unsent = sorted([*group.unsent, pos])
                return
            # Transient: the next --resume tries it again.
            reason = CRASHED_TWICE if msg["why"] == "crashed" else f"the render worker {msg['why']}, twice"
            group.verdicts[pos] = {"key": key, "status": "failed", "record": rec, "reason": reason,
                                   "transient": True}
            return
        if msg["kind"] == "error":
            raise RuntimeError(f"render worker failed on {key}:\n{msg['reason']}")
        if msg["kind"] == "failed":  # a broken object: another seed would not mend it
            group.verdicts[pos] = {"key": key, "status": "failed", "record": rec, "reason": msg["reason"]}
            return
        rec = msg["record"]
        opts = self.opts
        reason = check_rendered(rec, opts.min_pixels, opts.min_visible) if sent["kind"] == "scene" else None
        if reason is None:
            group.verdicts[pos] = {"key": key, "status": "ok", "record": rec}
            return
        group.verdicts[pos] = {"key": key, "status": "failed", "record": rec, "reason": reason}
        if group.render_retries < opts.max_retries:
            group.replan = True
            group.unsent = []  # not sent yet: not worth rendering

    def _plan_again(self, group: Group) -> None:
        """The whole group from its next retry (derived seeds; the workers overwrite its images)."""
        base = group.jobs[0]["record"]
        records = self.planner.plan_group(base["index"], base["retry"] + 1)
        for j in group.jobs:
            del self.owner[j["key"]]
        group.render_retries += 1
        for rec in records:
            rec["render_retries"] = group.render_retries
        group.jobs = [job("scene", rec, group.jobs[0]["mask"]) for rec in records]
        group.unsent, group.verdicts, group.replan = list(range(len(records))), {}, False
        self.owner.update((j["key"], group) for j in group.jobs)
        self.stats["retries"] += 1


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
