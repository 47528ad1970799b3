"""The TUI on a failing jobs API: it never crashes, keeps the last good data on screen marked
STALE with its age, recovers by itself, and its log pane loses no line across cut streams."""

from __future__ import annotations

from tests.jobwait import wait_stage
from tests.reliability.conftest import COUNTER, run_python
from tests.ui.conftest import screen_rows, wait_for, wait_thread
from textual.widgets import TabbedContent

from console.server.faults import Fault
from console.ui.app import ConsoleApp
from console.ui.widgets.status_line import StatusLine


async def test_a_failing_api_leaves_the_last_data_marked_stale_and_recovers(server, backend, cfg):
    job = run_python(backend, "print('done')")
    await wait_thread(wait_stage, backend, job.id)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        status = app.query_one(StatusLine)
        await wait_for(pilot, lambda: job.id in app.jobs_table.rows_by_id, what="the job row")
        server.faults.add(Fault("status", path=r"^/api/", status=503, times=None))
        await wait_for(pilot, lambda: status.last_error is not None, timeout=15,
                       what="the refresh to fail")
        text = status.render_text().plain
        assert "STALE" in text and "last ok" in text and "ago" in text and "503" in text
        assert job.id in app.jobs_table.rows_by_id  # the last good data is still shown
        # as drawn on the terminal (the line is redrawn only when its text changes)
        await wait_for(pilot, lambda: "STALE" in _status_row(app), what="STALE on screen")
        server.faults.clear()
        await wait_for(pilot, lambda: not status.stale, timeout=15, what="recovery")
        assert "refreshed" in status.render_text().plain
        await wait_for(pilot, lambda: "refreshed" in _status_row(app) and "STALE" not in _status_row(app),
                       what="the recovered line on screen")
        assert app.is_running


def _status_row(app) -> str:
    """The status line's row as the terminal shows it."""
    row = app.query_one(StatusLine).region.y
    return screen_rows(app)[row]


async def test_hangs_and_drops_never_freeze_or_crash_the_app(server, backend, cfg):
    # no on-call passes: they read the job list too, and would take the faults meant for the refresh
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        status = app.query_one(StatusLine)
        tabs = app.query_one(TabbedContent)
        await wait_for(pilot, lambda: status.last_ok is not None, what="a first refresh")
        # Each read of the job list first hangs past the client's 1 s timeout, three times,
        # then has its connection dropped, three times: all five tries of one read fail.
        server.faults.add(Fault("delay", path=r"^/api/jobs", seconds=2.5, times=3),
                          Fault("cut", path=r"^/api/jobs", after_events=0, drop=True, times=3))
        await wait_for(pilot, lambda: server.faults.fired, what="a refresh to hang")
        served = []  # keys are served while that read hangs: each switches the tab at once
        for tab in ("fleet", "jobs") * 20:
            if status.stale:
                break
            await pilot.press("1" if tab == "fleet" else "2")
            assert tabs.active == tab
            served.append(tab)
        assert len(served) >= 2, "the keys waited for the hanging refresh"
        await wait_for(pilot, lambda: status.stale, timeout=15, what="the refresh to fail")
        text = status.render_text().plain
        assert "STALE" in text and "last ok" in text
        assert "no answer from the jobs API after 5 tries" in text
        other = "fleet" if tabs.active == "jobs" else "jobs"
        await pilot.press("1" if other == "fleet" else "2")
        assert tabs.active == other
        await wait_for(pilot, lambda: not server.faults.armed(), timeout=30, what="the faults")
        before = app.refresher.refresh_count
        await wait_for(pilot, lambda: app.refresher.refresh_count > before and not status.stale,
                       timeout=20, what="recovery")
        assert "refreshed" in status.render_text().plain
        assert app.is_running


async def test_the_log_pane_shows_every_line_once_across_cut_streams(server, backend, cfg):
    job = run_python(backend, COUNTER.format(n=400, pause=0.004))
    # armed before the app starts: the pane follows the only job as soon as its row shows, and
    # each of its log requests (the first one and every reconnect) meets the next fault
    server.faults.add(Fault("cut", path="/logs$", after_events=60),
                      Fault("cut", path="/logs$", after_events=150, drop=True),
                      Fault("status", path="/logs$", status=500),
                      Fault("cut", path="/logs$", after_events=300, drop=True))
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: job.id in app.jobs_table.rows_by_id, what="the job row")
        app.jobs_table.select_job(job.id)
        pane = app.log_pane
        await wait_for(pilot, lambda: pane.job_id == job.id and pane.ended, timeout=40,
                       what="the end of the stream")
        assert not server.faults.armed()  # the pane went through every cut
        await wait_thread(wait_stage, backend, job.id)
        full = list(backend.api.fetch_job_logs(job_id=job.id, namespace=backend.namespace))
        assert full == [f"line {i}" for i in range(400)]
        assert list(pane.lines) == full
        assert pane.error is None
