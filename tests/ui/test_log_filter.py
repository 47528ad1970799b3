"""The log pane's filter (`&`): only the lines that match are on screen, new ones too as they
arrive, with the count; text or `/regex/`, case ignored as in the search."""

from __future__ import annotations

from tests.ui.conftest import opened_box, wait_for
from textual.app import App, ComposeResult

from console.ui.widgets.log_pane import LogPane


class Host(App):
    def compose(self) -> ComposeResult:
        yield LogPane(max_lines=50, id="log")


def shown(pane: LogPane) -> list[str]:
    return list(pane.log_widget.lines)


async def test_the_filter_shows_only_matching_lines_and_follows_new_ones():
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(LogPane)
        gen = pane.start("job-1", "acme sft", "RUNNING")
        pane.feed(gen, [f"step {i} loss=0.{i}" for i in range(5)] + ["WARNING: slow disk", "step 5 loss=0.5"])
        await wait_for(pilot, lambda: pane.received == 7)
        pane.log_widget.focus()
        assert not pane.query("#log-search")  # not built for the first frame: on first use
        await pilot.press("ampersand")
        box = await opened_box(pilot, pane, "#log-search")
        assert box.display and box.has_focus
        await pilot.press(*"warn", "enter")
        assert shown(pane) == ["WARNING: slow disk"]
        assert pane.filtered == 1 and "&warn 1 matching" in str(pane.query_one("#log-title").render())
        # lines arriving while it is on: only the matching ones are drawn, and counted
        pane.feed(gen, ["step 6 loss=0.6", "warning: retrying the push", "step 7 loss=0.7"])
        await wait_for(pilot, lambda: pane.received == 10)
        assert shown(pane) == ["WARNING: slow disk", "warning: retrying the push"]
        assert pane.filtered == 2 and len(pane.lines) == 10  # every line is kept
        # a regular expression
        assert pane.set_filter(r"/step [67] /") == 2
        assert shown(pane) == ["step 6 loss=0.6", "step 7 loss=0.7"]
        # the search finds among the lines on screen
        assert pane.search("loss=0.7") == 1
        # empty: every line again
        assert pane.set_filter("") == 0
        assert len(shown(pane)) == 10 and pane.line_filter is None


async def test_a_bad_regular_expression_says_why_and_changes_nothing():
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(LogPane)
        gen = pane.start("job-1")
        pane.feed(gen, ["alpha", "beta"])
        await wait_for(pilot, lambda: pane.received == 2)
        pane.set_filter("alp")
        pane.log_widget.focus()
        await pilot.press("ampersand")
        box = await opened_box(pilot, pane, "#log-search")
        assert box.value == "alp"  # the box opens on the filter in force
        box.value = "/([/"
        await pilot.press("enter")
        assert pane.line_filter.term == "alp" and shown(pane) == ["alpha"]
        assert box.display  # left open to correct
        assert any("not a regular expression" in n.message for n in app._notifications)


async def test_the_count_follows_lines_that_scroll_out_of_the_kept_window():
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(LogPane)
        gen = pane.start("job-1")
        pane.set_filter("err")
        pane.feed(gen, [f"err {i}" if i % 2 else f"ok {i}" for i in range(40)])  # 20 match
        await wait_for(pilot, lambda: pane.received == 40)
        assert pane.filtered == 20
        pane.feed(gen, [f"ok {i}" for i in range(40, 70)])  # the first 20 kept lines scroll out
        await wait_for(pilot, lambda: pane.received == 70)
        assert len(pane.lines) == 50
        assert pane.filtered == sum(1 for line in pane.lines if "err" in line) == 10
