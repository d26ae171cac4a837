"""The planner: decides everything about every image before Blender runs.

No bpy, seeded per image. A plan is a stream of scene records (see
docs/dev/contract.md); the renderer only realises them and adds what it measured.

Planning has three parts. Drawing: every random number of an attempt (one image,
one retry) comes from its own stream, in one go and in a fixed layout, and what
they decide is worked out for a batch at once (comco/plan/draws.py). Geometry: fitting
sizes and finding positions for the batch with numpy (comco/plan/placement.py). Records:
mention orders, captions and the record itself (here). An attempt that cannot be
placed is drawn again with the next retry's seed in the next batch; for twenty retries
it keeps its objects.
"""

from __future__ import annotations

import math
from typing import Iterable, Iterator

import numpy as np

from comco.errors import UserError
from comco.manifest import ObjectSet, ObjectSpec
from comco.plan import captions as cap
from comco.plan import placement as pl
from comco.plan.camera import Camera
from comco.plan.cameras import CameraPlacers, turn
from comco.plan.config import PlanConfig, check_config
from comco.plan.draws import LIGHT_NORMALS, OBJECT_RETRIES, Drawer
from comco.plan.floors import FloorDrawer
from comco.plan.holdout import TRAIN, Composer, resolve_holdout
from comco.plan.lights import LightDrawer
from comco.plan.orders import mention_orders
from comco.plan.pairs import Miss, Pairer
from comco.plan.placement import PLACEMENT_TRIES
from comco.plan.relations import add_outputs
from comco.plan.surfaces import SurfaceDrawer
from comco.plan.worlds import WorldDrawer
from comco.record import PAIR_BASE, SINGLE_LAYOUT, SLOTS, ObjectEntry, SceneRecord, SingleRecord

SCENE_RETRIES = 200  # ten draws of objects: two thin objects (a spoon and an axe) may have none that can be large
BATCH = 1024  # attempts placed together; any size gives the same records
WINDOW = 4 * BATCH  # records held back at most while an earlier scene still retries
PAIR_FAILED = -1  # a placed base whose pair variants could not all be made (not a placement code)
HOLDOUT_MISSED = -2  # a placed scene on the wrong side of --holdout's split (not a placement code)


class PlanFailure(Exception):
    """A scene could not be placed; carries the reason."""


