"""The console never freezes: no timer is armed with a negative or non-finite delay (a toast shown
again after its time included), a dialog answered twice closes once, and `q` quits after minutes
of screens, toasts, refreshes and keys under load.

The checks whose failure is a frozen app run it in a process of their own (`tests/ui/stall.py`)
and end it at a deadline, with its threads' stacks, instead of hanging with it."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import soak
from tests.ui.canned import CannedApi, CannedBackend
from tests.ui.conftest import notes, wait_for
from textual.widgets import Button

from console.config import Config
from console.ui import timers
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen

ROOT = Path(__file__).resolve().parents[2]
SOAK_SECONDS = soak(6.0, 180.0)


def _drive(*args: str, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]), PYTHONWARNINGS="ignore")
    try:
        return subprocess.run([sys.executable, "-m", "tests.ui.stall", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the app froze: still running after {timeout:.0f} s; its output:\n"
                             f"{exc.stdout or ''}{exc.stderr or ''}") from None


def _quit(run: subprocess.CompletedProcess) -> list[str]:
    said = run.stdout.splitlines()
    assert run.returncode == 0 and said[-1:] == ["QUIT"], (
        f"the app did not quit (exit {run.returncode}): {run.stdout}\n{run.stderr[-6000:]}")
    return said


def test_a_toast_shown_again_after_its_time_does_not_freeze_the_app():
    """The UI thread stalls between the toast rack's check and the toast's build until the toast's
    time is up, as a screen opens over it (see `stall.race`): the toast reads a negative time left,
    goes at once, and `q` quits (Textual alone arms a negative timer and spins for good)."""
    said = _quit(_drive("race", timeout=150))
    shown_again = [line for line in said if line.startswith("shown again with -")]
    assert shown_again, said  # the race happened: the toast was built after its time


@pytest.mark.timeout(SOAK_SECONDS + 300)
def test_keys_toasts_screens_and_refreshes_under_load_then_q_quits():
    """`stall.soak`: real jobs on the embedded server (a log flood, a running job, a failure),
    refreshes every 0.2 s, on-call passes, a busy thread, toasts of 10 ms to 3 s, random keys
    (tabs, filter, help, confirmations, versions, log keys) with no wait between them; 6 s by
    default, 3 minutes with CONSOLE_SOAK=full. Then `q` quits."""
    said = _quit(_drive("soak", str(SOAK_SECONDS), timeout=SOAK_SECONDS + 150))
    assert any(line.startswith("pressed ") for line in said), said


@pytest.mark.parametrize("delay, armed", [
    (-0.009, timers.MIN_DELAY), (0, timers.MIN_DELAY), (1e-5, timers.MIN_DELAY), (float("nan"), timers.MIN_DELAY),
    (float("-inf"), timers.MIN_DELAY), (float("inf"), timers.MAX_DELAY), ("soon", timers.MIN_DELAY),
    (0.25, 0.25), (3600, 3600.0),
])
def test_a_delay_is_armed_finite_and_at_least_the_minimum(delay, armed):
    assert timers.safe_delay(delay) == armed and math.isfinite(timers.safe_delay(delay))


async def test_the_apps_timers_with_a_negative_or_nan_delay_fire_and_the_app_goes_on():
    app = ConsoleApp(Config(namespace="oncall", plan="pro"), CannedBackend(CannedApi()), refresh_seconds=3600,
                     watch_seconds=None, stream_metrics=False)
    assert timers.guarded()  # checked first: an unguarded negative timer would hang this test's loop
    fired: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        app.set_timer(-0.01, lambda: fired.append("negative"))
        ticks = app.set_interval(float("nan"), lambda: fired.append("nan"))
        app.jobs_table.set_timer(-5, lambda: fired.append("widget"))
        await wait_for(pilot, lambda: {"negative", "nan", "widget"} <= set(fired), what="the timers")
        ticks.stop()
        await pilot.press("2")  # keys still answer
        assert app.active_tab == "jobs"


async def test_a_dialog_answered_twice_takes_the_first_answer_and_closes_once():
    """Two answers before the dialog has closed (a key and a click on its button, typed faster
    than the screen goes): the first is the answer, the second does nothing (no cancel after a
    no), and the jobs screen under the dialog stays."""
    app = ConsoleApp(Config(namespace="oncall", plan="pro"), CannedBackend(CannedApi()), refresh_seconds=3600,
                     watch_seconds=None, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.jobs_table.selected_row is not None, what="the jobs")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted
                                      and bool(app.screen.query("#yes")),
                       what="the confirmation")
        dialog = app.screen
        dialog.action_no()  # `n`
        dialog.query_one("#yes", Button).press()  # and a click on Yes before it closed
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the dialog to close")
        await wait_for(pilot, lambda: bool(notes(app)), what="the answer said")
        await pilot.pause()
        assert len(app.screen_stack) == 1 and app.active_tab == "jobs"
        assert notes(app) == ["Cancel: not done"]


async def test_keys_typed_just_after_q_are_dropped_and_the_app_closes_cleanly():
    """`q` and then keys at once, as a fast typist sends them: the keys reach an app that is closing
    its screens and are dropped; the app exits without a traceback (tried five times: the keys land
    at different points of the shutdown)."""
    for _ in range(5):
        app = ConsoleApp(Config(namespace="oncall", plan="pro"), CannedBackend(CannedApi()), refresh_seconds=3600)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            app.simulate_key("q")
            for key in "2323":
                app.simulate_key(key)
        assert app.return_code in (None, 0)
