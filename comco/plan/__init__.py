"""Planning: every number of every image decided before Blender runs (pure Python, seeded).

The door: a configuration (`PlanConfig`, the option declarations it is built from, their
parsers and checks) and the `Planner` that turns it into scene records; captions and the
camera model for the code that needs them.
"""

from comco.lazy import door

__getattr__, __dir__, __all__ = door(__name__, {
    "PlanConfig": "config", "check_config": "config", "plan_options": "options", "PlanOption": "options",
    "check_option": "options", "WHEN_SET": "options", "MAX_IMAGES": "options",
    "parse_counts": "parse", "parse_slots": "parse", "parse_resolution": "parse", "parse_fraction_range": "parse",
    "parse_pairs": "parse",
    "Planner": "planner", "PlanFailure": "planner",
    "Camera": "camera", "POLICIES": "orders", "load_templates": "captions", "split_sentences": "captions",
    "image_seed": "rng", "generator": "rng", "check_seed": "rng",
    "outputs_info": "relations", "output_path": "relations", "occlusion_order": "relations",
    "camera_frame": "relations",
    "parse_worlds": "worlds", "resolve_holdout": "holdout",
})
