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


def test_idle_time_counts_from_the_jobs_own_last_line_or_step_not_from_the_first_look(tmp_path):
    from console.costs import job_cost
    from console.prices import shipped_price_book

    job = _running(ran=900)
    detector = StallDetector(OnCallStore(tmp_path / "s.sqlite"), stall_after_s=300)
    silent = T0.timestamp() - 390  # its last line, 6.5 minutes before this console first looked
    first = detector.observe(job, log_tail=["loading"], step=None, cpu_pct=0.1, now=T0, last_output_at=silent)
    assert first.stalled and first.idle_s == pytest.approx(390) and first.idle_since == pytest.approx(silent)
    prices = shipped_price_book()
    assert first.billed_since_usd == pytest.approx(
        job_cost(900, "a100-large", prices) - job_cost(510, "a100-large", prices))
    assert "STALLED 6m" in first.line()
    # a later Trackio step is the later sign of life
    detector = StallDetector(OnCallStore(tmp_path / "t.sqlite"), stall_after_s=300)
    stepped = detector.observe(job, log_tail=["loading"], step=7, cpu_pct=0.1, now=T0,
                               last_output_at=silent, last_step_at=T0.timestamp() - 100)
    assert not stepped.stalled and stepped.idle_s == pytest.approx(100)
    # a job that printed nothing at all is idle since it started
    detector = StallDetector(OnCallStore(tmp_path / "u.sqlite"), stall_after_s=300)
    mute = detector.observe(job, log_tail=[], step=None, cpu_pct=0.0, now=T0)
    assert mute.stalled and mute.idle_s == pytest.approx(900)


def test_a_real_sleeping_job_is_stalled_from_its_last_line_and_reported_once_even_after_a_restart(
    backend, cfg, tmp_path
):
    cfg.billing.granularity = "second"  # so the seconds billed since the stall show
    cfg.notify.stall_after_s = 2
    job = run_python(backend, SLEEPER, tenant="acme")
    wait_for(lambda: log_has(backend, job.id, "loading the data set"))
    [(stamp, _)] = [e for e in backend.api.fetch_job_log_entries(job_id=job.id, namespace=backend.namespace)
                    if "loading the data set" in e[1]]
    printed = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    wait_for(lambda: time.time() - printed > 3.0, timeout=30)  # silent for longer than stall_after_s
    store_path = tmp_path / "oncall.sqlite"
    watcher = Watcher(backend.api, cfg, namespace=backend.namespace, store=OnCallStore(store_path))
    first = watcher.check()  # the first look of a console that just opened
    [status] = first.stalls
    assert status.stalled, status
    assert status.idle_since == pytest.approx(printed, abs=0.01) and status.idle_s > 3.0
    assert status.cpu_pct is not None and status.cpu_pct <= cfg.notify.stall_cpu_pct
    assert status.billed_since_usd is not None and status.billed_since_usd > 0
    [event] = [e for e in first.events if e.kind == "stall"]
    assert event.job_id == job.id and event.tenant == "acme" and "billed since" in event.text

    again = watcher.check()
    assert again.stalls[0].stalled and not [e for e in again.events if e.kind == "stall"]
    restarted = Watcher(backend.api, cfg, namespace=backend.namespace, store=OnCallStore(store_path))
    third = restarted.check()
    assert third.stalls[0].stalled  # still stalled, the same stall: not sent again
    assert third.stalls[0].idle_since == pytest.approx(printed, abs=0.01)
    assert not [e for e in third.events if e.kind == "stall"]
    backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)
