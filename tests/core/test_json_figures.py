"""`--json` figures carry no float noise: every command's JSON goes through one rounding."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from console.commands import _json
from console.prices import shipped_price_book
from console.scenario import Scenario, project


def console(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=60)


def _digits(number: str) -> int:
    mantissa = number.lower().split("e")[0].lstrip("-").replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) or 1


def test_whatif_json_writes_the_run_cost_as_computed_without_float_noise():
    r = console("whatif", "--json")
    assert r.returncode == 0, r.stderr
    assert '"cost_per_run_usd": 0.864,' in r.stdout  # 1.08 h x $0.80, not 0.8640000000000001
    numbers = re.findall(r"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?", r.stdout)
    assert numbers and max(_digits(n) for n in numbers) <= _json.SIGNIFICANT
    doc = json.loads(r.stdout)
    exact = project(Scenario(), shipped_price_book()).to_dict()
    for key in ("cost_per_run_usd", "runs_per_month", "tenants_monthly_usd", "monthly_usd"):
        assert abs(doc[key] - exact[key]) <= 1e-9 * abs(exact[key]), key
    reference = console("whatif", "--reference", "--json")
    assert reference.returncode == 0, reference.stderr
    numbers = re.findall(r"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?", reference.stdout)
    assert max(_digits(n) for n in numbers) <= _json.SIGNIFICANT


def test_one_rounding_for_every_figure():
    assert _json.figure(0.1 + 0.2) == 0.3
    assert _json.figure(1.08 * 0.8) == 0.864
    assert _json.figure(12_345_678.123456) == 12_345_678.12  # a big month keeps its cents
    assert _json.figure(0.000123456789012) == 0.000123456789  # a small figure never becomes 0
    assert _json.rounded({"a": [0.1 + 0.2, {"b": (2.0000000000000004,)}], "n": 3, "s": "0.30000000000000004"}) == {
        "a": [0.3, {"b": [2.0]}], "n": 3, "s": "0.30000000000000004"}
