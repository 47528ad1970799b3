"""The selected job is the job on screen: after a filter the highlighted row, the log pane, the
details, the metrics panel and the actions all name the same job (real jobs, embedded server)."""

from __future__ import annotations

from tests.ui.conftest import run_python, wait_for

from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.widgets.job_details import JobDetails
from console.ui.widgets.training import MetricsPanel

SLEEP = "import time\nprint('up', flush=True)\ntime.sleep(60)"


async def test_after_a_filter_the_log_details_metrics_and_cancel_follow_the_highlighted_job(backend, cfg):
    wayne = run_python(backend, SLEEP, tenant="wayne")
    umbrellas = [run_python(backend, SLEEP, tenant="umbrella") for _ in range(2)]  # newer: on top
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            table = app.jobs_table
            await wait_for(
                pilot,
                lambda: all(j.id in table.rows_by_id for j in (wayne, *umbrellas))
                and app.log_pane.job_id is not None,
                what="the jobs and a job on screen",
            )
            assert app.log_pane.job_id in {u.id for u in umbrellas}  # an umbrella job is on screen
            await pilot.press("/")
            for ch in "tenant:wayne":
                await pilot.press(ch)
            await pilot.press("enter")
            await wait_for(pilot, lambda: table.row_count == 1, timeout=60, what="the filter")
            await wait_for(pilot, lambda: table.selected_job_id == wayne.id and app.log_pane.job_id == wayne.id,
                           what="wayne's job selected")
            assert table.selected_job_id == wayne.id
            assert app.selected_job_id == wayne.id
            assert app.log_pane.job_id == wayne.id
            assert str(app.query_one(JobDetails).render()).splitlines()[0] == wayne.id
            assert app.query_one("#trackio-metrics", MetricsPanel).job_id == wayne.id
            await pilot.press("c")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted)
            assert app.screen.title_text == f"Cancel job {wayne.id}?"
            assert "tenant wayne" in app.screen.details[0]
            await pilot.press("n")
    finally:
        for job in (wayne, *umbrellas):
            backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)
