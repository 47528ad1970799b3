"""Calibration compares like with like: a run stopped at max_steps is compared with the heuristic of
the steps it trained (max_steps x its recipe's batch), not of its epochs, and the spread of the runs
behind the factor is shown. Runs of 600 and 5,000 steps that each took exactly their heuristic time
calibrate to x1, not to a blend of x0.15 and x1.2."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from jobjson import job, tenant_labels

from console.costs import RunSpec, estimate_run
from console.ledger import Ledger, entry_from_job, estimate_calibration, summarize

NOW = datetime(2026, 12, 15, 12, tzinfo=UTC)


def _runs() -> list:
    out = []
    for i, steps in enumerate((600, 5000, 600, 5000)):
        hours = estimate_run(RunSpec(3, 1000, 3, "l4x1", max_steps=steps)).hours
        out.append(job(f"r{i}", ran=round(hours * 3600), labels={**tenant_labels("acme"), "max_steps": str(steps)}))
    return out


def test_step_capped_runs_calibrate_per_step_from_the_entries_and_from_the_store(tmp_path):
    cal, basis = estimate_calibration([entry_from_job(j) for j in _runs()])
    assert basis == "local" and cal.runs == 4
    assert cal.factor_for("l4x1") == pytest.approx(1.0, abs=1e-3)
    assert cal.spread() == "runs x1 to x1"
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.record_finished(_runs(), None, now=NOW)
    stored, _ = ledger.calibration_from_store()
    assert stored.factor_for("l4x1") == pytest.approx(1.0, abs=1e-3) and stored.runs == 4


def test_the_summary_shows_the_spread_of_the_runs_behind_the_calibration():
    uneven = [job("a", ran=3600, labels=tenant_labels("acme")), job("b", ran=7200, labels=tenant_labels("acme"))]
    s = summarize([entry_from_job(j) for j in uneven], now=NOW)
    low, high = 3600 / 3600 / 1.08, 7200 / 3600 / 1.08  # observed / heuristic (1.08 h) of each run
    assert s.calibration_runs == 2 and s.calibration_spread == f"runs x{low:.3g} to x{high:.3g}"