class Planner:
    """Scene records for a configuration and an object set: `records()` for a whole dataset,
    `plan(i)` / `replan(i, retry)` for one image, `singles()` for the reference renders.

    Args:
        cfg: the plan configuration (checked here: a bad one is a UserError).
        object_set: the set its objects come from (comco.manifest.load_object_set).
    """

    def __init__(self, cfg: PlanConfig, object_set: ObjectSet):
        check_config(cfg, object_set)
        self.cfg = cfg
        self.set = object_set
        self.camera = Camera.default(*cfg.resolution)
        self.book = cap.load_templates(cfg.templates, text=cfg.templates_text)
        self.templates = self.book.select(list(cfg.captions), cfg.colors, pairs=bool(cfg.pairs), layout=cfg.layout)
        self.captioner = cap.Captioner(self.templates, self.book, object_set)
        self.placer = pl.Placer(self.camera, object_set.objects)
        self.holdout = resolve_holdout(cfg, object_set)
        self.composer = None if self.holdout is None else Composer(self.holdout, object_set, cfg.seed)
        self.cameras = CameraPlacers(cfg, object_set.objects, self.placer)
        self.drawer = Drawer(cfg, object_set, self.cameras, composer=self.composer)
        self.pairer = Pairer(self) if cfg.pairs else None
        # Realism factors recorded as a field of their own (None: the field is left out).
        self.scene_factors = {"world": WorldDrawer(cfg), "floor": FloorDrawer(cfg)}
        self.lights = LightDrawer(cfg)
        self.surfaces = SurfaceDrawer(cfg)
        self._outputs = cfg.depth or cfg.normals or cfg.relations
        self._heights = {o.name: o.normalized_dimensions(1.0)[2] for o in object_set.objects}
        # Rounded once: the record's turn for each whole degree.
        self._rotation = {d: round(math.radians(d), 5) for d in range(-180, 181)}

    # -- public ---------------------------------------------------------------------
    def count_for(self, index: int) -> int:
        """Images are spread evenly (round robin) over the object counts."""
        return self.drawer.count_for(index)

    def plan(self, index: int, first_retry: int = 0) -> SceneRecord:
        """The record for image `index`; re-planned from derived seeds if it cannot fit.

        `first_retry` > 0 re-plans a scene that the renderer rejected (the retry count
        is recorded, and the seeds stay derived from the dataset seed and the index).
        With --pairs, the base record of the pair group (`plan_group` gives all of it).
        """
        return self.plan_group(index, first_retry)[0]

    def plan_group(self, index: int, first_retry: int = 0) -> list[SceneRecord]:
        """Image `index`'s records: the scene, then (with --pairs) its variants in factor order."""
        return next(self._groups([(index, first_retry)]))

    def records(self, start: int = 0, stop: int | None = None) -> Iterator[SceneRecord]:
        stop = self.cfg.n if stop is None else stop
        return self._flat((i, 0) for i in range(start, stop))

    def records_for(self, indices: Iterable[int]) -> Iterator[SceneRecord]:
        """The records of these images, in this order (planned in batches, as `records`)."""
        return self._flat((i, 0) for i in indices)

    def records_from(self, attempts: Iterable[tuple[int, int]]) -> Iterator[SceneRecord]:
        """The records of these (index, first retry) attempts, in order, planned in batches:
        a record's own (index, retry) gives that record again (`comco validate` checks so).
        With --pairs, each attempt gives its whole pair group."""
        return self._flat(attempts)

    def groups_from(self, attempts: Iterable[tuple[int, int]]) -> Iterator[list[SceneRecord]]:
        """Pair groups (the scene, then its variants) of these attempts, in order."""
        return self._groups(attempts)

    def _flat(self, jobs) -> Iterator[SceneRecord]:
        if self.pairer is None:
            return self._plan_stream(jobs)
        return (rec for group in self._plan_stream(jobs) for rec in group)

    def _groups(self, jobs) -> Iterator[list[SceneRecord]]:
        if self.pairer is None:
            return ([rec] for rec in self._plan_stream(jobs))
        return self._plan_stream(jobs)

    def replan(self, index: int, retry: int) -> SceneRecord:
        """Exactly attempt `retry` of image `index` (PlanFailure if that attempt does not fit).

        The lab uses it to write new mention orders and captions for rendered images.
        With --pairs, the base record (its variants may fail; `plan_group` says).
        """
        drawn = self.drawer.draw([(index, retry)])
        placed = self._place(drawn)
        if placed.status[0] != pl.OK:
            raise PlanFailure(self._reason(drawn, placed, 0))
        return self._with_outputs(self._base_records(drawn, placed, [0])[0])

    def check_large_fraction(self) -> None:
        """One-large: some object must be able to cover --large-fraction (at the centre,
        unturned); the others are made smaller where they must, but not all of them. With
        camera ranges, under each extreme camera too (and each must see the upper slots)."""
        self._check_large_fraction(self.placer, "")
        self.cameras.check(self._check_large_fraction)

    def _check_large_fraction(self, placer: pl.Placer, where: str) -> None:
        if self.cfg.layout != "one-large":
            return
        count = len(self.set.objects)
        *_, reached, _ = placer.fit(np.arange(count), np.zeros(count, dtype=np.intp), np.full(count, 180),
                                         np.full(count, self.cfg.large_fraction), clamp_tall=True)
        if reached.max() < 0.95 * self.cfg.large_fraction:
            raise UserError(f"cannot place a large object covering --large-fraction {self.cfg.large_fraction} of the "
                            f"image{' under the camera at ' + where if where else ''}: no object of '{self.set.name}' "
                            f"covers more than {reached.max():.3f} within the frame; lower --large-fraction"
                            f"{' or narrow the camera ranges' if where else ''}")

    def choose_objects(self, index: int, draw: int = 0) -> list[ObjectSpec]:
        return [self.set.objects[i] for i in self.drawer.choose_ids(index, draw)]

    # -- planning in batches --------------------------------------------------------
    def _plan_stream(self, jobs: Iterable[tuple[int, int]]) -> Iterator[dict]:
        """Records for (index, first retry) jobs, in the jobs' order.

        Attempts are placed BATCH at a time. One that fails is drawn again with the
        next retry in the next batch, beside new jobs, so that no batch is spent on a
        handful of hard scenes; records wait until those before them are done.
        """
        jobs = iter(jobs)
        retries: list[tuple[int, int, int, int]] = []  # (job number, index, attempts made, retry)
        done: dict[int, dict] = {}
        next_job = next_out = 0
        exhausted = False
        while retries or not exhausted:
            todo, retries = retries, []
            # New jobs wait while one far back still retries: records after it are held
            # until it is done, and only a window of them may be held.
            while len(todo) < BATCH and not exhausted and next_job < next_out + WINDOW:
                job = next(jobs, None)
                if job is None:
                    exhausted = True
                    break
                todo.append((next_job, job[0], 0, job[1]))
                next_job += 1
            if not todo:
                break
            drawn = self.drawer.draw([(index, retry) for _, index, _, retry in todo])
            placed = self._place(drawn)
            status = placed.status.tolist()
            why: dict[int, str] = {}
            if self.composer is not None:
                self._split_misses(drawn, status, why)
            ok = [a for a, s in enumerate(status) if s == pl.OK]
            bases = self._base_records(drawn, placed, ok)
            if self.pairer is None:
                for a, rec in zip(ok, bases):
                    done[todo[a][0]] = self._with_outputs(rec)
            else:  # a base whose variants cannot all be made is drawn again, like one that does not fit
                for a, base, variants in zip(ok, bases, self.pairer.variants(drawn, placed, ok, bases)):
                    if isinstance(variants, str):
                        status[a], why[a] = PAIR_FAILED, variants
                    else:
                        done[todo[a][0]] = [self._with_outputs(r) for r in (base, *variants)]
            for a, (k, index, made, retry) in enumerate(todo):
                if status[a] == pl.OK:
                    continue
                if made + 1 >= SCENE_RETRIES:
                    cfg = self.cfg
                    raise UserError(
                        f"cannot place {self.count_for(index)} objects in view at --large-fraction "
                        f"{cfg.large_fraction} / --small-fraction {cfg.small_fraction[0]}-{cfg.small_fraction[1]} "
                        f"({why.get(a) or self._reason(drawn, placed, a)}); lower the fractions or --objects")
                # A pair that these objects can never give (no two colours to swap) skips to the
                # attempt that draws new objects.
                skip = isinstance(why.get(a), Miss) and why[a].new_objects
                following = retry - retry % OBJECT_RETRIES + OBJECT_RETRIES if skip else retry + 1
                retries.append((k, index, made + 1, following))
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1

    def _split_misses(self, drawn, status: list[int], why: dict[int, str]) -> None:
        """Mark the placed attempts whose scene is on the wrong side of --holdout's split."""
        names = self.set.names
        for a, s in enumerate(status):
            if s != pl.OK:
                continue
            n = len(drawn.colors[a])
            miss = self.composer.miss(drawn.index[a], [names[i] for i in drawn.ids[a, :n].tolist()],
                                      [SLOTS[i] for i in drawn.slot[a, :n].tolist()], drawn.colors[a],
                                      drawn.ranks[a, :n].tolist())
            if miss:
                status[a], why[a] = HOLDOUT_MISSED, miss

    def _with_outputs(self, rec: SceneRecord) -> SceneRecord:
        """The record with the per-image outputs asked for (--depth, --normals, --relations), once
        its image name is final (a pair variant's is set after its objects)."""
        if self._outputs:
            add_outputs(rec, self.cfg, [self._heights[o["name"]] * o["scale"] for o in rec["objects"]])
        return rec

    def _place(self, drawn) -> pl.Placed:
        layout = self.cfg.layout
        placer = self.cameras.for_images(drawn.index)  # each image's camera
        return placer.place(drawn.ids, drawn.slot, drawn.yaw + 180, drawn.fraction, drawn.ranks, drawn.valid,
                            drawn.jitter, one_large=layout == "one-large", keep_ranks=layout != "equal")

    def _reason(self, drawn, placed: pl.Placed, a: int) -> str:
        code, who = int(placed.status[a]), int(placed.culprit[a])
        name = self.set.objects[int(drawn.ids[a, max(who, 0)])].name
        share = float(drawn.fraction[a, max(who, 0)])
        if code == pl.TOO_TALL:
            return f"{name} would be too tall to cover {share:.3f} of the image"
        if code == pl.LOST_RANK:
            return f"{name} shrunk to fit the frame and lost its size rank"
        if code == pl.LARGE_TOO_SMALL:
            return (f"{name} cannot be the large object: it would not cover {pl.LARGE_OVER_SMALL:g} times "
                    f"the largest small object's share within the frame")
        return f"{int(drawn.valid[a].sum())} objects did not fit after {PLACEMENT_TRIES} placements"

    # -- records --------------------------------------------------------------------
    def _base_records(self, drawn, placed: pl.Placed, rows: list[int]) -> list[SceneRecord]:
        """The records of placed attempts; with --pairs each carries its pair entry (factor base)."""
        out = self._records(drawn, placed, rows)
        if self.pairer is not None:
            for rec in out:
                rec["pair"] = {"id": rec["id"], "factor": PAIR_BASE, "changed": []}
        return out

    def _records(self, drawn, placed: pl.Placed, rows: list[int]) -> list[SceneRecord]:
        """The scene records of the placed attempts `rows` of a batch."""
        cfg, objects, looks = self.cfg, self.set.objects, self.drawer.material_names
        pick = np.asarray(rows, dtype=np.intp)
        ids, slot, ranks, yaw, material, variant = (v[pick].tolist() for v in (
            drawn.ids, drawn.slot, drawn.ranks, drawn.yaw, drawn.material, drawn.variant))
        scale, xs, ys = (np.round(v[pick], 5).tolist() for v in (placed.scale, placed.x, placed.y))
        fraction = np.round(placed.fraction[pick], 6).tolist()
        us = placed.u[pick].tolist()
        lights = _lights_many(drawn.normals[pick])
        order_numbers = drawn.order_numbers[pick].tolist()
        out = []
        if self.cameras.recorded:  # placed in the image's camera; turned and scaled by its azimuth and distance
            xs, ys, scale, rotation = self._seen_from(drawn, rows, placed, yaw)
        else:
            rotation = [[self._rotation[d] for d in row] for row in yaw]
        for r, a in enumerate(rows):
            camera = self.cameras.record(drawn.index[a]) or self.camera.to_record()
            n = len(drawn.colors[a])
            index, retry = drawn.index[a], drawn.retry[a]
            factors = {k: d.draw(drawn.seed[a]) for k, d in self.scene_factors.items()}
            objs = [ObjectEntry(
                name=objects[ids[r][k]].name, slot=SLOTS[slot[r][k]], size_rank=ranks[r][k],
                scale=scale[r][k], location=[xs[r][k], ys[r][k], 0.0], rotation_z=rotation[r][k],
                color=drawn.colors[a][k], material=looks[material[r][k]], planned_fraction=fraction[r][k],
            ) for k in range(n)]
            if self.surfaces.recorded:
                for o in objs:
                    o["surface"] = self.surfaces.draw(drawn.seed[a], o["name"])
            orders = mention_orders(order_numbers[r], ranks[r][:n], us[r][:n], policy=cfg.order_policy,
                                    k=cfg.orders, order_bias=cfg.order_bias)
            record = SceneRecord(
                id=f"{index:06d}", index=index, seed=drawn.seed[a], retry=retry,
                object_set=self.set.name, object_set_hash=self.set.hash,
                image=f"images/{index:06d}.png", resolution=list(cfg.resolution),
                layout=cfg.layout, large_slot=SLOTS[slot[r][ranks[r].index(0)]],
                camera=camera, lights=self.lights.apply(drawn.seed[a], lights[r]),
                **{k: v for k, v in factors.items() if v is not None},
                objects=objs, mention_orders=orders,
            )  # its captions follow: they read the rest of it
            record["captions"] = self.captioner.for_record(record, variant[r][:n])
            if self.holdout is not None:  # the held-out combinations it shows ([] on the training side)
                record["holdout"] = self.holdout.shows_record(record)
            out.append(record)
        return out

    def _seen_from(self, drawn, rows: list[int], placed: pl.Placed, yaw: list[list[int]]):
        """Positions, scales and turns (rounded as the records hold them) of the placed rows,
        turned about the look-at point by each image's camera azimuth and scaled by its distance."""
        xs, ys, scale, rotation = [], [], [], []
        for r, a in enumerate(rows):
            view = self.cameras.view(drawn.index[a])
            x, y, k = turn(placed.x[a], placed.y[a], view)
            xs.append(np.round(x, 5).tolist())
            ys.append(np.round(y, 5).tolist())
            scale.append(np.round(placed.scale[a] * k, 5).tolist())
            phi = math.radians(view.azimuth)
            rotation.append([round(math.radians(d) + phi, 5) for d in yaw[r]])
        return xs, ys, scale, rotation

    # -- singles --------------------------------------------------------------------
    def singles(self) -> list[SingleRecord]:
        """One reference record per object (and per colour with --colors), alone at the centre."""
        w, h = self.cfg.resolution
        count = len(self.set.objects)
        ids = np.arange(count)
        centre = np.zeros(count, dtype=np.intp)  # slot M
        scale, _, foot_u, foot_v, frac, _ = self.placer.fit(
            ids, centre, np.full(count, 180), np.full(count, self.cfg.large_fraction), clamp_tall=True)
        xs, ys = self.camera.ground_points(foot_u, foot_v)
        out, seen = [], {}
        for o, s, x, y, f in zip(self.set.objects, scale.tolist(), xs.tolist(), ys.tolist(), frac.tolist()):
            colors = list(o.allowed_colors(self.set.palette)) if self.cfg.colors else [None]
            if self.cfg.colors and not o.colorable:
                colors = colors[:1] or [self.set.default_color]
            if self.holdout is not None and self.holdout.kind == "color" and self.holdout.split == TRAIN:
                colors = [c for c in colors if (o.name, c) not in self.holdout.combos]  # never shown in training
            for color in colors:
                sid = o.name if color is None else f"{o.name}-{color}"
                if sid in seen:  # its image and mask would overwrite another single's
                    raise UserError(f"object set '{self.set.name}': singles '{seen[sid]}' and "
                                    f"{o.name!r} with colour {color!r} share the file name {sid}.png; rename one")
                seen[sid] = o.name if color is None else f"{o.name} ({color})"
                out.append(SingleRecord(
                    id=sid, name=o.name, color=color, image=f"singles/{sid}.png",
                    object_set=self.set.name, object_set_hash=self.set.hash,
                    resolution=[w, h], layout=SINGLE_LAYOUT, large_slot="M",
                    camera=self.camera.to_record(), lights=_lights_many(np.zeros((1, LIGHT_NORMALS)))[0],
                    objects=[ObjectEntry(name=o.name, slot="M", size_rank=0, scale=round(s, 5),
                                         location=[round(x, 5), round(y, 5), 0.0], rotation_z=0.0,
                                         color=color, material=o.material or self.set.materials[0],
                                         planned_fraction=round(f, 6))],
                    mention_orders=[[0]],
                ))
        return out


# Key, fill and back area lights around the scene (CLEVR-like): base position,
# energy and size, jittered per image by normal numbers (sigma 0.5 for positions,
# 5 % for energies).
LIGHTS = (("key", (6.0, -6.0, 10.0), 700.0, 6.0), ("fill", (-7.0, -3.0, 6.0), 250.0, 8.0),
          ("back", (0.0, 9.0, 8.0), 300.0, 6.0))


def _lights_many(normals: np.ndarray) -> list[dict]:
    """The lights of each row of normals (A, 12): per light, 3 for its place, 1 for its energy."""
    z = normals.reshape(-1, len(LIGHTS), 4)
    base = np.array([loc for _, loc, _, _ in LIGHTS])
    energy = np.array([e for _, _, e, _ in LIGHTS])
    where = np.round(base + 0.5 * z[..., :3], 4).tolist()
    power = np.round(energy * (1 + 0.05 * z[..., 3]), 2).tolist()
    return [{**{name: {"location": where[r][i], "energy": power[r][i], "size": size}
                for i, (name, _, _, size) in enumerate(LIGHTS)}, "world": 0.25}
            for r in range(len(where))]
