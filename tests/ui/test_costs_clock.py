"""The Costs tab projects the month from the app's clock: the runs a schedule has left this month
are counted from the "now" the app was given, so the same fleet reads the same on any wall-clock
day (the snapshots run on a frozen clock)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from tests.ui.canned import CannedApi, CannedBackend
from tests.ui.conftest import wait_for

from console.config import Config
from console.cron import count_firings
from console.ui.app import ConsoleApp


def _app(now: datetime) -> ConsoleApp:
    return ConsoleApp(
        Config(namespace="oncall", plan="pro"),
        CannedBackend(CannedApi()),
        clock=lambda: now,
        refresh_seconds=3600,
        watch_seconds=None,
    )


@pytest.mark.parametrize("day", [1, 16, 28])
async def test_the_costs_tab_counts_the_runs_left_from_the_apps_clock(day):
    now = datetime(2026, 12, day, 10, 0, 0, tzinfo=UTC)
    month_end = datetime(2027, 1, 1, tzinfo=UTC)
    app = _app(now)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("3")
        await wait_for(pilot, lambda: bool(app.query("LedgerPane")), what="the Costs tab")
        pane = app.query_one("LedgerPane")
        await wait_for(pilot, lambda: pane.summary is not None and pane.scheduled is not None
                       and pane.summary.schedules and not pane.updating, what="a summary with schedules")
        summary = pane.summary
        assert summary.month == "2026-12"
        for forecast in summary.schedules:
            assert forecast.remaining_runs == count_firings(forecast.schedule, now, month_end), forecast
