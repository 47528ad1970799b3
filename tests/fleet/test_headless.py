"""fleet, jobs and jobspec are headless: they import neither Textual nor the training stack."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "console.fleet",
        "console.jobs",
        "console.jobspec",
        "console.commands.fleet",
        "console.commands.demo",
    ],
)
def test_no_textual_no_torch(module):
    code = (
        f"import sys, {module}\n"
        "bad = [m for m in ('textual', 'torch', 'trl', 'peft', 'trackio') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
