"""The jobs pane and the log pane against a real embedded server with real subprocess jobs."""

from __future__ import annotations

import sys

import pytest
from tests.jobwait import wait_stage
from tests.ui.conftest import console_labels, opened_box, run_python, screen_rows, wait_for, wait_thread

from console.ui.app import ConsoleApp
from console.ui.widgets.job_log import JobLog
from console.ui.widgets.jobs_table import JobsTable, short_id

CHATTY = (
    "import sys, time\n"
    "for i in range(3000):\n"
    "    print(f'line {i:05d} ' + 'x' * (i % 50))\n"
    "    if i % 500 == 0: sys.stdout.flush(); time.sleep(0.05)\n"
)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_selected_job_streams_every_line_in_order(backend, cfg, size):
    job = run_python(backend, CHATTY)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=size) as pilot:
        pane = await _follow_to_the_end(pilot, app, job)
        await wait_thread(wait_stage, backend, job.id, ("COMPLETED",))
        full = list(backend.api.fetch_job_logs(job_id=job.id, namespace=backend.namespace))
        expected = [f"line {i:05d} " + "x" * (i % 50) for i in range(3000)]
        assert [line for line in full if line.startswith("line ")] == expected
        assert list(pane.lines) == full  # none lost, none doubled, in order
        assert pane.received == len(full)


async def test_log_pane_keeps_a_bounded_tail(backend, cfg):
    job = run_python(backend, CHATTY)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, log_max_lines=500, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _follow_to_the_end(pilot, app, job)
        full = list(backend.api.fetch_job_logs(job_id=job.id, namespace=backend.namespace))
        assert len(pane.lines) == 500
        assert list(pane.lines) == full[-500:]
        assert len(app.query_one(JobLog).lines) <= 500
        assert pane.received == len(full)


FILL_THEN_TRICKLE = (
    "import sys, time\n"
    "for i in range(150):\n"
    "    print(f'fill {i:03d}')\n"
    "sys.stdout.flush()\n"
    "for i in range(6):\n"
    "    time.sleep(0.3)\n"
    "    print(f'then {i}', flush=True)\n"
)


async def test_a_full_log_that_follows_paints_each_new_line(backend, cfg):
    """Once the log holds its maximum, each new line drops the top one and the screen moves with
    it: the pane shows the newest lines, not those it held when it filled (Textual's Log repaints
    only past its end on its own)."""
    job = run_python(backend, FILL_THEN_TRICKLE)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, log_max_lines=100, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _follow_to_the_end(pilot, app, job)
        assert pane.follow and list(pane.lines)[-1] == "then 5"
        await wait_for(pilot, lambda: _painted_log(app)[-1:] == ["then 5"], timeout=5,
                       what="the log's last line painted")
        painted = _painted_log(app)
        assert painted == list(pane.lines)[-len(painted):]


async def _follow_to_the_end(pilot, app, job):
    """Select `job` in the jobs table and wait until its log stream has ended in the log pane."""
    await wait_for(pilot, lambda: job.id in app.jobs_table.rows_by_id, what="the job row")
    app.jobs_table.select_job(job.id)
    pane = app.log_pane
    await wait_for(pilot, lambda: pane.job_id == job.id and pane.ended, timeout=30, what="the end of the stream")
    return pane


def _painted_log(app) -> list[str]:
    """The log rows as the screen paints them (not the widget's lines: what reaches the terminal)."""
    log = app.query_one(JobLog)
    region = log.content_region
    rows = screen_rows(app)[region.y:region.bottom]
    return [row[region.x:region.right].rstrip() for row in rows if row[region.x:region.right].strip()]


async def test_markup_and_escape_sequences_show_as_literal_text(backend, cfg):
    code = (
        "print('[bold red]x[/]')\n"
        "print('\\x1b[31mred\\x1b[0m plain')\n"
        "print('\\x1b]0;stolen title\\x07after-osc')\n"
        "print('bell\\x07 and backspace\\x08 gone')\n"
        "print('[link=https://example.com]click[/link]')\n"
    )
    job = run_python(backend, code)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: job.id in app.jobs_table.rows_by_id)
        app.jobs_table.select_job(job.id)
        pane = app.log_pane
        await wait_for(pilot, lambda: pane.ended, timeout=20)
        await wait_for(pilot, lambda: "red plain" in pane.lines, what="the whole log in the pane")
        lines = list(pane.lines)
        assert "[bold red]x[/]" in lines
        assert "red plain" in lines
        assert "after-osc" in lines
        assert "bell and backspace gone" in lines
        assert "[link=https://example.com]click[/link]" in lines
        assert not any("\x1b" in line or "\x07" in line for line in lines)
        log = app.query_one(JobLog)
        shown = [log.render_line(y).text for y in range(log.size.height)]
        assert any("[bold red]x[/]" in row for row in shown)
        assert any("[link=https://example.com]click[/link]" in row for row in shown)


