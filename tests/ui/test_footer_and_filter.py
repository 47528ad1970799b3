"""At 80x24: the footer always shows `?` and `q`; `esc` clears the jobs filter; a filter key that
is none of tenant / stage / label is said."""

from __future__ import annotations

import pytest
from tests.ui.canned import CannedApi, CannedBackend
from tests.ui.conftest import FROZEN_NOW, opened_box, wait_for
from tests.ui.test_snapshots import _settle
from textual.widgets import Input
from textual.widgets._footer import FooterKey

from console.config import Config
from console.jobs import unknown_filter_keys
from console.ui.app import ConsoleApp


def _app(tab: str = "jobs") -> ConsoleApp:
    return ConsoleApp(Config(namespace="oncall", plan="pro"), CannedBackend(CannedApi()),
                      clock=lambda: FROZEN_NOW, refresh_seconds=3600, start_tab=tab, watch_seconds=None)


def _footer_fits(app, width: int = 80) -> dict[str, bool]:
    """key -> whether its footer entry is on screen, left of the command palette's."""
    keys = list(app.screen.query(FooterKey))
    palette = min((k.region.x for k in keys if k.key_display == "^p"), default=width)
    return {k.key_display: k.region.right <= palette for k in keys if k.key_display != "^p"}


@pytest.mark.parametrize("where", ["jobs", "log", "fleet"])
async def test_the_footer_shows_help_and_quit_at_80_columns(where):
    app = _app("fleet" if where == "fleet" else "jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        if where == "log":
            app.log_pane.log_widget.focus()
        # the footer is redrawn for the new focus a moment later: wait for it, with a deadline
        await wait_for(pilot, lambda: _footer_fits(app).get("?") and _footer_fits(app).get("q"),
                       what="? and q in the footer")


async def test_esc_clears_the_filter_and_an_unknown_key_is_said():
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.jobs_table
        await _settle(pilot)
        await wait_for(pilot, lambda: table.row_count > 2)
        every = table.row_count
        assert not app.query("#jobs-filter")  # not built for the first frame: on first use
        await pilot.press("slash")
        await opened_box(pilot, app, "#jobs-filter")  # built on first use, with the focus
        app.query_one("#jobs-filter", Input).value = "tenat:acme"
        state = app.query_one("#jobs-filter-state")
        await wait_for(pilot, lambda: "unknown filter key" in str(state.render()), what="the unknown key said")
        assert state.display and "unknown filter key tenat:" in str(state.render())
        app.query_one("#jobs-filter", Input).value = "tenant:acme"
        await wait_for(pilot, lambda: 0 < table.row_count < every)
        await pilot.press("enter")  # enter keeps it
        await wait_for(pilot, lambda: "esc to clear" in str(state.render()), what="the filter kept")
        assert table.job_filter.text == "tenant:acme" and "esc to clear" in str(state.render())
        await pilot.press("escape")  # on the table: every job again
        await wait_for(pilot, lambda: table.row_count == every)
        assert table.job_filter.empty and not state.display
        await pilot.press("slash")
        app.query_one("#jobs-filter", Input).value = "stage:running"
        await wait_for(pilot, lambda: table.row_count < every)
        await pilot.press("escape")  # in the box: cleared and closed
        await wait_for(pilot, lambda: table.row_count == every)
        assert not app.query_one("#jobs-filter", Input).display


def test_unknown_filter_keys():
    assert unknown_filter_keys("tenat:acme stage:run l:env=dev t:x s:err word http://x") == ["tenat"]
    assert unknown_filter_keys("label:env=dev") == []
