"""comco: measure and remove the order and size biases of CLIP-style models.

Importing comco is cheap: it never imports bpy or torch at import time.
"""

__version__ = "0.2.0"
GENERATOR = f"comco {__version__}"
# What the planner makes of a configuration and seed. Bumped whenever the same ones
# plan other scenes (2: batched planner, one stream per attempt, fills, the large object
# drawn among those that can be large), so that a dataset
# is never resumed or merged with plans of another version: it is in the config hash.
PLAN_VERSION = 2
# The same for pair variants alone (2: swap-size exchanges the base's reached shares and
# swap-slots keeps them): in the hash of pair datasets only, so no other dataset changes.
PAIRS_VERSION = 2

# The public API (comco/api.py), loaded on first use: `import comco` stays cheap.
from comco.lazy import door as _door  # noqa: E402

__all__ = ["plan_dataset", "render_dataset", "load_dataset", "load_model", "probe", "probe_table",
           "load_probe_results", "load_lab_result"]
# render_setup: the checked configuration of a render, for the command line's cluster path (not in __all__)
__getattr__ = _door(__name__, dict.fromkeys([*__all__, "render_setup"], "api"))[0]
