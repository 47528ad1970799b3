"""A whole re-read (every FULL_SYNC_SECONDS, and ctrl+r) keeps what the console holds wherever it
reads the same: the same schedule, newest-run and fleet-row objects as before, so that at 10,000
tenants the objects that outlive the read are not new ones made among its 100,000 parsed jobs
(which would keep Python's allocator from handing those arenas back: BENCHMARKS.md, "Memory at
rest, 10,000 tenants"). Only what changed is new."""

from __future__ import annotations

import asyncio
import json

from tests.oncall.conftest import wait_stage
from tests.ui.conftest import run_python, schedule_python, wait_for

from console.cache import snapshot
from console.ui.app import ConsoleApp

TENANTS = ("acme", "globex", "initech")


def _held(app) -> dict[str, dict]:
    refresher = app.refresher
    return {"scheduled": dict(refresher.scheduled), "newest": dict(refresher.latest.newest),
            "completed": dict(refresher.latest.completed), "fleet": dict(refresher.fleet_rows),
            "jobs table rows": dict(app.jobs_table.rows_by_id)}


def _settled(app) -> bool:
    r = app.refresher
    return (r.synced and r.scheduled_read and len(r.fleet_rows) == len(TENANTS) and not r.outcomes_pending
            and len(r.latest.completed) == len(TENANTS) and not r.outcomes_missing)


async def _whole_read(pilot, app) -> None:
    r = app.refresher
    done = r._last_full
    await pilot.press("ctrl+r")
    await wait_for(pilot, lambda: r._last_full > done, timeout=60, what="a whole re-read applied")


async def test_a_whole_re_read_keeps_the_objects_it_reads_unchanged_and_only_a_change_is_new(backend, cfg):
    schedules = {t: schedule_python(backend, tenant=t) for t in TENANTS}
    runs = [run_python(backend, "print('done')", tenant=t) for t in TENANTS]
    for job in runs:
        assert await asyncio.to_thread(wait_stage, backend, job.id) == "COMPLETED"
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None,
                     start_tab="fleet")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: _settled(app), timeout=60, what="the fleet and its outcomes")
        assert len(app.jobs_table.rows_by_id) == len(runs)
        before = _held(app)

        await _whole_read(pilot, app)
        after = _held(app)
        for what, held in before.items():
            assert after[what].keys() == held.keys(), what
            assert all(after[what][k] is obj for k, obj in held.items()), f"new {what} objects for unchanged ones"

        # a re-read that keeps every fleet row writes nothing for the next start: what is kept
        # there stays as it was (each row marked here with a trailing space the JSON reader ignores)
        cache = app.session.cache
        await _whole_read(pilot, app)
        with cache._write() as conn:
            conn.execute("UPDATE fleet SET row = row || ' '")
        await _whole_read(pilot, app)
        assert all(r.endswith(" ") for r in cache.fleet_docs()), "an unchanged fleet row was written again"

        # one schedule changes: that schedule and its tenant's row are new, the rest are kept,
        # and only that tenant's row is written for the next start
        backend.api.suspend_scheduled_job(scheduled_job_id=schedules["globex"].id, namespace=backend.namespace)
        await _whole_read(pilot, app)
        changed = _held(app)
        rows = {json.loads(doc)["tenant"]: doc for doc in cache.fleet_docs()}
        assert [t for t, doc in rows.items() if not doc.endswith(" ")] == ["globex"]
        kept_rows = {r.tenant: r for r in snapshot.load_fleet(cache)}
        assert kept_rows["globex"].suspended and not kept_rows["acme"].suspended
        globex = schedules["globex"].id
        assert changed["scheduled"][globex].suspend and changed["scheduled"][globex] is not before["scheduled"][globex]
        assert changed["fleet"]["globex"].suspended and changed["fleet"]["globex"] is not before["fleet"]["globex"]
        for tenant in ("acme", "initech"):
            assert changed["scheduled"][schedules[tenant].id] is before["scheduled"][schedules[tenant].id]
            assert changed["fleet"][tenant] is before["fleet"][tenant]
        assert all(changed["newest"][t] is before["newest"][t] for t in TENANTS)
        assert app.fleet_table.row_count == len(TENANTS)
