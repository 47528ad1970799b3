"""The on-call watcher inside the TUI: the same passes as `console watch`, off the UI thread.

Every `interval` seconds (the first pass a few seconds after start, once the app's first reads of
the fleet are done: each pass is given the refresher's schedules, copied as it starts, instead of
reading them again) one thread
worker (group "oncall") runs `console.oncall.Watcher.check()`: failed and timed-out jobs, stalls,
jobs that will hit their timeout, Trackio ERROR alerts, the month over budget. The events new to this app's
consumer (`tui`, or `web` under `console web`: the on-call store keeps each consumer's record of
what it was given, so a restart repeats nothing, and what a TUI showed is still news to `console
watch` and a webhook) become Textual notifications here (a pass with many shows a few
and counts the rest in one, `TOASTS_PER_PASS`; the first, at start-up, one in all), and each
goes to the `[notify]` channels: the terminal escapes (bell, OSC 9 / 777) are written by the UI
thread, the webhooks by the notifier's own thread. The pass's forecasts, stalls and long waits
in SCHEDULING mark the jobs table's rows (`STALL 14m`, `TMOUT+12m`, `WAIT 12h`), and the status line counts them and the
SCHEDULING queue (`2 STALLED  1 TMOUT  3 WAIT h200x8 12h`); a schedule failing
`notify.schedule_failures` runs in a row leads its fleet row's Schedule cell (`FAIL 3x`) and is
counted in the status line (`1 SCHED FAIL`).

A pass never blocks the UI: it runs in a thread, a pass still running skips the next tick, and a
failing pass (the backend gone, the store unreadable) is said once as a warning and tried again
at the next tick.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.message import Message

from console import levels
from console.jobs import queue_tag
from console.memory import give_back_memory
from console.ui.oncall_marks import OnCallMark, oncall_marks
from console.ui.widgets.status_line import StatusLine

if TYPE_CHECKING:
    from console.oncall import Watcher, WatchReport
    from console.ui.base import ConsoleBase

WATCH_SECONDS = 30.0
"""Seconds between on-call passes in the TUI (`console watch --interval` for the headless one)."""
FIRST_WATCH_SECONDS = 5.0
"""The first pass comes this long after start (after the first frame and the first reads)."""
FIRST_WATCH_WAITS = 120
"""The first pass waits, a second at a time, up to this many times for the app's first reads of the
whole fleet to end (an unreachable backend never ends them: the pass then runs and says so)."""
TOASTS_PER_PASS = 3
"""A pass with more events than this shows the first ones as toasts (errors first) and one toast
for the rest: a night of 40 failed jobs is not 40 toasts over the screen for 15 s. Every event
still goes to the bell, OSC and webhook channels, and the jobs table lists the failed jobs."""
FIRST_PASS_TOASTS = 1
"""The first pass (at start-up, with what happened while nobody watched) shows one toast: its one
event, or one counting them all (three toasts cover half of an 80x24 screen as it first opens)."""
TOAST_SECONDS = 15


def consumer() -> str:
    """Whose record of the on-call events shown this app keeps: `tui` in a terminal, `web` in an
    app `console web` serves (it sets `CONSUMER_ENV`)."""
    import os

    from console.oncall.notify import CONSUMER_ENV

    name = os.environ.get(CONSUMER_ENV, "").strip()
    return name if name in ("tui", "web") else "tui"


@dataclass
class OnCallChecked(Message):
    """One on-call pass ended: its report (None when it failed) and the terminal escapes to write."""

    report: WatchReport | None
    escapes: list[str] = field(default_factory=list)
    webhook_failures: list[str] = field(default_factory=list)
    error: str | None = None


class OnCallWatch:
    """The app's on-call passes (see the module docstring). `interval` None: no passes at all."""

    def __init__(
        self,
        app: ConsoleBase,
        *,
        interval: float | None = WATCH_SECONDS,
        first_delay: float = FIRST_WATCH_SECONDS,
        make_watcher: Callable[[Callable[[str], None]], Watcher] | None = None,
    ) -> None:
        self.app = app
        self.interval = interval
        self.first_delay = first_delay
        self._make_watcher = make_watcher
        self._watcher: Watcher | None = None
        self._escapes: list[str] = []
        self._lock = threading.Lock()
        self._running = False
        self._failing = False
        self._first_waits = 0
        self.passes = 0
        """Passes that ended (with a report or not)."""
        self.last_report: WatchReport | None = None
        self.marks: dict[str, OnCallMark] = {}
        self.written: list[str] = []
        """The terminal escapes written so far (the latest few)."""

    # -- the loop (UI thread)

    def start(self) -> None:
        if self.interval is None:
            return
        self.app.set_timer(self.first_delay, self._first_pass)

    def _first_pass(self) -> None:
        ready = self.app.refresher.synced or self._make_watcher is not None
        if not ready and self._first_waits < FIRST_WATCH_WAITS:
            # the app's first reads are still going (at 10,000 tenants, tens of seconds): a pass
            # beside them would read every schedule a second time at the same moment
            self._first_waits += 1
            self.app.set_timer(1.0, self._first_pass)
            return
        self.run_pass()
        if self.interval is not None:
            self.app.set_interval(self.interval, self.run_pass)

    def run_pass(self) -> None:
        """Start a pass in a thread worker, unless one is still running."""
        if self._running or not self.app.is_running:
            return
        self._running = True
        refresher = self.app.refresher  # the pass reads a copy of the app's schedules, taken here
        kept = list(refresher.scheduled.values()) if refresher.scheduled_read else None
        self.app.run_worker(partial(self._check, kept), thread=True, group="oncall", exit_on_error=False,
                            description="on-call watch")

    # -- one pass (worker thread)

    def _write(self, text: str) -> None:
        with self._lock:
            self._escapes.append(text)

    def _new_watcher(self) -> Watcher:
        if self._make_watcher is not None:
            return self._make_watcher(self._write)
        from console.oncall import Watcher

        session = self.app.session
        session.ensure_connected()
        return Watcher(session.api, session.cfg, namespace=session.namespace,
                       backend_kind=session.backend_kind, reader=session.metrics_reader,
                       ledger=self.app.ledger, write=self._write, clock=session.clock,
                       consumer=consumer())

    def _check(self, kept: list[Any] | None) -> None:
        """One pass. `kept`: the schedules as the app's last refresh read them (None until one
        has), copied on the UI thread: the pass's projection and stale-live check read them
        instead of reading their own."""
        try:
            if self._watcher is None:
                self._watcher = self._new_watcher()
            report = self._watcher.check(kept)
            give_back_memory()  # a pass's budget projection reads every schedule and the ledger
            failures = self._watcher.notifier.failures
            self._watcher.notifier.webhooks.failures.clear()
            message = OnCallChecked(report, webhook_failures=failures)
        except Exception as exc:  # said once in the UI; the next tick tries again
            text = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
            message = OnCallChecked(None, error=text)
        with self._lock:
            message.escapes, self._escapes = self._escapes, []
        self.app.post_message(message)  # not taken only when the app is closing: no pass comes after

    # -- what a pass found (UI thread)

    def apply(self, message: OnCallChecked) -> None:
        self._running = False
        self.passes += 1
        for text in message.escapes:
            self.write_terminal(text)
        for failure in message.webhook_failures[-3:]:
            self.app.notify(f"Webhook failed: {failure}", severity="warning", timeout=8)
        if message.error is not None:
            if not self._failing:
                self.app.notify(f"On-call watch failed: {message.error} (retrying)", severity="warning",
                                timeout=8)
            self._failing = True
            return
        self._failing = False
        report = message.report
        if report is None:
            return
        limit = FIRST_PASS_TOASTS if self.last_report is None else TOASTS_PER_PASS
        self.last_report = report
        for title, text, level in toasts(report.events, limit):
            self.app.notify(text, title=title, timeout=TOAST_SECONDS,
                            severity="error" if level == levels.ERROR else "warning")
        self.marks = oncall_marks(report.forecasts, report.stalls, report.stuck,
                                  {row.id: row.flavor for row in report.waiting})
        try:
            self.app.jobs_table.show_oncall(self.marks)
            self.app.query_one(StatusLine).set_oncall(len(report.stalled), len(report.overruns),
                                                      queue_tag(report.queue), bool(report.stuck),
                                                      len(report.failing))
            self.app.fleet_table.show_failing({s.scheduled_job_id: s.failures for s in report.failing})
        except Exception:  # the app is closing: nothing to mark
            pass

    def write_terminal(self, text: str) -> None:
        """A bell or desktop-notification escape, straight to the terminal (not the screen)."""
        self.written = [*self.written[-19:], text]
        driver = getattr(self.app, "_driver", None)
        if driver is None:
            return
        try:
            driver.write(text)
        except Exception:  # a closed terminal
            pass

    def close(self) -> None:
        """Let the queued webhooks go on their own thread; never wait for them."""
        if self._watcher is not None:
            self._watcher.close(timeout=0.0)


def toasts(events: list[Any], limit: int = TOASTS_PER_PASS) -> list[tuple[str, str, str]]:
    """(title, text, level) of the toasts for one pass's events: each event while they are at most
    `limit`, else the first `limit - 1`, errors first, and one toast counting the rest."""
    if len(events) <= limit:
        return [(e.title, e.text, e.level) for e in events]
    ordered = sorted(events, key=lambda e: e.level != levels.ERROR)  # stable: in order within a level
    from console.oncall.notify import KIND_WORDS

    shown, rest = ordered[:limit - 1], ordered[limit - 1:]
    counts = Counter(event.kind for event in rest)  # in the order the kinds first come
    text = ", ".join(f"{n} {KIND_WORDS.get(kind, kind)}" for kind, n in counts.items())
    level = levels.ERROR if any(e.level == levels.ERROR for e in rest) else levels.WARN
    more = "more " if shown else ""
    summary = (f"{len(rest)} {more}on-call events", f"{text} (the jobs tab lists them; `console watch` prints each)",
               level)
    return [(e.title, e.text, e.level) for e in shown] + [summary]
