"""The burn and timeout forecast: cost so far, cost at the timeout, and the job that will be
killed by its timeout before its last step, flagged with by how much."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from tests.oncall.conftest import TIMEOUT_S, run_python, slow_trackio_code, wait_for

from console.costs import job_cost
from console.oncall import Watcher, forecast_job
from console.oncall.store import OnCallStore
from console.prices import shipped_price_book
from console.trackio_metrics import LocalTrackioReader, RunMetrics

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _job(running_s: float, timeout: int | None = 3600, stage: str = "RUNNING", flavor: str = "l4x1"):
    labels = {"tenant": "acme", "kind": "sft"}
    if timeout:
        labels["timeout"] = str(timeout)
    return SimpleNamespace(
        id="j1", flavor=flavor, labels=labels, created_at=NOW - timedelta(seconds=running_s + 5),
        started_at=NOW - timedelta(seconds=running_s), finished_at=None,
        status=SimpleNamespace(stage=stage, message=None, ssh_url=None),
        durations=None, initiator=None, owner=None,
    )


def _metrics(step: int, max_steps: int, rate: float, last_at: datetime) -> RunMetrics:
    t1 = last_at.timestamp()
    points = tuple((step - 10 + i, t1 - (10 - i) / rate) for i in range(11))
    return RunMetrics("console", "r", step=step, max_steps=max_steps, recent_steps=points)


def test_a_job_that_finishes_in_time_is_costed_so_far_at_timeout_and_to_finish():
    prices = shipped_price_book()
    fc = forecast_job(_job(600), _metrics(100, 400, 1.0, NOW), now=NOW, prices=prices)
    assert fc.cost_so_far_usd == pytest.approx(job_cost(600, "l4x1", prices))
    assert fc.cost_at_timeout_usd == pytest.approx(job_cost(3600, "l4x1", prices))
    assert fc.time_left_s == pytest.approx(3000)
    assert fc.eta_s == pytest.approx(300)  # 300 steps at 1 step/s
    assert not fc.will_time_out and fc.overrun_s == pytest.approx(-2700)
    assert fc.cost_to_finish_usd == pytest.approx(job_cost(900, "l4x1", prices))
    assert fc.short() == "ETA 5m"


def test_a_job_too_slow_for_its_timeout_is_flagged_with_the_shortfall_and_the_step_it_reaches():
    fc = forecast_job(_job(3000), _metrics(100, 2000, 0.5, NOW), now=NOW)
    # 1,900 steps at 0.5/s need 3,800 s; 600 s are left
    assert fc.will_time_out
    assert fc.overrun_s == pytest.approx(3200)
    assert fc.steps_at_timeout == 400
    assert fc.cost_to_finish_usd is None
    assert fc.short() == "OVERRUN 53m"
    assert "WILL TIME OUT at step 400" in fc.line()


def test_time_since_the_last_step_counts_against_the_eta():
    fc = forecast_job(_job(600), _metrics(100, 400, 1.0, NOW - timedelta(seconds=60)), now=NOW)
    assert fc.eta_s == pytest.approx(240)


def test_without_trackio_rate_the_average_since_start_is_used_and_without_steps_no_eta():
    fc = forecast_job(_job(1000), RunMetrics("console", "r", step=100, max_steps=1000), now=NOW)
    assert fc.rate_basis == "average" and fc.step_rate == pytest.approx(0.1)
    bare = forecast_job(_job(1000), None, now=NOW)
    assert bare.eta_s is None and bare.short() == "ETA ?"
    assert bare.cost_at_timeout_usd is not None
    untimed = forecast_job(_job(1000, timeout=None), None, now=NOW)
    assert untimed.cost_at_timeout_usd is None and untimed.time_left_s is None


def test_a_real_job_reporting_trackio_steps_too_slowly_is_flagged_before_its_timeout(
    backend, cfg, tmp_path
):
    run = "acme-slow"
    job = run_python(backend, slow_trackio_code(cfg.trackio.project, run), run=run)
    reader = LocalTrackioReader(backend.trackio_dir)
    metrics = wait_for(
        lambda: (m := reader.run_metrics(cfg.trackio.project, run)).found and len(m.recent_steps) >= 8 and m,
        timeout=60,
    )
    assert metrics.max_steps == 1000 and metrics.step_rate and metrics.step_rate < 10
    watcher = Watcher(backend.api, cfg, namespace=backend.namespace, reader=reader,
                      store=OnCallStore(tmp_path / "oncall.sqlite"))
    report = watcher.check()
    [fc] = [f for f in report.forecasts if f.job_id == job.id]
    assert fc.timeout_seconds == TIMEOUT_S
    assert fc.will_time_out, fc
    # 1,000 steps at ~5 a second need ~200 s; the timeout leaves under 60
    assert 60 < fc.overrun_s < 400
    assert fc.cost_so_far_usd is not None and fc.cost_at_timeout_usd == pytest.approx(
        job_cost(TIMEOUT_S, "t4-small", watcher.prices()))
    kinds = {e.kind: e for e in report.events}
    assert kinds["overrun"].job_id == job.id and "WILL TIME OUT" in kinds["overrun"].text
    alert = kinds["trackio_error"]
    assert alert.job_id == job.id and alert.tenant == "acme" and "Loss diverged" in alert.title
    backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)
