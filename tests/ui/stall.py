"""The console TUI driven in a process of its own, for the checks whose failure is a frozen app:
the test that starts it waits for it with a deadline and kills it, instead of hanging with it.

`python -m tests.ui.stall race` replays the freeze of a toast shown again after its time: on the
canned fleet, the fleet tab, `v` (the versions view), `p` (a toast there: no version to promote),
`esc`: the fleet screen's toast rack shows that toast again. The UI thread is made to stall
between the rack's check that the toast has time left and the toast's build, until that time is
up: what a worker holding the interpreter does on a busy machine, made certain. Then `q` must quit.

`python -m tests.ui.stall soak SECONDS` drives the app against a real embedded server for
SECONDS: jobs printing logs, refreshes every 0.2 s, on-call passes, a thread keeping the
interpreter busy, short toasts raised while screens open and close, and the keys an engineer
presses (tabs, filter, help, confirmations, versions, log keys). Then `q` must quit.

Each prints `QUIT` once the app has quit; a frozen app is ended by `faulthandler` after its
deadline with every thread's stack on stderr (a hang in Textual's timer loop names `timer.py`).
"""

from __future__ import annotations

import asyncio
import faulthandler
import random
import sys
import threading
import time
from collections.abc import Callable

DEADLINE_S = 120.0
"""A run still going this long after its start (plus a soak's SECONDS) is frozen: its stacks are
dumped and it exits."""


async def _until(pilot, condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def _stall_toasts_shown_again() -> list[float]:
    """Make the UI thread stall, when a toast is built for a notification already shown, until
    that notification's time is up (plus 20 ms): the time left the toast reads is negative.
    Returns the time left each such toast read (filled as they are built)."""
    from textual.widgets._toast import Toast

    seen: set[str] = set()
    read: list[float] = []
    build = Toast.__init__

    def stalled(self, notification) -> None:
        if notification.identity in seen:
            time.sleep(max(0.0, notification.time_left) + 0.02)
            read.append(notification.time_left)
        seen.add(notification.identity)
        build(self, notification)

    Toast.__init__ = stalled
    return read


async def race() -> None:
    from tests.ui.canned import CannedApi, CannedBackend

    from console.config import Config, Defaults
    from console.ui.app import ConsoleApp
    from console.ui.screens.versions import VersionsScreen

    read = _stall_toasts_shown_again()
    cfg = Config(namespace="oncall", plan="pro", defaults=Defaults(hub_model_id="oncall/adapter-{tenant}"))
    app = ConsoleApp(cfg, CannedBackend(CannedApi()), refresh_seconds=3600, watch_seconds=None,
                     stream_metrics=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.press("1")
        await _until(pilot, lambda: app.fleet_table.selected_row is not None, 60, "the fleet")
        await pilot.press("v")
        await _until(pilot, lambda: isinstance(app.screen, VersionsScreen) and app.screen.is_mounted,
                     30, "the versions view")
        await pilot.press("p")  # a toast on the versions view ("Promote: no version selected")
        await _until(pilot, lambda: any("Promote:" in n.message for n in app._notifications), 30, "the toast")
        await pilot.press("escape")  # the fleet screen's toast rack shows the toast again
        await _until(pilot, lambda: bool(read), 30, "the toast shown again")
        print(f"shown again with {read[0]:+.3f} s left", flush=True)
        await _until(pilot, lambda: not app._notifications, 30, "the toast to go")
        await pilot.press("q")
    print("QUIT", flush=True)


def _busy(stop: threading.Event) -> None:
    """Keep the interpreter busy (pure Python: the UI thread waits its turn for it)."""
    while not stop.is_set():
        sum(i * i for i in range(20_000))


async def soak(seconds: float) -> None:
    from console.backend import connect
    from console.config import Config, ServerSettings
    from console.ui.app import ConsoleApp

    cfg = Config(namespace="oncall", plan="pro", server=ServerSettings(max_running_jobs=4))
    backend = connect(cfg)
    stop = threading.Event()
    try:
        ns = backend.namespace
        for tenant, code in (("acme", "import time\nfor i in range(100000):\n print(f'line {i}', flush=True)\n"
                                      " time.sleep(0.01)"),
                             ("globex", "import time\nprint('up', flush=True)\ntime.sleep(600)"),
                             ("wayne", "raise SystemExit('bad_data: no rows')")):
            backend.api.run_job(image="python:3.12", command=[sys.executable, "-u", "-c", code], flavor="t4-small",
                                labels={"app": "console", "tenant": tenant, "kind": "sft", "run": f"{tenant}-soak"},
                                timeout=900, namespace=ns)
        app = ConsoleApp(cfg, backend, refresh_seconds=0.2, watch_seconds=0.5, first_watch_seconds=0.2)
        threading.Thread(target=_busy, args=(stop,), daemon=True).start()
        keys = ["1", "2", "3", "4", "2", "down", "up", "question_mark", "escape", "c", "n", "v", "escape",
                "slash", "t", "escape", "escape", "w", "f", "R", "n", "1", "down", "enter", "2", "end", "home"]
        rng = random.Random(40)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            end = time.monotonic() + seconds
            pressed, lag, beat = 0, 0.0, time.monotonic()
            while time.monotonic() < end:
                # keys as a fast typist sends them (not waiting for the app to be idle), toasts
                # that end while the screens they are on open and close
                app.notify(f"soak toast {pressed}", timeout=rng.choice((0.01, 0.05, 0.3, 1.0, 3.0)))
                app.simulate_key(rng.choice(keys))
                pressed += 1
                await asyncio.sleep(rng.choice((0.0, 0.01, 0.05, 0.2)))
                now = time.monotonic()
                lag, beat = max(lag, now - beat), now
            while len(app.screen_stack) > 1:  # whatever dialog the last keys opened
                await pilot.press("escape")
                await pilot.pause(0.05)
            print(f"pressed {pressed} keys in {seconds:.0f} s; the longest wait for the UI loop {lag:.2f} s",
                  flush=True)
            await pilot.press("q")
        print("QUIT", flush=True)
    finally:
        stop.set()
        backend.close()


if __name__ == "__main__":
    if sys.argv[1] == "race":
        faulthandler.dump_traceback_later(DEADLINE_S, exit=True)
        asyncio.run(race())
    else:
        faulthandler.dump_traceback_later(DEADLINE_S + float(sys.argv[2]), exit=True)
        asyncio.run(soak(float(sys.argv[2])))
