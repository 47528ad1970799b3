"""Scheduled jobs: cron expressions evaluated by croniter, in UTC, firing real jobs.

A schedule is one of HF's `@annually` / `@yearly` / `@monthly` / `@weekly` / `@daily` / `@hourly`,
a 5-field cron expression, or a 6-field one whose first field is seconds (`*/2 * * * * *`: every
two seconds — what tests and demos use; HF itself has minute resolution). A run that falls due
while the previous run of the same schedule is still active is skipped unless the scheduled job
allows `concurrency`; a manual trigger in that case is refused with 409. Missed runs while the
server was down are not replayed: the next run is computed from now.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from croniter import croniter

from console.server.jobs.store import ScheduledJobRecord, Store

log = logging.getLogger("console.server.jobs.scheduler")

_ALIASES = {"@annually": "0 0 1 1 *", "@yearly": "0 0 1 1 *", "@monthly": "0 0 1 * *",
            "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
            "@hourly": "0 * * * *"}


def _expr(schedule: str) -> tuple[str, bool]:
    text = " ".join(schedule.split())
    text = _ALIASES.get(text.lower(), text)
    return text, len(text.split()) == 6


def is_valid_schedule(schedule: str) -> bool:
    if not isinstance(schedule, str) or not schedule.strip():
        return False
    expr, seconds_first = _expr(schedule)
    if len(expr.split()) not in (5, 6):
        return False
    try:
        return bool(croniter.is_valid(expr, second_at_beginning=seconds_first))
    except Exception:  # croniter raises assorted errors on odd input
        return False


def next_run_after(schedule: str, after: float) -> float:
    """The first run strictly after `after` (Unix time), in UTC."""
    expr, seconds_first = _expr(schedule)
    base = datetime.fromtimestamp(after, tz=UTC)
    it = croniter(expr, base, second_at_beginning=seconds_first)
    return float(it.get_next(float))


class Scheduler:
    """Fires due scheduled jobs (one background thread, 0.2 s resolution)."""

    def __init__(self, store: Store, fire: Callable[[ScheduledJobRecord], object],
                 interval: float = 0.2) -> None:
        self.store = store
        self.fire = fire
        self.interval = interval
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        now = time.time()
        for sj_id, schedule, suspended, next_run_at in self.store.scheduled_timing():
            if suspended:
                continue
            if next_run_at is None or next_run_at < now:
                self.store.update_scheduled(sj_id, next_run_at=next_run_after(schedule, now))
        self._thread = threading.Thread(target=self._loop, name="console-jobs-cron", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick(time.time())
            except Exception:
                log.exception("scheduler tick failed")
            self._wake.wait(self.interval)
            self._wake.clear()

    def tick(self, now: float) -> None:
        for sj in self.store.due_scheduled(now):
            self.store.update_scheduled(sj.id, next_run_at=next_run_after(sj.schedule, now))
            if not sj.concurrency and self.store.count_active_for_schedule(sj.id) > 0:
                log.info("scheduled job %s: previous run still active, skipping this run", sj.id)
                continue
            self.fire(sj)
