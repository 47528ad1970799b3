"""The stale-live check of an on-call pass: each scheduled tenant whose live adapter version is
older than `notify.stale_live_periods` of its schedule's periods is flagged, and an event once per
live version (its runs keep failing, or pass and are never promoted).

A repo's live version is read (`console.oncall.livereads`: not a repo its owner's listing lacks)
when it was never read, when by what was read it may have gone stale since, and else once per
`LIVE_RECHECK_S`, at most `LIVE_RECHECKS_PER_PASS` of those a pass, the longest unread first; what
was read is kept in the on-call store. The whole check runs at most every `LIVE_EVERY_S`; the
passes between give what it found last.

Blocking (HTTP, SQLite): called from `console.oncall.watcher.Watcher.check`, in its thread.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from console import jobspec
from console.inputs import format_duration
from console.oncall.notify import Event
from console.oncall.report import StaleLive, WatchReport, problem_text
from console.oncall.store import LiveRead, OnCallStore

LIVE_EVERY_S = 600.0
"""How often the live adapter versions are looked at (`StaleLiveCheck.read` says which are read)."""
LIVE_RECHECK_S = 6 * 3600.0
"""A repo's live version is read again at least this often, even when by what was read it cannot
have gone stale yet (a roll back or a tag moved by hand makes it older)."""
LIVE_RECHECKS_PER_PASS = 250
"""At most this many of those re-reads a pass, the longest unread first: at 10,000 tenants they
spread over the passes instead of coming all at once."""


class StaleLiveCheck:
    """The stale-live check of one watcher (see the module docstring)."""

    def __init__(self, api: Any, store: OnCallStore) -> None:
        self.api = api
        self.store = store
        self.checked_at: float | None = None
        """When the live versions were last looked at (monotonic; None: never)."""
        self.found: list[StaleLive] = []
        self._periods: dict[tuple[str, date], float | None] = {}

    def events(self, now: datetime, periods: int, report: WatchReport,
               schedules: Callable[[], list[Any]]) -> list[Event]:
        """The pass's stale-live events, the tenants flagged in `report`. `schedules` gives the
        schedules (it may raise: said in the report, and nothing is flagged)."""
        if periods <= 0:
            return []
        at = time.monotonic()
        if self.checked_at is None or at - self.checked_at >= LIVE_EVERY_S:
            self.checked_at = at
            try:
                scheduled = schedules()
            except Exception as exc:
                report.problems.append(f"schedules: {problem_text(exc)}")
                self.found = []
            else:
                self.found = self.read(scheduled, now, periods, report)
        report.stale_live = list(self.found)
        events = []
        for s in report.stale_live:
            events.append(Event(
                key=f"stale_live:{s.repo_id}:{s.commit}", kind="stale_live", level="WARN",
                title=f"{s.tenant}'s live adapter is {format_duration(s.age_s)} old",
                text=(f"live {s.commit[:8]} on {s.repo_id} is older than {periods} periods of its schedule "
                      f"({format_duration(s.period_s)} each): its runs fail, or pass and are not promoted "
                      f"(console adapters {s.tenant})"),
                at=now.timestamp(), tenant=s.tenant, data=s.to_dict(),
            ))
        return events

    def read(self, scheduled: list[Any], now: datetime, periods: int, report: WatchReport) -> list[StaleLive]:
        """The scheduled tenants whose live version is older than `periods` of their schedule's
        (reading the live versions that are due: see the module docstring). A pass at 10,000
        tenants reads a few repos, not 20,000 requests, and a restart does not read them again."""
        from console.oncall.livereads import read_live

        at = now.timestamp()
        tenants: list[tuple[Any, jobspec.TrainingRequest, float]] = []
        seen: set[str] = set()
        for sj in scheduled:
            req = jobspec.read_request(sj)
            if req is None or not req.hub_model_id or req.hub_model_id in seen or getattr(sj, "suspend", False):
                continue
            seen.add(req.hub_model_id)
            period_s = self.period(str(getattr(sj, "schedule", "") or ""), now)
            if period_s is not None:
                tenants.append((sj, req, period_s))
        known = self.store.live_reads()

        def may_be_stale(read: LiveRead, period_s: float) -> bool:
            return read.made_at is not None and at - read.made_at > periods * period_s

        first: list[str] = []  # never read, or stale by what was read (read again: it may have moved)
        again: list[str] = []
        for _sj, req, period_s in tenants:
            read = known.get(req.hub_model_id)
            if read is None or may_be_stale(read, period_s):
                first.append(req.hub_model_id)
            elif at - read.read_at >= LIVE_RECHECK_S or at < read.read_at:
                again.append(req.hub_model_id)
        again.sort(key=lambda repo: known[repo].read_at)
        for repo_id, exc in read_live(self.api, self.store, first + again[:LIVE_RECHECKS_PER_PASS], at, known):
            report.problems.append(f"{repo_id}: {problem_text(exc)}")  # (repos that do not exist: not read)
        found: list[StaleLive] = []
        for sj, req, period_s in tenants:
            read = known.get(req.hub_model_id)
            if read is not None and read.commit is not None and may_be_stale(read, period_s):
                found.append(StaleLive(tenant=req.tenant, repo_id=req.hub_model_id, commit=read.commit,
                                       age_s=at - (read.made_at or at), period_s=period_s,
                                       scheduled_job_id=sj.id))
        return found

    def period(self, schedule: str, now: datetime) -> float | None:
        """A schedule's period: the longest gap between its next firings (worked out once a day
        per schedule: thousands of tenants share a handful of schedules); None when the cron
        reader does not know it."""
        from console.cron import next_runs

        key = (schedule, now.date())
        if key not in self._periods:
            if len(self._periods) > 4096:
                self._periods.clear()
            try:
                fires = next_runs(schedule, 4, after=now)
            except Exception:  # noqa: BLE001 - a schedule the cron reader does not know: no period
                fires = []
            gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(fires)]
            self._periods[key] = max(gaps) if gaps and max(gaps) > 0 else None
        return self._periods[key]
