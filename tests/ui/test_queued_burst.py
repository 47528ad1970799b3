"""A burst of queued runs (a fleet's schedules firing at once, more than the backend runs at a time)
costs a quiet refresh nothing per queued job: the read hands back only the jobs the backend now
says something else of, the queued rows stand still, a running job's time keeps counting, and a
queued job that starts shows as running. Schedules that fire run after run are read again once a
while (`FIRED_READ_SECONDS`), not at every refresh that sees a new run."""

from __future__ import annotations

import asyncio

import pytest
from tests.oncall.conftest import job_stage, wait_stage
from tests.ui.conftest import refreshes, run_python, schedule_python, wait_for

from console.config import Config, ServerSettings
from console.ui.app import ConsoleApp
from console.ui.widgets.jobs_table import JobsTable

QUEUED = 12
LONG = "import time\nprint('up', flush=True)\ntime.sleep(600)\n"


@pytest.fixture
def cfg() -> Config:
    return Config(namespace="oncall", plan="pro", server=ServerSettings(max_running_jobs=1))


async def _running(backend, job_id: str) -> None:
    for _ in range(600):
        if await asyncio.to_thread(job_stage, backend, job_id) == "RUNNING":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{job_id} never ran")


async def test_queued_jobs_cost_a_quiet_refresh_nothing_and_the_running_one_keeps_counting(backend, cfg):
    running = run_python(backend, LONG, tenant="runner")
    await _running(backend, running.id)
    queued = [run_python(backend, LONG, tenant=f"q{i:02d}") for i in range(QUEUED)]
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None)
    async with app.run_test(size=(120, 40)) as pilot:
        refresher = app.refresher
        table = app.query_one(JobsTable)
        wanted = {running.id, *(q.id for q in queued)}
        await wait_for(pilot, lambda: refresher.synced and wanted <= refresher.active_ids
                       and wanted <= set(table.rows_by_id), timeout=60, what="every job in the table")
        assert all(table.rows_by_id[q.id].stage == "SCHEDULING" for q in queued)
        ran = refresher.job_rows[running.id].running_seconds
        checked, ticked = refresher.work["jobs_checked"], refresher.work["rows_ticked"]
        count = refresher.refresh_count
        await refreshes(pilot, 6)
        passes = refresher.refresh_count - count
        # nothing the backend says changed: no job handed back, merged or written again
        assert refresher.work["jobs_checked"] == checked
        # the running job's row alone was rebuilt as its time went on, and the table shows it
        assert refresher.work["rows_ticked"] - ticked <= passes
        assert refresher.job_rows[running.id].running_seconds > ran
        assert table.rows_by_id[running.id].running_seconds == refresher.job_rows[running.id].running_seconds

        # the running job ends: a queued job starts, and the table says so
        backend.api.cancel_job(job_id=running.id, namespace=backend.namespace)
        assert await asyncio.to_thread(wait_stage, backend, running.id) == "CANCELED"
        await wait_for(pilot, lambda: table.rows_by_id[running.id].stage == "CANCELED"
                       and any(table.rows_by_id[q.id].stage == "RUNNING" for q in queued),
                       timeout=60, what="the next queued job running")
        for job in queued:
            backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)


async def test_runs_fired_one_after_another_read_the_schedules_once_a_while(backend, cfg, monkeypatch):
    from console.cache import apart
    from console.ui import refresh

    reads = []
    read = apart.read_schedules_apart
    monkeypatch.setattr(apart, "read_schedules_apart", lambda *a, **k: (reads.append(1), read(*a, **k))[1])
    monkeypatch.setattr(refresh, "FIRED_READ_SECONDS", 3600.0)
    sj = schedule_python(backend, "print(1)", tenant="acme", cron="*/2 * * * * *")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(JobsTable)

        def runs() -> set[str]:
            return {r.id for r in table.rows_by_id.values() if r.scheduled_job_id == sj.id}

        await wait_for(pilot, lambda: app.refresher.scheduled_read and runs(), timeout=60, what="a first run")
        before, seen = len(reads), runs()
        await wait_for(pilot, lambda: len(runs() - seen) >= 3, timeout=60, what="three more runs")
        assert len(reads) == before  # each new run shows; the schedules are not read again for it
        monkeypatch.setattr(refresh, "FIRED_READ_SECONDS", 0.0)
        await wait_for(pilot, lambda: len(reads) > before, timeout=60, what="the schedules read again")
    backend.api.delete_scheduled_job(scheduled_job_id=sj.id, namespace=backend.namespace)
