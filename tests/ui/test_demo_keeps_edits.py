"""`console demo` run again never reverts a schedule the user changed: one rescheduled in the app
(`r`, on the embedded server) and one suspended stay as they were left; a missing tenant is still
created."""

from __future__ import annotations

from tests.ui.conftest import wait_for, wait_thread
from textual.widgets import Input

from console import jobspec
from console.commands.demo import setup_demo
from console.ui.app import ConsoleApp
from console.ui.screens.reschedule import RescheduleScreen


def _demo_schedules(backend) -> dict[str, object]:
    out = {}
    for sj in backend.api.list_scheduled_jobs(namespace=backend.namespace):
        labels = jobspec.labels_of(sj)
        if labels.get("env") == "demo":
            out[labels["tenant"]] = sj
    return out


async def test_running_the_demo_again_keeps_a_rescheduled_and_a_suspended_tenant(backend, cfg):
    await wait_thread(setup_demo, backend, cfg, trigger=0, report=lambda line: None)
    first = _demo_schedules(backend)
    assert {"acme", "globex"} <= set(first)

    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, start_tab="fleet",
                     watch_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.fleet_table
        await wait_for(pilot, lambda: "acme" in table.rows_by_tenant, what="the demo fleet")
        table.move_cursor(row=table.get_row_index("acme"), animate=False)
        table.announce_selection()
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, RescheduleScreen) and app.screen.is_mounted,
                       what="the cron dialog")
        app.screen.query_one("#cron-input", Input).value = "15 6 * * *"
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: table.rows_by_tenant["acme"].schedule == "15 6 * * *",
                       what="the new schedule on screen")
    backend.api.suspend_scheduled_job(scheduled_job_id=first["globex"].id, namespace=backend.namespace)
    backend.api.delete_scheduled_job(scheduled_job_id=first["initech"].id, namespace=backend.namespace)

    said: list[str] = []
    await wait_thread(setup_demo, backend, cfg, trigger=0, report=said.append)
    again = _demo_schedules(backend)
    assert again["acme"].id == first["acme"].id and again["acme"].schedule == "15 6 * * *"
    assert again["globex"].id == first["globex"].id and again["globex"].suspend
    assert "initech" in again and again["initech"].id != first["initech"].id  # a missing one is created
    assert any(line.startswith("Kept as you left them: acme, globex") for line in said), said
