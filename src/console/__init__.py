"""console: a keyboard-driven terminal console for a fleet of per-tenant LoRA training jobs on HF Jobs.

Importing this package is cheap on purpose: no Textual, no trackio, no training stack.
"""

__version__ = "0.1.0"
