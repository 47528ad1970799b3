"""The log pane by time, on a real job of the embedded server: `T` shows each line's time as the
Jobs API stamped it, `J` jumps to the first line at or after a time; a bad time is one line."""

from __future__ import annotations

from tests.jobwait import wait_stage
from tests.ui.conftest import notes, run_python, type_into, wait_for, wait_thread
from textual.widgets import Input

from console.jobs import log_time
from console.ui.app import ConsoleApp
from console.ui.screens.prompt import PromptScreen

PAUSED = (
    "import time\n"
    "for i in range(60): print(f'before {i}', flush=True)\n"
    "time.sleep(2.2)\n"
    "for i in range(60): print(f'after {i}', flush=True)\n"
)


async def test_t_shows_each_lines_time_and_j_jumps_to_a_time(backend, cfg):
    job = run_python(backend, PAUSED)
    await wait_thread(wait_stage, backend, job.id, ("COMPLETED",), 30)
    stamps = {text: log_time(stamp) for stamp, text in backend.api.fetch_job_log_entries(job_id=job.id)}
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: job.id in app.jobs_table.rows_by_id)
        app.jobs_table.select_job(job.id)
        pane = app.log_pane
        await wait_for(pilot, lambda: pane.job_id == job.id and pane.ended and pane.received == 120,
                       what="the whole log")
        assert pane.log_widget.lines[0] == "before 0"
        await pilot.press("T")
        assert pane.timestamps and "times" in str(app.query_one("#log-title").render())
        first = stamps["before 0"]
        assert pane.log_widget.lines[0] == f"{first:%H:%M:%S} before 0"

        await pilot.press("J")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen) and app.screen.is_mounted)
        await type_into(pilot, app.screen.query_one(Input), "soon")
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("time: expected a time ago" in n for n in notes(app)))

        after = stamps["after 0"]
        pane.set_follow(True)
        await pilot.press("J")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen) and app.screen.is_mounted)
        await type_into(pilot, app.screen.query_one(Input), after.strftime("%Y-%m-%dT%H:%M:%S.%f"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: not pane.follow, what="the jump")
        assert pane.log_widget.scroll_y == 60 - 2  # "after 0" is line 60, shown two rows down
        await pilot.pause()
        assert "after 0" in str(pane.log_widget.render_line(2))

        await pilot.press("T")
        assert not pane.timestamps and pane.log_widget.lines[0] == "before 0"
