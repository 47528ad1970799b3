"""The first frame is built once: the main screen is born with its width's class and its start
table's focus, each widget is styled once, as it mounts, the footer lays its keys out in that
frame, not again for the first focus, and Python's cyclic collector waits until that frame is
drawn."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import weakref

import pytest
from tests.ui.canned import CannedApi, CannedBackend
from tests.ui.conftest import FROZEN_NOW, wait_for
from tests.ui.test_snapshots import _settle
from textual.css.stylesheet import Stylesheet
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets._footer import FooterKey

from console import collector
from console.config import Config
from console.ui.app import ConsoleApp
from console.ui.refresh import Refresher
from console.ui.widgets.footer import KeyFooter


def _app(tab: str) -> ConsoleApp:
    return ConsoleApp(Config(namespace="oncall", plan="pro"), CannedBackend(CannedApi()),
                      clock=lambda: FROZEN_NOW, refresh_seconds=3600, start_tab=tab, watch_seconds=None)


@pytest.mark.parametrize(("tab", "table", "width", "wanted"), [
    ("jobs", "JobsTable", 80, "-narrow"), ("fleet", "FleetTable", 130, "-wide"),
])
async def test_the_start_restyles_nothing_for_its_width_or_a_passing_focus(monkeypatch, tab, table, width, wanted):
    """Textual adds a breakpoint class on the first resize and focuses the first focusable widget
    (the tab bar) after composing: each restyles what it touches, all of it for the width's class.
    The console's screen has both from the start: nothing moves before the first frame."""
    focused: list[str] = []
    changed: list[dict[str, bool]] = []
    set_focus, update_classes = Screen.set_focus, Screen.update_classes

    def record_focus(self, widget, *args, **kwargs):
        if widget is not None and widget is not self.focused:
            focused.append(type(widget).__name__)
        return set_focus(self, widget, *args, **kwargs)

    def record_classes(self, classes, *args, **kwargs):
        before = set(self.classes)
        out = update_classes(self, classes, *args, **kwargs)
        if set(self.classes) != before and kwargs.get("update", True):  # a change that restyles
            changed.append(dict(classes))
        return out

    monkeypatch.setattr(Screen, "set_focus", record_focus)
    monkeypatch.setattr(Screen, "update_classes", record_classes)
    app = _app(tab)
    async with app.run_test(size=(width, 24)) as pilot:
        await _settle(pilot)
        assert wanted in app.screen.classes
        assert focused == [table], focused  # the start table only: never the tab bar first
        assert changed == [], changed


async def test_each_widget_is_styled_once_before_the_first_frame(monkeypatch):
    """Textual styles each widget as it mounts, then the whole screen again as the screen first
    resumes, a moment later; the main screen skips that second pass. Before the first frame only
    the jobs table (its focus) and the jobs tab's label (made active) are styled again."""
    styled: dict[Widget, int] = {}
    painted: list[bool] = []
    apply = Stylesheet.apply

    def counted(self, node, *args, **kwargs):
        if isinstance(node, Widget) and not painted:
            styled[node] = styled.get(node, 0) + 1
        return apply(self, node, *args, **kwargs)

    paint = Refresher.paint_snapshot

    def first_frame(self) -> None:  # called from the app's on_mount, as the benchmark stamps it
        paint(self)
        self.app.call_after_refresh(painted.append, True)

    monkeypatch.setattr(Stylesheet, "apply", counted)
    monkeypatch.setattr(Refresher, "paint_snapshot", first_frame)
    app = _app("jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: painted, what="the first frame")
        assert len(styled) > 30, len(styled)
        again = sorted(type(node).__name__ for node, times in styled.items() if times > 1)
        assert again == ["ContentTab", "JobsTable"], again


async def test_the_styles_of_the_first_frame_are_what_a_whole_restyle_gives():
    """The pass the main screen skips would change nothing: every widget's styles (and its
    component classes', the table's header and cursor) are the same after a restyle of the
    whole screen."""
    def styles(screen: Screen) -> list[tuple]:
        return [(node, node.styles.base.get_rules(),
                 {name: node.get_component_styles(name).base.get_rules() for name in node.COMPONENT_CLASSES})
                for node in screen.walk_children(with_self=True)]

    app = _app("jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        before = styles(app.screen)
        app.stylesheet.update_nodes(list(app.screen.walk_children(with_self=True)), animate=False)
        after = styles(app.screen)
        assert len(before) > 30
        changed = [(type(a[0]).__name__, a[0].id) for a, b in zip(before, after, strict=True) if a != b]
        assert changed == [], changed


async def test_the_footer_draws_its_keys_once(monkeypatch):
    """The footer composes its keys with the screen; the first focus (the jobs table, whose keys
    the footer already shows) and the first resize lay nothing out again."""
    recomposed: list[int] = []
    recompose = KeyFooter.recompose

    async def counted(self):
        recomposed.append(1)
        await recompose(self)

    monkeypatch.setattr(KeyFooter, "recompose", counted)
    app = _app("jobs")
    async with app.run_test(size=(200, 24)) as pilot:
        await _settle(pilot)
        footer = app.query_one(KeyFooter)
        await wait_for(pilot, lambda: len(footer.query(FooterKey)) >= 2, what="the footer's keys")
        shown = [key.key_display for key in footer.query(FooterKey)]
        assert shown[:2] == ["?", "q"], shown
        assert recomposed == []
        app.log_pane.log_widget.focus()  # the log pane's own keys (its search, its follow): laid out again
        await wait_for(pilot, lambda: recomposed, what="the footer laid out for the log pane")
        await wait_for(pilot, lambda: "search" in [k.action for k in footer.query(FooterKey)],
                       what="the log pane's search key in the footer")
        assert len(recomposed) == 1, recomposed


def test_the_tui_start_pauses_the_collector_until_it_returns():
    """`console` pauses Python's cyclic collector before it imports the UI (the start allocates
    about 100,000 long-lived objects; at the default thresholds the collector scans them some
    140 times before the first frame); a start that ends, however it ends, collects again."""
    code = textwrap.dedent("""
        import gc, json
        import console.commands.tui as tui
        seen = {}
        def run_tui(args):
            seen["collecting"] = gc.isenabled()
            raise KeyboardInterrupt
        tui.run_tui = run_tui
        from console.cli import main
        seen["code"] = main([])
        seen["after"] = gc.isenabled()
        print(json.dumps(seen))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"collecting": False, "code": 130, "after": True}


async def test_the_collector_runs_again_once_the_first_frame_is_drawn():
    """Paused by the start, the collector is back after the first frame, with what the start
    allocated frozen (never scanned again), and what the start left in unreachable cycles freed,
    not frozen for the app's life."""
    class Garbage:
        pass

    collector.pause()
    try:
        assert not gc.isenabled()
        cycle = Garbage()
        cycle.me = cycle
        gone = weakref.ref(cycle)
        del cycle
        app = _app("jobs")
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, gc.isenabled, what="the collector running again")
            assert gc.get_freeze_count() > 10_000
            assert gone() is None, "the start's cyclic garbage is frozen, not freed"
    finally:
        collector.resume()
        gc.unfreeze()
        gc.enable()
