"""The TUI flags a schedule whose runs failed `notify.schedule_failures` times in a row: its fleet
row's Schedule cell leads with `FAIL 3x`, the status line counts it (`1 SCHED FAIL`), and the
on-call pass notifies it. Real runs of a real scheduled job on the embedded server."""

from __future__ import annotations

import asyncio
import sys
import time

from tests.oncall.conftest import labels
from tests.oncall.test_schedule_failures import CODE, _run
from tests.ui.conftest import shown, wait_for

from console.ui.app import ConsoleApp
from console.ui.widgets.status_line import StatusLine


async def test_the_tui_flags_the_failing_schedule_in_the_fleet_and_the_status_line(backend, cfg, listener):
    cfg.notify.webhook_url = listener.url + "/hook"
    sj = backend.api.create_scheduled_job(
        image="python:3.12", command=[sys.executable, "-u", "-c", CODE], schedule="0 6 * * 1",
        flavor="t4-small", labels=labels("acme"), timeout=60, namespace=backend.namespace,
    )
    for _ in range(3):
        await asyncio.to_thread(_run, backend, sj.id, "ERROR")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, start_tab="fleet", stream_metrics=False,
                     watch_seconds=1.0, first_watch_seconds=0.3)
    async with app.run_test(size=(120, 24)) as pilot:
        deadline = time.monotonic() + 30
        while app.fleet_table.failing != {sj.id: 3} or "acme" not in app.fleet_table.rows_by_tenant:
            assert time.monotonic() < deadline, "the schedule was never flagged"
            await pilot.pause(0.1)
        await wait_for(pilot, lambda: "1 SCHED FAIL" in app.query_one(StatusLine).render_text().plain,
                       what="the status line's count")
        assert "1 SCHED FAIL" in app.query_one(StatusLine).render_text().plain
        cell = app.fleet_table.get_row("acme")[8]
        assert cell.plain.startswith("FAIL 3x 0 6 * * 1")
        # a toast of its own, or counted in the one for the rest of the pass (3 failed runs came with it)
        notes = [f"{n.title}: {n.message}" for n in shown(app)]
        assert any(f"schedule {sj.id} failed 3 runs in a row" in n or "1 failing in a row" in n for n in notes), notes
    posted = [b for b in listener.bodies("/hook") if b["event"] == "schedule_failing"]
    assert len(posted) <= 1  # once (it may still be on its way when the app closed)
