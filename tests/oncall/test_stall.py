"""Stalled-but-billing: a running job with no new log line, no new Trackio step and idle CPU for
the configured time is flagged with what it billed since, once per stall, across restarts."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from tests.oncall.conftest import SLEEPER, log_has, run_python, wait_for

from console.oncall import StallDetector, Watcher
from console.oncall.store import OnCallStore

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _running(job_id: str = "j1", ran: float = 600):
    return SimpleNamespace(
        id=job_id, flavor="a100-large", labels={"tenant": "acme"}, created_at=T0,
        started_at=T0 - timedelta(seconds=ran), finished_at=None, durations=None,
        status=SimpleNamespace(stage="RUNNING", message=None, ssh_url=None), initiator=None, owner=None,
    )


def test_idle_for_the_configured_time_is_a_stall_and_any_sign_of_life_clears_it(tmp_path):
    detector = StallDetector(OnCallStore(tmp_path / "s.sqlite"), stall_after_s=300, idle_cpu_pct=1.0)
    job = _running()
    look = dict(log_tail=["a", "b"], step=10, cpu_pct=0.2)
    first = detector.observe(job, now=T0, **look)
    assert not first.stalled and first.idle_s == 0  # first seen: active now
    assert not detector.observe(job, now=T0 + timedelta(seconds=299), **look).stalled
    stalled = detector.observe(job, now=T0 + timedelta(seconds=301), **look)
    assert stalled.stalled and stalled.idle_s == pytest.approx(301)
    assert stalled.billed_since_usd and stalled.billed_since_usd > 0
    assert "STALLED 5m" in stalled.line()
    # a new log line, a new step or a busy CPU each count as activity
    for change in ({"log_tail": ["a", "b", "c"]}, {"step": 11}, {"cpu_pct": 50.0}):
        detector = StallDetector(OnCallStore(tmp_path / f"{len(change)}{list(change)[0]}.sqlite"),
                                 stall_after_s=300)
        detector.observe(job, now=T0, **look)
        status = detector.observe(job, now=T0 + timedelta(seconds=400), **{**look, **change})
        assert not status.stalled and status.idle_s == 0, change


def test_no_cpu_figure_neither_clears_nor_proves_a_stall(tmp_path):
    detector = StallDetector(OnCallStore(tmp_path / "s.sqlite"), stall_after_s=60)
    job = _running()
    detector.observe(job, log_tail=["x"], step=None, cpu_pct=0.0, now=T0)
    blind = detector.observe(job, log_tail=["x"], step=None, cpu_pct=None, now=T0 + timedelta(seconds=90))
    assert not blind.stalled and blind.idle_s == pytest.approx(90)
    seen = detector.observe(job, log_tail=["x"], step=None, cpu_pct=0.0, now=T0 + timedelta(seconds=95))
    assert seen.stalled and seen.idle_s == pytest.approx(95)


def test_a_real_sleeping_job_is_reported_stalled_once_even_after_a_restart(backend, cfg, tmp_path):
    cfg.billing.granularity = "second"  # so the seconds billed since the stall show
    job = run_python(backend, SLEEPER, tenant="acme")
    wait_for(lambda: log_has(backend, job.id, "loading the data set"))
    store_path = tmp_path / "oncall.sqlite"
    watcher = Watcher(backend.api, cfg, namespace=backend.namespace, store=OnCallStore(store_path))
    first = watcher.check()
    assert [s.job_id for s in first.stalls] == [job.id]
    assert not first.stalls[0].stalled and not [e for e in first.events if e.kind == "stall"]
    time.sleep(cfg.notify.stall_after_s + 0.5)
    second = watcher.check()
    [status] = second.stalls
    assert status.stalled, status
    assert status.cpu_pct is not None and status.cpu_pct <= cfg.notify.stall_cpu_pct
    assert status.billed_since_usd is not None and status.billed_since_usd > 0
    [event] = [e for e in second.events if e.kind == "stall"]
    assert event.job_id == job.id and event.tenant == "acme" and "billed since" in event.text

    restarted = Watcher(backend.api, cfg, namespace=backend.namespace, store=OnCallStore(store_path))
    third = restarted.check()
    assert third.stalls[0].stalled  # still stalled, the same stall: not sent again
    assert not [e for e in third.events if e.kind == "stall"]
    backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)
