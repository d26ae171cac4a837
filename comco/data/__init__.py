"""Dataset folders: read (`Dataset`), write a plan (`run_plan`), validate, merge shards, export.

A folder holds dataset.json, scenes.jsonl (see comco.record), images/, singles/ and the
Hugging Face metadata.jsonl; the file names are the constants below.
"""

from comco.lazy import door

__getattr__, __dir__, __all__ = door(__name__, {
    "Dataset": "folder", "INFO": "folder", "SCENES": "folder", "SINGLES": "folder", "METADATA": "folder",
    "FAILURES": "folder", "config_hash": "folder", "make_info": "folder", "prepare_out": "folder",
    "check_writable": "folder", "metadata_rows": "folder",
    "run_plan": "writer", "write_plan": "writer", "make_planner": "writer", "dataset_info": "writer",
    "validate_dataset": "validate", "require_usable_images": "validate", "merge_shards": "merge",
    "export_dataset": "export", "EXPORT_FORMATS": "export",
    "pair_sheet": "sheet", "dataset_sheet": "sheet",
    "PAIR_FACTORS": "pairing", "FACTOR_TEMPLATES": "pairing", "find_pairs": "pairing", "has_pairs": "pairing",
})
