"""Planning: every number of every image decided before Blender runs (pure Python, seeded).

The door: a configuration (`PlanConfig`, its parsers and checks) and the `Planner` that
turns it into scene records; captions and the camera model for the code that needs them.
"""

from comco.lazy import door

__getattr__, __dir__, __all__ = door(__name__, {
    "PlanConfig": "config", "check_config": "config", "parse_counts": "config", "parse_slots": "config",
    "parse_resolution": "config", "parse_fraction_range": "config", "MAX_IMAGES": "config",
    "Planner": "planner", "PlanFailure": "planner",
    "Camera": "camera", "POLICIES": "orders", "load_templates": "captions", "split_sentences": "captions",
    "image_seed": "rng", "generator": "rng", "check_seed": "rng",
})
