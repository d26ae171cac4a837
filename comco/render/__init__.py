"""The render run: plans scenes, drives a pool of Blender worker processes (each imports
bpy; this package never does), checks what they measured and writes the dataset."""

from comco.lazy import door

__getattr__, __dir__, __all__ = door(__name__, {
    "RenderOptions": "options", "run_render": "run", "check_passes": "run", "parse_shard": "options",
    "DEVICES": "options",
    "check_rendered": "checks", "coco_annotations": "coco",
})
