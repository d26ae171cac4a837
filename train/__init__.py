"""Everything that changes a model: from-scratch CLIPs, Long-CLIP and DeBias-CLIP
fine-tuning, LABCLIP, the loop and its samplers. torch loads on first use."""

from comco.lazy import door

__getattr__, __dir__, __all__ = door(__name__, {
    "KINDS": "run", "make_config": "run", "run_training": "run", "kind_defaults": "run",
    "save_initial": "scratch", "list_snapshots": "snapshots", "SPACINGS": "snapshots",
    "OBJECTIVES": "objectives", "is_text_only": "objectives",
    "cpu_precision": "precision", "cpu_flags": "precision", "native_bf16": "precision",
})
