"""Log pane keys: follow, wrap, search — on fixed data."""

from __future__ import annotations

from tests.ui.canned import CannedApi, CannedBackend
from tests.ui.conftest import FROZEN_NOW, wait_for

from console.config import Config
from console.ui.app import ConsoleApp


async def test_follow_wrap_and_search():
    app = ConsoleApp(
        Config(namespace="oncall"),
        CannedBackend(CannedApi()),
        clock=lambda: FROZEN_NOW,
        refresh_seconds=3600,
        stream_metrics=False,
    )
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.log_pane
        await wait_for(pilot, lambda: pane.ended and pane.received == 15)
        assert pane.follow
        await pilot.press("f")
        assert not pane.follow and not pane.log_widget.auto_scroll
        await pilot.press("G")
        assert pane.follow
        await pilot.press("w")
        assert pane.wrap
        assert all(len(line) <= pane._width() for line in pane.log_widget.lines)
        await pilot.press("w")
        assert not pane.wrap
        assert pane.search("loss=5.8") == 3
        assert pane.match_index == 2 and not pane.follow
        pane.action_next_match()
        assert pane.match_index == 0
        assert pane.search("no such text") == 0
        pane.log_widget.focus()
        await pilot.press("up")  # scrolling up pauses follow
        await pilot.press("G")
        await pilot.press("up")
        await pilot.pause()
        assert not pane.follow
