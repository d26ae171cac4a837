"""Validity of a rendered scene, from its measurements (pure Python, testable without bpy)."""

from __future__ import annotations


def check_rendered(record: dict, min_pixels: int, min_visible: float) -> str | None:
    """None if the render realises the plan, else the first reason it does not."""
    objs = record["objects"]
    for i, o in enumerate(objs):
        m = o.get("measured")
        if m is None:
            return f"objects[{i}] {o['name']}: not measured"
        if m["pixels"] < min_pixels:
            return f"objects[{i}] {o['name']}: {m['pixels']} visible pixels < --min-pixels {min_pixels}"
        if m.get("touches_border"):
            return f"objects[{i}] {o['name']}: cut by the image border"
        if m["visible_fraction"] < min_visible:
            return (
                f"objects[{i}] {o['name']}: visible fraction {m['visible_fraction']:.2f} < --min-visible {min_visible}"
            )
    measured_order = sorted(range(len(objs)), key=lambda i: -objs[i]["measured"]["pixels"])
    if record["layout"] == "one-large" and len(objs) > 1:
        large = next(i for i, o in enumerate(objs) if o["size_rank"] == 0)
        if measured_order[0] != large:
            big = objs[measured_order[0]]
            return (
                f"planned-large {objs[large]['name']} measures {objs[large]['measured']['pixels']} px, "
                f"less than {big['name']} ({big['measured']['pixels']} px)"
            )
    if record["layout"] == "graded":
        planned = sorted(range(len(objs)), key=lambda i: objs[i]["size_rank"])
        if planned != measured_order:
            return "measured size ranks differ from the planned ones"
    return None