async def test_jobs_pane_updates_rows_in_place_and_keeps_the_cursor(backend, cfg):
    first = run_python(backend, "import time; time.sleep(30)", tenant="acme")
    second = run_python(backend, "print('done')", tenant="globex")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.jobs_table
        await wait_for(pilot, lambda: {first.id, second.id} <= set(table.rows_by_id))
        table.select_job(second.id)
        await wait_for(
            pilot,
            lambda: table.rows_by_id[second.id].stage == "COMPLETED",
            what="the second job to complete",
        )
        count = app.refresher.refresh_count
        third = run_python(backend, "import time; time.sleep(30)", tenant="hooli")
        await wait_for(pilot, lambda: third.id in table.rows_by_id and app.refresher.refresh_count > count)
        assert table.selected_job_id == second.id  # the cursor stayed on its job
        assert table.get_row_index(second.id) == table.cursor_row
        text = [table.get_row_at(i)[0].plain for i in range(table.row_count)]
        assert short_id(third.id) in text


async def test_filter_by_tenant_and_stage(backend, cfg):
    run_python(backend, "import time; time.sleep(30)", tenant="acme")
    done = run_python(backend, "print('ok')", tenant="globex")
    await wait_thread(wait_stage, backend, done.id, ("COMPLETED",))
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(JobsTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        await pilot.press("slash")
        await opened_box(pilot, app, "#jobs-filter")  # built on first use
        for ch in "tenant:glob":
            await pilot.press(ch)
        await wait_for(pilot, lambda: table.row_count == 1)
        assert list(table.rows_by_id) == [done.id]
        await pilot.press("enter")
        app.query_one("JobsPane").set_filter("stage:running")
        await wait_for(pilot, lambda: table.row_count == 1 and done.id not in table.rows_by_id)
        app.query_one("JobsPane").set_filter("")
        await wait_for(pilot, lambda: table.row_count == 2)


async def _type_filter(pilot, app, text: str, *, keys: bool = False) -> None:
    """What a user does: `/`, the filter in place of the last one (each key, or pasted), enter."""
    await pilot.press("slash")
    box = await opened_box(pilot, app, "#jobs-filter")
    if keys:
        box.value = ""
        for ch in text:
            await pilot.press("space" if ch == " " else ch)
    else:
        box.value = text
    await pilot.press("enter")


def _run_with_env(backend, tenant: str, env: str):
    return backend.api.run_job(
        image="python:3.12", command=[sys.executable, "-c", "print('ok')"], flavor="t4-small",
        labels=console_labels(tenant, env=env), timeout=60, namespace=backend.namespace)


async def test_a_label_filter_shows_only_jobs_with_that_exact_value(backend, cfg):
    jobs = {env: _run_with_env(backend, tenant, env).id for tenant, env in
            (("acme", "prod"), ("globex", "production"), ("hooli", "staging"))}
    for job_id in jobs.values():
        await wait_thread(wait_stage, backend, job_id, ("COMPLETED",))
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(JobsTable)
        await wait_for(pilot, lambda: table.row_count == 3, what="the three jobs")
        await _type_filter(pilot, app, "label:env=prod", keys=True)
        await wait_for(pilot, lambda: list(table.rows_by_id) == [jobs["prod"]], what="the prod job alone")
        await _type_filter(pilot, app, "label:env=staging")
        await wait_for(pilot, lambda: list(table.rows_by_id) == [jobs["staging"]],
                       what="the staging job alone")
        await _type_filter(pilot, app, "label:env=qa")
        await wait_for(pilot, lambda: table.row_count == 0, what="no job")
        await _type_filter(pilot, app, "label:env")  # the key alone: any value
        await wait_for(pilot, lambda: table.row_count == 3, what="every job")


async def test_a_stage_filter_matches_the_start_of_the_stage(backend, cfg):
    running = run_python(backend, "import time; time.sleep(30)", tenant="acme")
    done = run_python(backend, "print('ok')", tenant="globex")
    await wait_thread(wait_stage, backend, done.id, ("COMPLETED",))
    await wait_thread(wait_stage, backend, running.id, ("RUNNING",))
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(JobsTable)
        await wait_for(pilot, lambda: table.row_count == 2, what="both jobs")
        await _type_filter(pilot, app, "stage:run", keys=True)
        await wait_for(pilot, lambda: table.row_count != 2, what="the filter")
        assert list(table.rows_by_id) == [running.id]
        await _type_filter(pilot, app, "stage:comp")
        await wait_for(pilot, lambda: list(table.rows_by_id) == [done.id],
                       what="the completed job alone")
        await _type_filter(pilot, app, "s:err,canc")
        await wait_for(pilot, lambda: table.row_count == 0, what="no job")
    backend.api.cancel_job(job_id=running.id, namespace=backend.namespace)


async def test_first_page_read_ahead_fills_the_first_frame(backend, cfg):
    """`console` reads the first page of jobs while its screens load; the app paints from it,
    and when that read failed it reads again itself, so the user still sees the jobs."""
    from console.jobs import Prefetch

    done = run_python(backend, "print('ok')")
    wait_stage(backend, done.id, ("COMPLETED",))
    pre = Prefetch(backend.api, backend.namespace)
    jobs, at = pre.result(timeout=20)
    assert [j.id for j in jobs] == [done.id] and at is not None

    class Broken:
        def list_jobs(self, **kw):
            raise ConnectionError("connection refused")

    failed = Prefetch(Broken(), backend.namespace)
    for first in (pre, failed):
        app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, first_frame=first)
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.jobs_table
            await wait_for(pilot, lambda table=table: done.id in table.rows_by_id, what="the job row")
            assert table.rows_by_id[done.id].stage == "COMPLETED"
