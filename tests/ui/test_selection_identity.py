"""The selection is a job (a tenant, a version), not a row position: new rows above it, re-sorts
and refreshes never move it; a filtered list opens on its newest job; every confirmation names
the job and tenant it acts on (real jobs on the embedded server)."""

from __future__ import annotations

from tests.jobwait import wait_stage
from tests.ui.conftest import opened_box, refreshes, run_python, type_into, wait_for, wait_thread

from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen

SLEEP = "import time\nprint('up', flush=True)\ntime.sleep(120)"


def _cancel_all(backend, jobs) -> None:
    for job in jobs:
        try:
            backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)
        except Exception:  # noqa: BLE001 - already ended
            pass


async def test_new_runs_arriving_above_never_move_the_selected_job(backend, cfg):
    stark = run_python(backend, SLEEP, tenant="stark")
    wayne = run_python(backend, SLEEP, tenant="wayne")  # newer: above stark
    jobs = [stark, wayne]
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            table = app.jobs_table
            await wait_for(pilot, lambda: {stark.id, wayne.id} <= set(table.rows_by_id), what="both jobs")
            for target in (wayne, stark):  # the top row, then one below it
                while table.selected_job_id != target.id:
                    await pilot.press("down" if table.cursor_row < table.get_row_index(target.id) else "up")
                    await pilot.pause()
                for tenant in ("soylent", "umbrella"):
                    new = run_python(backend, SLEEP, tenant=tenant)
                    jobs.append(new)
                    await wait_for(pilot, lambda new=new: new.id in table.rows_by_id, what=f"{tenant}'s new job")
                    await refreshes(pilot)  # refreshes go on
                    assert table.selected_job_id == target.id
                    assert app.selected_job_id == target.id and app.log_pane.job_id == target.id
                await pilot.press("c")
                await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted,
                               what="the confirmation")
                assert app.screen.title_text == f"Cancel job {target.id}?"
                assert app.screen.details[0].startswith(f"tenant {target.labels['tenant']},")
                await pilot.press("n")
                await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
    finally:
        _cancel_all(backend, jobs)


async def _to_row(pilot, table, key: str) -> None:
    """Move the cursor to row `key` with the arrow keys, as a person would."""
    while table.key_at_cursor() != key:
        await pilot.press("down" if table.cursor_row < table.get_row_index(key) else "up")
    await pilot.pause()


async def test_a_filtered_list_opens_on_its_newest_job_and_cancel_names_it(backend, cfg):
    done = run_python(backend, "print('done')", tenant="umbrella")
    assert await wait_thread(wait_stage, backend, done.id) == "COMPLETED"
    running = run_python(backend, SLEEP, tenant="umbrella")
    others = [run_python(backend, SLEEP, tenant=t) for t in ("stark", "wayne", "acme")]
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, watch_seconds=None)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            table = app.jobs_table
            await wait_for(pilot, lambda: table.row_count == 5, what="the five jobs")
            await _to_row(pilot, table, others[0].id)  # a row below the top
            assert table.cursor_row >= 1
            # the fleet tab, enter on umbrella: its jobs, on its newest (its running one)
            await pilot.press("1")
            fleet = app.fleet_table
            await wait_for(pilot, lambda: "umbrella" in fleet.rows_by_tenant, what="the fleet")
            await _to_row(pilot, fleet, "umbrella")
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.active_tab == "jobs" and table.row_count == 2, what="umbrella's jobs")
            await wait_for(pilot, lambda: table.selected_job_id == running.id and app.log_pane.job_id == running.id,
                           what="its newest job selected")
            assert table.cursor_row == 0 and table.selected_job_id == running.id
            assert app.log_pane.job_id == running.id
            await pilot.press("c")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted,
                           what="the confirmation")
            assert app.screen.title_text == f"Cancel job {running.id}?"
            assert app.screen.details[0].startswith("tenant umbrella,")
            await pilot.press("n")
            # a filter typed over the list: it opens on its newest job too
            await _to_row(pilot, table, done.id)
            await pilot.press("slash")
            await type_into(pilot, await opened_box(pilot, app, "#jobs-filter"), "umbrella")
            await pilot.press("enter")
            await wait_for(pilot, lambda: table.row_count == 2 and table.selected_job_id == running.id,
                           what="the filtered list on its newest job")
            assert table.selected_job_id == running.id
            # cleared: the job the cursor is on stays
            await _to_row(pilot, table, done.id)
            await pilot.press("escape")
            await wait_for(pilot, lambda: table.row_count == 5, what="every job again")
            await refreshes(pilot)
            assert table.selected_job_id == done.id
    finally:
        _cancel_all(backend, [running, *others])


async def test_a_new_run_at_the_first_fresh_read_after_the_kept_picture_does_not_take_the_selection(backend, cfg):
    """The second start paints the jobs kept from the first (stark's on top, highlighted); a run
    that arrived meanwhile comes with the first fresh read, above it: the highlight stays on stark."""
    stark = run_python(backend, SLEEP, tenant="stark")
    jobs = [stark]
    try:
        first = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None)
        async with first.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: first.jobs_table.selected_job_id == stark.id, what="stark's job")
            await wait_for(pilot, lambda: first.refresher.refresh_count >= 3, what="a few refreshes")
        soylent = run_python(backend, SLEEP, tenant="soylent")
        jobs.append(soylent)
        again = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None)
        async with again.run_test(size=(120, 30)) as pilot:
            table = again.jobs_table
            await wait_for(pilot, lambda: soylent.id in table.rows_by_id, timeout=30, what="soylent's new run")
            await refreshes(pilot)
            assert table.selected_job_id == stark.id and again.log_pane.job_id == stark.id
    finally:
        _cancel_all(backend, jobs)
