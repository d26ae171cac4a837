"""Everything that measures a model: embedding with caches, TOR, IOR, I2TOR, matching,
TOC/IOC, binding, attention, text sensitivity,
competence gates; natural benchmarks in `natural`."""

from comco.lazy import door

__getattr__, __dir__, __all__ = door(__name__, {
    "PROBES": "runner", "ProbeOptions": "runner", "parse_probes": "runner", "run_probes": "runner",
    "write_reports": "page", "probe_rows": "report",
    "Embedder": "embed", "DEFAULT_CACHE": "embed", "open_dataset": "probe_data",
    "sensitivity": "sensitivity", "tor_summary": "sensitivity",
    "name_list": "texts", "check_gallery": "tor",
    "MAX_BOOTSTRAP": "stats", "check_aggregate": "aggregate",
    "caption_retrieval": "caption_retrieval", "development_point": "development",
    "GATE_FIGURES": "gates", "gate_figures": "gates", "gate_passes": "gates", "ior_present_only": "gates",
    "near_ties": "retrieval", "mostly_ties": "retrieval", "MOSTLY": "retrieval", "NO_PREFERENCE": "retrieval",
    "TIE_RULE": "retrieval",
    "half_truth_groups": "half_truth", "HALF_TRUTH_METRIC": "half_truth",
    "binding_lines": "binding_page", "write_binding_page": "binding_page",
})
