"""The refresh follows what changed: a tenant's run that completes or fails updates that tenant's
fleet row (its last loss and adapter, why it failed), and a quiet refresh looks at no tenant and
no job at all, however many tenants the fleet has (the refresher and the reasons keep counters of
what they looked at, for their own diagnostics)."""

from __future__ import annotations

import asyncio
import sys
import time

from tests.oncall.conftest import wait_stage
from tests.ui.conftest import console_labels, wait_for

from console.cache.latest import RunMark
from console.server.core import new_id
from console.server.jobs.store import JobRecord
from console.ui.app import ConsoleApp

OTHER_TENANTS = 40


def _history(backend, tenants: int) -> None:
    """Finished runs of other tenants, straight into the server's store (one each, one in four failed)."""
    now = time.time()
    records = []
    for i in range(tenants):
        labels = console_labels(f"zz{i:02d}")
        failed = i % 4 == 1
        records.append(JobRecord(
            id=new_id(), namespace=backend.namespace, created_at=now - 600 + i,
            stage="ERROR" if failed else "COMPLETED",
            spec={"dockerImage": "python:3.12", "command": ["python", "-c", "pass"], "flavor": "t4-small",
                  "labels": labels},
            labels=labels, started_at=now - 590 + i, finished_at=now - 500 + i,
            message="exit code 1" if failed else None,
        ))
    backend._server.service.store.insert_jobs_bulk(records)


def _run(backend, tenant: str, code: str):
    return backend.api.run_job(
        image="python:3.12", command=[sys.executable, "-u", "-c", code], flavor="t4-small",
        labels=console_labels(tenant), timeout=120, namespace=backend.namespace,
    )


def _passing(loss: float, adapter: str) -> str:
    return (f"print('progress step=1/1 loss={loss}', flush=True)\n"
            f"print('saved adapter={adapter}', flush=True)\n"
            f"print('VERDICT: PASS last_loss={loss}', flush=True)\n")


FAILING = "print('step 1', flush=True)\nraise RuntimeError('the data set has no rows')\n"


def _counters(app) -> tuple[int, int, int]:
    work = app.refresher.work
    return work["jobs_checked"], work["tenants_checked"], app.reasons.checked


def _settled(app) -> bool:
    return (app.refresher.synced and not app.refresher.outcomes_pending
            and not any(w.is_running for w in app.workers if w.group == "reasons")
            and not app.reasons.wanted())


async def _quiet(pilot, app, refreshes: int = 6) -> tuple[int, int, int]:
    """Counters before and after `refreshes` refreshes in which nothing changed."""
    await wait_for(pilot, lambda: _settled(app), timeout=60, what="the one-off reads done")
    before, start = _counters(app), app.refresher.refresh_count
    await wait_for(pilot, lambda: app.refresher.refresh_count >= start + refreshes, timeout=60,
                   what="quiet refreshes")
    return before, _counters(app)


def _kept_light(refresher) -> None:
    """Quiet and nothing running: each tenant's newest runs are kept as light marks, no whole job
    and no row; only a running job's record and row stay in memory."""
    assert set(refresher.job_rows) == set(refresher.job_infos) == refresher.active_ids == set()
    assert all(type(j) is RunMark for j in refresher.latest.jobs())


