"""The per-image outputs a plan decides: where the depth and normal maps go, and the relations
graph of the planned objects (pure Python; the worker adds the measured occlusion order).

Relations are read from the planned 3-D positions as the camera sees them
(comco.plan.camera.Camera): left of / right of and above / below along the image's axes (the
projected centres: ground position, half the planned height up), in front of / behind along the
camera's viewing axis (the ground positions' distance from the camera plane, as CLEVR reads
"behind": a tall object's raised centre would otherwise come nearer than where it stands).
A pair closer than MARGIN on an axis has no relation on it, so near-ties are never guessed.
Both directions are recorded (A left of B and B right of A).
"""

from __future__ import annotations

from pathlib import PurePosixPath

from comco.plan.camera import Camera
from comco.record import DEPTH_FOLDER, DEPTH_UNIT_M, NORMALS_FOLDER, Relation

# An axis relation needs this much difference: 2 % of the image's width on the image axes,
# 2 % of the mean distance from the camera plane on the viewing axis.
MARGIN = 0.02


def output_path(record: dict, folder: str) -> str:
    """A per-image output's path: the record's image name in `folder` ("depth/000042.png")."""
    return f"{folder}/{PurePosixPath(record['image']).name}"


def add_outputs(record: dict, cfg, heights: list[float]) -> None:
    """Give a planned record the outputs its configuration asks for (fields only when asked).

    Args:
        record: a scene record with its final image name.
        cfg: the plan configuration (depth, normals, relations).
        heights: each object's planned height in metres (the relations read its centre)."""
    if cfg.depth:
        record["depth"] = output_path(record, DEPTH_FOLDER)
    if cfg.normals:
        record["normals"] = output_path(record, NORMALS_FOLDER)
    if cfg.relations:
        record["relations"] = relations(record, heights)


def camera_frame(record: dict, heights: list[float]) -> list[tuple[float, float, float]]:
    """Each object's planned centre as the camera sees it: (u, v) pixels and the distance from the
    camera plane in metres."""
    w, h = record["resolution"]
    cam = Camera.from_record(record["camera"], w, h)
    return [cam.project((o["location"][0], o["location"][1], o["location"][2] + z / 2))
            for o, z in zip(record["objects"], heights)]


def relations(record: dict, heights: list[float]) -> list[Relation]:
    """The relations graph of a record's objects, every ordered pair, in a fixed order."""
    seen = camera_frame(record, heights)
    ground = [d for _, _, d in camera_frame(record, [0.0] * len(heights))]
    width = record["resolution"][0]
    depth_margin = MARGIN * sum(ground) / len(ground)
    out: list[Relation] = []
    for i, ((ui, vi, _), di) in enumerate(zip(seen, ground)):
        for j, ((uj, vj, _), dj) in enumerate(zip(seen, ground)):
            if i == j:
                continue
            for differs, margin, less, more in ((ui - uj, MARGIN * width, "left of", "right of"),
                                                (vi - vj, MARGIN * width, "above", "below"),
                                                (di - dj, depth_margin, "in front of", "behind")):
                if abs(differs) > margin:
                    out.append(Relation(subject=i, predicate=less if differs < 0 else more, object=j))
    return out


def occlusion_order(occluded_by: list[list[int]], distances: list[float]) -> list[int]:
    """Objects front to back: an object that hides part of another comes before it (measured);
    among objects the measurements leave unordered, the nearer planned centre first. A cycle of
    occlusions (interlocking shapes) is broken at its nearest object.

    Args:
        occluded_by: per object, the objects seen over part of it.
        distances: per object, its planned centre's distance from the camera plane."""
    blockers = [set(b) - {i} for i, b in enumerate(occluded_by)]
    left, order = set(range(len(occluded_by))), []
    while left:
        free = [i for i in left if not (blockers[i] & left)] or list(left)
        pick = min(free, key=lambda i: (distances[i], i))
        order.append(pick)
        left.discard(pick)
    return order


def outputs_info(cfg) -> dict | None:
    """dataset.json's `outputs`: what each per-image output holds and how to read it (None: none)."""
    out = {}
    if cfg.depth:
        out["depth"] = {"field": "depth", "folder": DEPTH_FOLDER, "format": "png16", "unit_m": DEPTH_UNIT_M,
                        "invalid": 0, "measures": "distance from the camera plane (z-depth), metres"}
    if cfg.normals:
        out["normals"] = {"field": "normals", "folder": NORMALS_FOLDER, "format": "png8-rgb",
                          "space": "camera (x right, y up, z towards the viewer)",
                          "decode": "n = rgb / 255 * 2 - 1; (0, 0, 0) = no surface"}
    if cfg.relations:
        out["relations"] = {"field": "relations", "margin": MARGIN,
                            "occlusion": "objects[i].measured.occluded_by, occlusion_order (front to back)"}
    return out or None
