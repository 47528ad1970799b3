"""One on-call pass over real jobs: a job killed on its timeout is news once, as a timeout with
what it billed; history from before the first watch is not, and is not read either."""

from __future__ import annotations

import sys
import time

from tests.oncall.conftest import SLEEPER, labels, run_python, wait_stage

from console.oncall import Watcher
from console.oncall.store import OnCallStore
from console.server.core import new_id
from console.server.jobs.store import JobRecord


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


class _CountingApi:
    """The backend's HfApi, counting the jobs its job lists hand over (what a pass reads)."""

    def __init__(self, api) -> None:
        self._api = api
        self.listed = 0

    def list_jobs(self, **kwargs):
        for job in self._api.list_jobs(**kwargs):
            self.listed += 1
            yield job

    def __getattr__(self, name):
        return getattr(self._api, name)


def _record(namespace: str, created: float, stage: str, code: str, tenant: str = "acme") -> JobRecord:
    job_labels = labels(tenant, None, timeout="600")
    return JobRecord(
        id=new_id(), namespace=namespace, created_at=created, stage=stage,
        spec={"dockerImage": "python:3.12", "command": [sys.executable, "-u", "-c", code],
              "flavor": "t4-small", "labels": job_labels, "timeoutSeconds": 600},
        labels=job_labels, started_at=None if stage == "SCHEDULING" else created + 20,
        finished_at=None if stage == "SCHEDULING" else created + 300,
        message="CUDA out of memory" if stage == "ERROR" else None,
    )


def test_a_pass_reads_what_may_be_news_not_the_whole_history(backend, cfg, server, tmp_path):
    """A namespace with 3,000 finished jobs from last week: a pass reads the jobs of its look-back,
    the active ones, and a job it saw running that ended since, however old; not the history."""
    week_ago = time.time() - 7 * 86400
    server.service.store.insert_jobs_bulk(
        _record(backend.namespace, week_ago + n * 60, "ERROR" if n % 10 == 3 else "COMPLETED", "pass")
        for n in range(3000)
    )
    # a job that has been queued for days, then runs and fails while the watcher watches
    old = _record(backend.namespace, week_ago - 86400, "SCHEDULING",
                  "import time\nprint('training', flush=True)\ntime.sleep(3)\nraise SystemExit(3)\n")
    server.service.store.insert_jobs_bulk([old])
    assert wait_stage(backend, old.id, ("RUNNING",)) == "RUNNING"

    api = _CountingApi(backend.api)
    watcher = Watcher(api, cfg, namespace=backend.namespace, store=OnCallStore(tmp_path / "oncall.sqlite"))
    first = watcher.check()
    assert first.events == [] and first.running == 1  # last week's failures are history
    assert api.listed < 100, api.listed  # not 3,001 jobs

    fresh = run_python(backend, "raise SystemExit(2)", tenant="globex")
    assert wait_stage(backend, fresh.id) == "ERROR" and wait_stage(backend, old.id) == "ERROR"
    api.listed = 0
    second = watcher.check()
    assert sorted((e.kind, e.job_id) for e in second.events) == sorted(
        [("job_error", fresh.id), ("job_error", old.id)])
    assert api.listed < 100, api.listed


def test_a_budget_pass_summarizes_the_ledger_without_keeping_its_entries(backend, cfg, tmp_path):
    from console.ledger import Ledger

    class CountedLedger(Ledger):
        loads = 0

        def entries(self, *args, **kwargs):
            CountedLedger.loads += 1
            return super().entries(*args, **kwargs)

    cfg.monthly_budget_usd = 0.000001  # any spend is over it
    # a second of t4-small: a job of a few ms costs less than the ledger's smallest unit
    job = run_python(backend, "import time; time.sleep(1); print('done')", tenant="acme")
    assert wait_stage(backend, job.id) == "COMPLETED"
    ledger = CountedLedger(tmp_path / "ledger.sqlite")
    watcher = Watcher(backend.api, cfg, namespace=backend.namespace, ledger=ledger,
                      store=OnCallStore(tmp_path / "oncall.sqlite"))
    report = watcher.check()
    assert report.summary is not None and report.summary.entries == 1
    assert report.summary.month_to_date_usd > 0 and report.summary.over_budget
    # a fleet's ledger is 100,000 entries (75 MB as objects): the totals come from SQLite
    assert CountedLedger.loads == 0


def test_a_pass_keeps_no_copy_of_the_schedules_its_caller_gave(backend, cfg, tmp_path):
    """The app gives each pass its own schedules (10,000 at a fleet's scale) and replaces them on
    its next read of them: once the pass is over the watcher holds none of them, for its budget
    projection nor its stale-live check, so a replaced copy is not kept alive beside the new one."""
    import gc
    import weakref

    from tests.ui.conftest import schedule_python

    from console import jobspec
    from console.ledger import Ledger

    class Given(list):  # a list that can be watched for being let go
        pass

    schedule_python(backend, tenant="acme")
    watcher = Watcher(backend.api, cfg, namespace=backend.namespace, ledger=Ledger(tmp_path / "ledger.sqlite"),
                      store=OnCallStore(tmp_path / "oncall.sqlite"))
    given = Given(jobspec.keep_schedule(s) for s in backend.api.list_scheduled_jobs(namespace=backend.namespace))
    report = watcher.check(given)
    assert report.summary is not None and len(report.summary.schedules) == 1  # the pass read them
    gone = weakref.ref(given)
    del given
    gc.collect()
    assert gone() is None


def test_a_budget_projection_made_again_keeps_the_money_it_finds_unchanged(backend, cfg, tmp_path, monkeypatch):
    """Each budget projection (and the costs pane's summary after each whole re-read) works out
    every schedule's money again: 10,000 at a fleet's scale. What did not change stays the object
    held from the last projection; a schedule that changed gets its new figures."""
    from tests.ui.conftest import schedule_python

    from console.ledger import Ledger
    from console.oncall import watcher as watcher_module

    monkeypatch.setattr(watcher_module, "BUDGET_EVERY_S", 0.0)  # project at every pass
    acme = schedule_python(backend, tenant="acme")
    schedule_python(backend, tenant="globex")
    watcher = Watcher(backend.api, cfg, namespace=backend.namespace, ledger=Ledger(tmp_path / "ledger.sqlite"),
                      store=OnCallStore(tmp_path / "oncall.sqlite"))
    first = {m.tenant: m for m in watcher.check().summary.schedules}
    second = {m.tenant: m for m in watcher.check().summary.schedules}
    assert first.keys() == second.keys() == {"acme", "globex"}
    assert all(second[t] is first[t] for t in first)

    backend.api.suspend_scheduled_job(scheduled_job_id=acme.id, namespace=backend.namespace)
    third = {m.tenant: m for m in watcher.check().summary.schedules}
    assert third["acme"].suspended and third["acme"] is not second["acme"]
    assert third["globex"] is second["globex"]