async def test_a_run_that_completes_or_fails_updates_its_tenant_and_a_quiet_refresh_looks_at_nothing(backend, cfg):
    _history(backend, OTHER_TENANTS)
    first = _run(backend, "acme", _passing(0.75, "acme/adapter-1"))
    assert await asyncio.to_thread(wait_stage, backend, first.id) == "COMPLETED"
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None,
                     start_tab="fleet")
    async with app.run_test(size=(80, 24)) as pilot:
        refresher = app.refresher
        await wait_for(pilot, lambda: refresher.synced and len(refresher.fleet_rows) == OTHER_TENANTS + 1,
                       timeout=60, what="the fleet")
        await wait_for(pilot, lambda: refresher.fleet_rows["acme"].last_loss == 0.75, timeout=60,
                       what="acme's first outcome")
        before, after = await _quiet(pilot, app)
        assert after == before  # nothing changed: no job, no tenant, no row looked at
        _kept_light(refresher)

        # acme's next run completes: its row shows the new outcome, the other tenants are not looked at
        second = _run(backend, "acme", _passing(0.5, "acme/adapter-2"))
        assert await asyncio.to_thread(wait_stage, backend, second.id) == "COMPLETED"
        await wait_for(pilot, lambda: refresher.fleet_rows["acme"].last_loss == 0.5
                       and refresher.fleet_rows["acme"].adapter == "acme/adapter-2", timeout=60,
                       what="acme's second outcome")
        assert refresher.newest_success["acme"] == second.id and not refresher.outcomes_missing
        before, after = await _quiet(pilot, app)
        assert after == before
        # the first run is no one's newest any more: it is not kept in memory (it is in the cache)
        assert first.id not in refresher.job_infos and first.id not in refresher.job_rows
        assert refresher.job_row(first.id) is not None
        _kept_light(refresher)
        # the whole job of a kept run is a lookup away: the cache holds it
        assert refresher.job_info(second.id).labels["tenant"] == "acme"

        # globex fails: its fleet row says why, read once, and then the quiet refreshes look at nothing
        seen = _counters(app)
        failed = _run(backend, "globex", FAILING)
        assert await asyncio.to_thread(wait_stage, backend, failed.id) == "ERROR"
        await wait_for(pilot, lambda: refresher.fleet_rows.get("globex") is not None
                       and refresher.fleet_rows["globex"].failed and failed.id in app.reasons.known,
                       timeout=60, what="why globex failed")
        assert "RuntimeError" in app.reasons.known[failed.id][1]
        assert app.fleet_table.reasons.get(failed.id) == app.reasons.known[failed.id][0]
        jobs, tenants, rows = (b - a for a, b in zip(seen, _counters(app), strict=True))
        assert tenants < OTHER_TENANTS and rows < OTHER_TENANTS  # its tenant and its rows, not the fleet
        before, after = await _quiet(pilot, app)
        assert after == before


async def test_a_schedule_read_asked_for_is_not_lost_when_the_next_refresh_replaces_its_worker(backend, cfg):
    """An action asks for the schedules to be read (a reschedule), and the periodic refresh starts
    right after, replacing that read's worker before it got to the schedules: the schedules are
    still read, and the fleet shows the new cron."""
    from tests.ui.conftest import schedule_python

    sj = schedule_python(backend)
    app = ConsoleApp(cfg, backend, refresh_seconds=3600, stream_metrics=False, watch_seconds=None,
                     start_tab="fleet")
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "acme" in app.fleet_table.rows_by_tenant, what="the fleet")
        await asyncio.to_thread(backend.api.update_scheduled_job_schedule, scheduled_job_id=sj.id,
                                schedule="15 6 * * 2", namespace=backend.namespace)
        for _ in range(3):  # asked for, then replaced at once by plain refreshes (a timer, ctrl+r's neighbours)
            app.refresher.refresh(scheduled=True)
            app.refresher.refresh()
            app.refresher.refresh()
        await wait_for(pilot, lambda: app.fleet_table.rows_by_tenant["acme"].schedule == "15 6 * * 2",
                       what="the new cron in the fleet")


async def test_a_schedule_read_asked_for_is_done_once_and_the_quiet_refreshes_after_it_read_none(backend, cfg):
    """An action (a reschedule, a suspend) asks for one read of the schedules: once that read is
    applied, the quiet refreshes that follow read them no more."""
    from tests.ui.conftest import refreshes, schedule_python

    schedule_python(backend)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None,
                     start_tab="fleet")
    async with app.run_test(size=(120, 30)) as pilot:
        refresher = app.refresher
        await wait_for(pilot, lambda: refresher.synced and refresher.scheduled_read, timeout=60,
                       what="the first read")
        reads = refresher.work["schedule_reads"]
        refresher.refresh(scheduled=True)
        await wait_for(pilot, lambda: refresher.work["schedule_reads"] > reads, timeout=60,
                       what="the read asked for")
        reads = refresher.work["schedule_reads"]
        await refreshes(pilot, 6)
        assert refresher.work["schedule_reads"] == reads
