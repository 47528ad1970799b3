"""SVG snapshots of every screen at 80x24 and 160x48 (the canned fleet, a frozen clock): the tabs
(Fleet, Jobs, Costs, Training) and the dialogs (submit, confirm, bulk, what-if, reschedule, help).

Update with `pytest tests/ui/test_snapshots.py --snapshot-update` after an intended change, once
the new pictures have been looked at.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from tests.ui.canned import CannedApi, CannedBackend
from tests.ui.conftest import FROZEN_NOW, type_into, wait_for
from textual.widgets import Input

from console.config import Config
from console.ui.app import ConsoleApp

SIZES = {"80x24": (80, 24), "160x48": (160, 48)}


@pytest.fixture(autouse=True)
def _data_dir_named_alike(_isolated_dirs, monkeypatch):
    """The data folder as a relative path: the Training tab names its Trackio store
    (`data/trackio`), the same on every run."""
    monkeypatch.chdir(_isolated_dirs)
    monkeypatch.setenv("CONSOLE_DATA_DIR", "data")


def make_app(tab: str = "jobs") -> ConsoleApp:
    cfg = Config(namespace="oncall", plan="pro")
    return ConsoleApp(
        cfg,
        CannedBackend(CannedApi()),
        clock=lambda: FROZEN_NOW,
        refresh_seconds=3600,
        start_tab=tab,
        stream_metrics=True,
        watch_seconds=None,  # no on-call pass: its marks and toasts would come at a time of their own
    )


PANE_READS = {"ledger", "trackio-alerts", "trackio-metrics", "reasons", "bulk-plan"}


async def _settle(pilot) -> None:
    app = pilot.app

    def settled() -> bool:
        reading = any(w.is_running for w in app.workers if w.group in PANE_READS)
        costs = [pane for pane in app.query("LedgerPane") if pane.updating]  # its paced second summary
        return (app.refresher.synced and app.log_pane.ended and not app.refresher.outcomes_pending and not reading
                and not costs)

    calm = 0
    for _ in range(200):
        calm = calm + 1 if settled() else 0
        if calm >= 3:  # settled across a few frames: no read is about to start
            break
        await pilot.pause(0.05)
    for box in app.screen.query(Input):  # a steady cursor: a blinking one is caught in either phase
        box.cursor_blink = False
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_jobs_screen(snap_compare, size):
    assert snap_compare(make_app("jobs"), terminal_size=size, run_before=_settle)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_fleet_screen(snap_compare, size):
    assert snap_compare(make_app("fleet"), terminal_size=size, run_before=_settle)


def _opens(*keys: str, screen: str | None = None) -> Callable[[object], Awaitable[None]]:
    """Settle, press `keys`, wait for `screen` (a screen class's name) to be on top, settle."""

    async def run(pilot) -> None:
        await _settle(pilot)
        for key in keys:
            await pilot.press(key)
        if screen is not None:
            await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == screen, what=screen)
        await _settle(pilot)

    return run


async def _bulk_preview(pilot) -> None:
    """The bulk dialog's preview: cancel every active job (acme's running one, globex's waiting)."""
    app = pilot.app
    await _opens("b", screen="BulkScreen")(pilot)
    await type_into(pilot, app.screen.query_one("#bulk-filter"), "stage:running,scheduling")
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.screen.plan is not None and not app.screen.planning, what="the preview")
    await _settle(pilot)


SCREENS = {
    "costs": ("jobs", _opens("3")),
    "training": ("jobs", _opens("4")),
    "submit": ("jobs", _opens("s", screen="SubmitScreen")),
    "confirm": ("jobs", _opens("c", screen="ConfirmScreen")),  # cancel the selected (running) job
    "bulk": ("jobs", _bulk_preview),
    "whatif": ("jobs", _opens("3", "dollar_sign", screen="WhatIfScreen")),
    "reschedule": ("fleet", _opens("r", screen="RescheduleScreen")),  # the first tenant's cron
    "help": ("jobs", _opens("question_mark", screen="HelpScreen")),
}


@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("name", SCREENS, ids=str)
def test_screen(snap_compare, name, size):
    tab, steps = SCREENS[name]
    assert snap_compare(make_app(tab), terminal_size=SIZES[size], run_before=steps)
