"""The code stays ruff-clean (the rules are in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing():
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "src", "tests", "training", "benchmarks"],
        cwd=REPO, capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-1000:]
