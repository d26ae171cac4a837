"""The lab: a recipe becomes a graph of cached stages (render, captions, train, probe,
fine-tune, analyses, LABCLIP) and one report that shows where the biases come from."""

from comco.lazy import door

__getattr__, __dir__, __all__ = door(__name__, {
    "Recipe": "recipe", "load_recipe": "recipe", "parse_recipe": "recipe", "SCALES": "recipe",
    "run_lab": "run", "build_stages": "graph", "code_digest": "graph", "write_report": "report",
    "dry_run_lines": "estimate", "plan_lines": "estimate", "dose_lines": "predict", "predict_first_share": "predict",
    "StageFailed": "executors.base", "status_lines": "status",
    "submit_render": "executors.render_jobs", "slurm_settings": "recipe", "require_submitit": "executors",
})
