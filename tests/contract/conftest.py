"""The contract tests import the HF answer shapes (`hf_shapes`) from this folder."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
