"""A job that starts and ends between two refreshes (never seen active) still shows within a few
refreshes, however long the console has been quiet: the head of the job list is read every
HEAD_SCAN_EVERY refreshes, not less often as the quiet goes on."""

from __future__ import annotations

import time

from tests.ui.conftest import console_labels, wait_for

from console.server.core import new_id
from console.server.jobs.store import JobRecord
from console.ui.app import ConsoleApp
from console.ui.refresh import HEAD_SCAN_EVERY

QUIET_REFRESHES = 4 * HEAD_SCAN_EVERY


def _finished_job(backend) -> str:
    """A job that began and ended since the last refresh, straight into the server's store."""
    now = time.time()
    labels = console_labels("flash")
    job_id = new_id()
    backend._server.service.store.insert_jobs_bulk([JobRecord(
        id=job_id, namespace=backend.namespace, created_at=now - 1, stage="ERROR",
        spec={"dockerImage": "python:3.12", "command": ["python", "-c", "raise SystemExit(1)"],
              "flavor": "t4-small", "labels": labels},
        labels=labels, started_at=now - 0.9, finished_at=now - 0.5, message="failed at once",
    )])
    return job_id


async def test_a_job_that_began_and_ended_between_refreshes_shows_after_a_long_quiet(backend, cfg):
    app = ConsoleApp(cfg, backend, refresh_seconds=0.1, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.refresher.synced, what="every job known")
        start = app.refresher.refresh_count
        await wait_for(pilot, lambda: app.refresher.refresh_count >= start + QUIET_REFRESHES, timeout=60,
                       what="a long quiet")
        job_id = _finished_job(backend)
        at = app.refresher.refresh_count
        await wait_for(pilot, lambda: job_id in app.jobs_table.rows_by_id, timeout=60, what="the flash job")
        assert app.refresher.refresh_count - at <= HEAD_SCAN_EVERY + 1
