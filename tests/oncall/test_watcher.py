"""One on-call pass over real jobs: a job killed on its timeout is news once, as a timeout with
what it billed; history from before the first watch is not."""

from __future__ import annotations

from tests.oncall.conftest import SLEEPER, run_python, wait_stage

from console.oncall import Watcher
from console.oncall.store import OnCallStore


def test_a_job_killed_on_its_timeout_is_sent_once_as_a_timeout_with_its_bill(backend, cfg, tmp_path):
    job = run_python(backend, SLEEPER, tenant="acme", timeout=2)
    assert wait_stage(backend, job.id) == "ERROR"
    watcher = Watcher(backend.api, cfg, namespace=backend.namespace,
                      store=OnCallStore(tmp_path / "oncall.sqlite"))
    report = watcher.check()
    [event] = report.events
    assert event.kind == "job_timeout" and event.job_id == job.id and event.level == "ERROR"
    assert event.title == f"acme sft job {job.id} timed out"
    assert event.text.startswith("timeout 2s: killed, billed; billed $")
    assert event.data["reason_source"] == "timeout"
    assert watcher.check().events == []


def test_failures_from_before_the_first_watch_are_history_not_news(backend, cfg, tmp_path):
    job = run_python(backend, "raise SystemExit(2)", tenant="acme")
    assert wait_stage(backend, job.id) == "ERROR"
    # with no look-back, a job that ended before this data dir was first watched is history
    watcher = Watcher(backend.api, cfg, namespace=backend.namespace,
                      store=OnCallStore(tmp_path / "oncall.sqlite"), lookback_s=0)
    assert watcher.check().events == []
    fresh = Watcher(backend.api, cfg, namespace=backend.namespace,
                    store=OnCallStore(tmp_path / "other.sqlite"))
    assert [e.kind for e in fresh.check().events] == ["job_error"]
