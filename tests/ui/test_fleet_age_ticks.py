"""The fleet's Age column counts up between refreshes (it froze at "1s" while the status line
said "refreshed 1s ago"), in the real app on the embedded server."""

from __future__ import annotations

from tests.jobwait import wait_stage
from tests.ui.conftest import run_python, wait_for, wait_thread

from console.ui.app import ConsoleApp


async def test_the_fleet_age_ticks_without_a_refresh(backend, cfg):
    job = run_python(backend, "print('done')", tenant="acme")
    assert await wait_thread(wait_stage, backend, job.id) == "COMPLETED"
    app = ConsoleApp(cfg, backend, refresh_seconds=3600, stream_metrics=False, start_tab="fleet",
                     watch_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.fleet_table
        await wait_for(pilot, lambda: "acme" in table.rows_by_tenant and table.row_count > 0, what="the fleet row")
        refreshes = app.refresher.refresh_count
        first = str(table.get_row("acme")[2])
        await wait_for(pilot, lambda: str(table.get_row("acme")[2]) != first, timeout=5, what="the age to tick")
        assert app.refresher.refresh_count == refreshes  # no refresh did it
        assert str(table.get_row("acme")[2]).endswith("s")
