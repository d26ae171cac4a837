"""comco: measure and remove the order and size biases of CLIP-style models.

Importing comco is cheap: it never imports bpy or torch at import time.
"""

__version__ = "0.1.0"
GENERATOR = f"comco {__version__}"
