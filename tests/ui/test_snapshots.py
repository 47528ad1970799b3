"""SVG snapshots of the main screen at 80x24 and 160x48 (fixed data, frozen clock).

Update with `pytest tests/ui/test_snapshots.py --snapshot-update` after an intended change.
"""

from __future__ import annotations

import pytest
from tests.ui.canned import CannedApi, CannedBackend
from tests.ui.conftest import FROZEN_NOW

from console.config import Config
from console.ui.app import ConsoleApp


def make_app(tab: str = "jobs") -> ConsoleApp:
    cfg = Config(namespace="oncall", plan="pro")
    return ConsoleApp(
        cfg,
        CannedBackend(CannedApi()),
        clock=lambda: FROZEN_NOW,
        refresh_seconds=3600,
        start_tab=tab,
        stream_metrics=True,
    )


PANE_READS = {"ledger", "trackio-alerts", "trackio-metrics", "reasons"}


async def _settle(pilot) -> None:
    app = pilot.app

    def settled() -> bool:
        reading = any(w.is_running for w in app.workers if w.group in PANE_READS)
        return app.refresher.synced and app.log_pane.ended and not app.refresher.outcomes_pending and not reading

    calm = 0
    for _ in range(200):
        calm = calm + 1 if settled() else 0
        if calm >= 3:  # settled across a few frames: no read is about to start
            break
        await pilot.pause(0.05)
    await pilot.pause(0.2)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_jobs_screen(snap_compare, size):
    assert snap_compare(make_app("jobs"), terminal_size=size, run_before=_settle)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_fleet_screen(snap_compare, size):
    assert snap_compare(make_app("fleet"), terminal_size=size, run_before=_settle)
