"""The render worker: one bpy per process, a base scene built once, jobs over a pipe.

Each job is a scene record (or a single-object reference record). The worker sets
camera and lights, links the record's objects from its cache, renders the image
(written atomically), measures every object with an ID render, and answers with the
record plus measurements, or with the reason it failed.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import tempfile
import traceback

from comco.io import atomic_path
from comco.manifest import load_object_set


def _redirect_output(out: str) -> None:
    """Blender prints a line per render and GL warnings; the parent's progress bar owns the
    terminal, so a worker's stdout and stderr go to `<out>/.logs/worker-<pid>.log`."""
    logs = os.path.join(out, ".logs")
    os.makedirs(logs, exist_ok=True)
    fd = os.open(os.path.join(logs, f"worker-{os.getpid()}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _check_written(path: str) -> None:
    """Blender reports a failed write only in its log; read the PNG back before trusting it."""
    from PIL import Image

    try:
        with Image.open(path) as img:
            img.verify()
    except (OSError, SyntaxError) as exc:
        free = shutil.disk_usage(os.path.dirname(path)).free
        if free < 1 << 20:
            raise OSError(errno.ENOSPC, f"no space left writing {path}") from None
        raise RuntimeError(f"Blender wrote an unreadable image {path}: {exc}") from None


def _use_scratch(cfg: dict) -> str:
    """The parent's scratch folder for this worker (it removes it when the worker ends or is
    killed); Blender's own temp files go there too, so a killed worker leaves nothing behind."""
    work = cfg["scratch"]
    os.environ["TMPDIR"] = work  # read by Blender when bpy is imported
    tempfile.tempdir = work
    return work


def serve(conn, cfg: dict) -> None:
    _redirect_output(cfg["out"])
    work = _use_scratch(cfg)
    import bpy  # noqa: F401  (first import of bpy happens here, in the worker process)

    from comco.scenes.instancer import Instancer, ObjectBuildError
    from comco.scenes.measure import build_id_scene
    from comco.scenes.stage import build_stage, reset

    reset()
    w, h = cfg["resolution"]
    scene = build_stage(cfg["preset"], w, h, cfg.get("device", "cpu"), cfg.get("samples"), cfg.get("threads", 0))
    if cfg.get("passes"):
        from comco.scenes.passes import enable

        enable(scene, tuple(cfg["passes"]))
    objects = bpy.data.collections.new("objects")
    scene.collection.children.link(objects)
    id_scene = build_id_scene(scene, objects)
    inst = Instancer(load_object_set(cfg["object_set"]), objects)
    root = cfg["out"]
    conn.send({"kind": "ready", "pid": os.getpid()})
    done = 0
    limit = cfg.get("max_per_worker", 10**9)
    while True:
        job = conn.recv()
        if job is None:
            break
        record = job["record"]
        try:
            reply = _render_job(job, record, scene, id_scene, inst, root, work, done)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                reply = {"kind": "error", "record": record, "reason": traceback.format_exc(limit=4)}
            else:
                reply = {"kind": "disk_full", "record": record, "reason": str(exc)}
        except ObjectBuildError as exc:
            reply = {"kind": "failed", "record": record, "reason": f"broken object: {exc}"}
        except Exception:
            reply = {"kind": "error", "record": record, "reason": traceback.format_exc(limit=4)}
        finally:
            inst.clear()
        done += 1
        # The answer itself says that this worker retires, so no new job is sent to a
        # process that is about to exit (a job sent after a separate "retire" was lost).
        reply["last"] = done >= limit
        conn.send(reply)
        if reply["last"]:
            break


def stage_record(scene, inst, record: dict) -> list:
    """Set the base scene to one record (camera, lights, world, floor) and add its objects;
    returns the live objects (inst.clear() takes them away again)."""
    from comco.scenes.floors import set_floor
    from comco.scenes.stage import set_camera, set_lights, set_world

    set_camera(scene, record["camera"])
    set_lights(scene, record["lights"])
    set_world(scene, record.get("world"))
    set_floor(scene, record.get("floor"))
    return [inst.add(o, i) for i, o in enumerate(record["objects"])]


def _render_job(job, record, scene, id_scene, inst, root, work, done) -> dict:
    from comco.scenes.measure import measure, save_mask
    from comco.scenes.stage import render_to

    live = stage_record(scene, inst, record)
    final = os.path.join(root, record["image"])
    # The image counts only once it is measured (and its mask written): until then it is a
    # temporary file beside the final one, which a killed run's successor sweeps away.
    with atomic_path(final) as tmp:
        render_to(scene, str(tmp))
        _check_written(str(tmp))
        measured, labels = measure(id_scene, live, work, occlusion="relations" in record)
        for o, m in zip(record["objects"], measured):
            o["measured"] = m
        if job.get("mask"):
            save_mask(labels, os.path.join(root, "masks", os.path.basename(record["image"])))
        _write_outputs(scene, record, labels, root, work)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"kind": "done", "record": record, "rss_mb": rss_mb, "served": done + 1}


def _write_outputs(scene, record: dict, labels, root: str, work: str) -> None:
    """The record's depth and normal maps (before its image is final, so a resumed render never
    finds an image without them) and its measured occlusion order."""
    passes = {}
    if "depth" in record or "normals" in record:
        from comco.scenes.passes import read_passes, save_depth, save_normals

        passes = read_passes(scene, work)
        if "depth" in record:
            save_depth(passes["depth"], os.path.join(root, record["depth"]))
        if "normals" in record:
            save_normals(passes["normals"], scene.camera, os.path.join(root, record["normals"]))
    if "depth" in passes:
        from comco.scenes.measure import visible_depths

        for o, d in zip(record["objects"], visible_depths(labels, passes["depth"], len(record["objects"]))):
            o["measured"]["depth_m"] = d
    if "relations" in record:
        from comco.plan import camera_frame, occlusion_order

        # ties between objects that hide nothing of each other: the nearer ground point first
        distances = [d for _, _, d in camera_frame(record, [0.0] * len(record["objects"]))]
        record["occlusion_order"] = occlusion_order([o["measured"]["occluded_by"] for o in record["objects"]],
                                                    distances)
