"""`console whatif --calibrated`: the same scenario, calibrated from the ledger's real runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from jobjson import job, tenant_labels

from console.costs import RunSpec, estimate_run
from console.ledger import Ledger, default_path


def console(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True,
                          env=dict(os.environ))


def test_calibrated_from_the_ledger_and_plain_json_keys_unchanged():
    plain = json.loads(console("whatif", "--json").stdout)
    assert "calibrated" not in plain and "cheaper_flavors" not in plain

    empty = json.loads(console("whatif", "--json", "--calibrated").stdout)
    assert empty["calibrated"]["calibration_runs"] == 0
    assert empty["calibrated"]["cost_per_run_usd"] == pytest.approx(empty["cost_per_run_usd"])

    hours = estimate_run(RunSpec(3, 1000, 3, "l4x1")).hours
    Ledger(default_path()).record_finished(
        [job(f"r{i}", ran=hours * 3600 * 0.8, labels=tenant_labels(f"t{i}")) for i in range(3)]
    )
    r = console("whatif", "--json", "--calibrated", "--model-b", "3", "--examples", "1000",
                "--epochs", "3", "--flavor", "l4x1", "--tenants", "10")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    for key in plain:
        assert key in data  # every key of the plain answer is still there
    cal = data["calibrated"]
    assert cal["calibration_runs"] == 3 and cal["flavor_runs"] == 3
    assert cal["calibration_factor"] == pytest.approx(0.8, rel=1e-3)
    assert cal["cost_per_run_usd"] == pytest.approx(0.8 * data["cost_per_run_usd"], rel=1e-3)
    assert data["calibration_factor"] == 1.0  # the top-level numbers stay the reference heuristic

    text = console("whatif", "--calibrated", "--model-b", "1", "--examples", "500", "--flavor", "a10g-large")
    assert "Calibrated: x0.8 from all 3 run(s), none on this flavor" in text.stdout
    assert "Cheaper:    t4-small fits the model" in text.stdout


def test_a_factor_blended_from_runs_far_apart_shows_their_spread():
    hours = estimate_run(RunSpec(3, 1000, 3, "l4x1")).hours
    Ledger(default_path()).record_finished([
        job("short", ran=hours * 3600 * 0.12, labels=tenant_labels("t1")),
        job("long", ran=hours * 3600 * 0.81, labels=tenant_labels("t2")),
    ])
    args = ("whatif", "--calibrated", "--model-b", "3", "--examples", "1000", "--epochs", "3", "--flavor", "l4x1")
    text = console(*args).stdout
    assert "Calibrated: x0.312 from 2 run(s) on this flavor (2 in the ledger; runs x0.12 to x0.81)" in text
    assert json.loads(console(*args, "--json").stdout)["calibrated"]["calibration_spread"] == "runs x0.12 to x0.81"
