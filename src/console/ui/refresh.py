"""The refresh coordinator: what the console knows about the namespace, and how it keeps it fresh.

`Refresher` owns the app's picture of the backend and the polling that keeps it current. The
history lives in the local cache (`console.cache.JobCache`, SQLite in the data dir); memory holds
only what the screens need at once: the active jobs, a mark of each tenant's newest and newest
completed run (`console.cache.LatestRuns`, all the fleet needs), the scheduled jobs, the derived
fleet rows and the outcomes read from finished runs' log tails.

* Start: `paint_snapshot` shows the last picture from the cache at once, marked with its age
  (before huggingface_hub is even imported); the first refresh connects the backend in its worker
  and reads what changed since: with a cache, the head of the newest-first list down to the first
  job already known to be finished, and the active jobs (the first fresh frame), then the
  scheduled jobs; without one, the first page, then the whole list, streamed into the cache.
* A refresh runs in a thread worker (group "refresh"), reads only what may have changed (the head
  of the list, the jobs known to be active, the scheduled jobs when one fired), builds the rows,
  writes them to the cache and posts `DataRefreshed`; every `FULL_SYNC_SECONDS` since the last
  whole read (and on `ctrl+r`) it re-reads everything, streaming it into the cache in batches, so
  the memory it takes does not grow with the history.
* When the app applies that message (`apply`), the panes are updated with what changed and a
  one-shot timer is re-armed, so refreshes never pile up. The fleet is derived in the worker when
  the schedules were read, and on the UI thread only for the tenants a refresh touched.
* A second worker (group "outcomes") reads a few log tails per refresh for the fleet's last loss
  and adapter, the tenants on screen first.

Who owns what: everything on the `Refresher` belongs to the UI thread, which alone reads and
writes it. A refresh starts there (`refresh`), which freezes what the read needs into a
:class:`~console.ui.refresh_read.ReadPlan` (the jobs last seen active, whether to read the head of
the list or everything, the first frame's prefetch, a read-only view of the outcomes known) and
gives it to a :class:`~console.ui.refresh_read.RefreshRead`, the worker's body, which holds nothing
of the refresher's: it reads that plan, the cache (its own connection) and the backend, asks the
UI thread through `App.call_from_thread` for the rest (`_latest_now`: a copy of each tenant's newest
runs; `_on_connected`), and hands back a `DataRefreshed`, which only `apply`, on the UI thread,
merges. The screen is told through the callbacks the app gives (the app routes them to its
widgets); the refresher queries no widget. It talks to the backend only through `HfApi`
(`session.api`), and must not import the app module (the app imports it) nor the server.

What stands beside it: the read (`ui/refresh_read.py`), the cache (`console.cache`), the rows
(`console.jobs`), the fleet (`console.fleet`), the streams (`ui/streams.py`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from textual.app import App

from console.cache import snapshot
from console.cache.docs import job_info
from console.cache.latest import LatestRuns, RunMark
from console.jobs import JobRow, Prefetch, job_row
from console.memory import give_back_memory
from console.stages import ERROR, TERMINAL_STAGES
from console.ui.session import Session

if TYPE_CHECKING:
    from console.ui.refresh_keep import Kept
    from console.ui.refresh_read import DataRefreshed, OutcomesFetched, ReadPlan

__all__ = ["DataRefreshed", "JobsChanged", "News", "OutcomesFetched", "ReadPlan", "Refresher"]
_READ_NAMES = ("DataRefreshed", "OutcomesFetched", "ReadPlan")
"""The read's messages and plan, from `refresh_read`: it loads with the first refresh, after the
first frame (which draws nothing from it)."""


def __getattr__(name: str) -> Any:
    if name in _READ_NAMES:
        from console.ui import refresh_read

        return getattr(refresh_read, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

REFRESH_SECONDS = 2.0
FULL_SYNC_SECONDS = 900.0
"""Every this often a refresh re-reads the whole job list and every scheduled job (a safety net:
the quiet refreshes already catch new, changed and deleted jobs). Counted from the last whole
read, kept in the cache across restarts."""
HEAD_SCAN_EVERY = 5
"""Every this many refreshes, also read the head of the job list (jobs that began and ended
between two refreshes); the others read only the active jobs."""
OUTCOME_FETCHES_PER_REFRESH = 8
"""Log tails read per refresh for the fleet's last loss / adapter: bounded, whatever the tenants."""
RETRY_SECONDS = 5.0
FIRED_READ_SECONDS = 30.0
"""A run of a schedule appeared: the schedules are read again (its next run, its last job) at once
if they were last read this long ago, else once that much time has passed. A fleet whose 2,000
schedules fire over minutes reads them twice a minute, not at every refresh that sees a new run."""
SNAPSHOT_ROWS = 100
"""Rows of the jobs table painted from the cache at start (a screenful or more; the rest come
with the catch-up, or a scroll)."""
SNAPSHOT_SAVE_SECONDS = 60.0
"""The fleet rows kept for the next start are written at most this often between whole reads."""
TERMINAL = TERMINAL_STAGES


class News:
    """What changed since its reader last took it (`take`): the tenants whose fleet rows changed
    (None: the whole fleet), the failed jobs' rows a refresh brought, and whether the jobs table
    was reloaded whole. Filled as refreshes apply; the reader's work follows it, not the fleet."""

    def __init__(self) -> None:
        self.tenants: set[str] | None = set()
        self.failed_rows: dict[str, JobRow] = {}
        self.reloaded = False

    def fleet(self, tenants: set[str] | None) -> None:
        if tenants is None:
            self.tenants = None
        elif self.tenants is not None:
            self.tenants |= tenants

    def rows(self, rows: list[JobRow]) -> None:
        self.failed_rows.update((r.id, r) for r in rows if r.stage == ERROR)

    def take(self) -> tuple[set[str] | None, dict[str, JobRow], bool]:
        out = (self.tenants, self.failed_rows, self.reloaded)
        self.tenants, self.failed_rows, self.reloaded = set(), {}, False
        return out


@dataclass(frozen=True)
class JobsChanged:
    """What the jobs table shows again after a refresh: everything (`reload`), or `rows` and
    the `gone` ids (the table keeps the job its cursor is on)."""

    reload: bool
    rows: list[JobRow]
    gone: list[str]


class Refresher:
    """The app's data and the polling that keeps it fresh (see the module docstring)."""

    def __init__(
        self,
        app: App[Any],
        session: Session,
        *,
        interval: float,
        first_frame: Prefetch | None = None,
        on_rows: Callable[[dict[str, JobRow]], None] = lambda rows: None,
        tenants_in_view: Callable[[], list[str]] = list,
        ledger: Any = None,
        on_fleet: Callable[[list[Any]], None] = lambda rows: None,
        on_ledger: Callable[[DataRefreshed], None] = lambda message: None,
        on_connected: Callable[[str], None] = lambda endpoint: None,
        on_jobs: Callable[[JobsChanged], None] = lambda change: None,
        on_snapshot: Callable[[datetime], None] = lambda at: None,
        on_fresh: Callable[[datetime], None] = lambda at: None,
        on_outcomes: Callable[[list[Any]], None] = lambda rows: None,
    ) -> None:
        """The screen is told through these, on the UI thread: `on_rows`, the rows that changed
        after each refresh (the job on screen follows them); `on_jobs`, what the jobs table shows
        again; `on_fleet`, the fleet rows changed; `on_outcomes`, fleet rows whose last loss and
        adapter were read; `on_snapshot`, the picture from the cache is painted (with its age);
        `on_fresh`, fresh data came (with its time); `on_connected`, the backend answered (its
        endpoint); `on_ledger`, a refresh for the costs pane. `tenants_in_view`: the tenants whose
        last outcome to read first; `ledger`: where finished jobs are recorded (from the worker:
        it opens its own connection)."""
        self.app = app
        self.session = session
        self.cache = session.cache
        self.on_rows = on_rows
        self.tenants_in_view = tenants_in_view
        self.ledger = ledger
        self.on_fleet = on_fleet
        self.on_ledger = on_ledger
        self.on_connected = on_connected
        self.on_jobs = on_jobs
        self.on_snapshot = on_snapshot
        self.on_fresh = on_fresh
        self.on_outcomes = on_outcomes
        self.interval = interval
        self._first_frame = first_frame
        self.job_infos: dict[str, Any] = {}
        """The jobs kept whole in memory: the active ones. Every job is in the cache (`job_info`);
        each tenant's newest runs are also kept as marks (`latest`)."""
        self.job_rows: dict[str, JobRow] = {}
        """The rows of `job_infos`, and of the active jobs the snapshot showed (`job_row`)."""
        self.active_ids: set[str] = set()
        """Ids of the jobs last seen SCHEDULING or RUNNING (kept in step with `job_rows`)."""
        self.latest = LatestRuns()
        self.scheduled: dict[str, Any] = {}
        self.scheduled_read = False
        """True once a refresh has read the scheduled jobs (`scheduled` is then the whole list)."""
        self.fleet_rows: dict[str, Any] = {}
        self.outcomes: dict[str, Any] = {}
        """job id -> what its log tail said (`OutcomesFetched`): replaced when outcomes come, never
        changed in place (a refresh's worker reads the dict it was given)."""
        self.newest_success: dict[str, str] = {}
        """tenant -> id of its newest completed training run (whose outcome the fleet shows), kept
        in step with `latest` tenant by tenant as runs change."""
        self.outcomes_missing: dict[str, str] = {}
        """job id -> tenant: the newest successes whose outcome is not read yet (what
        `_want_outcomes` picks from), kept in step with `newest_success` and `outcomes`."""
        self.news = News()
        """What changed since the reasons for failed runs were last looked for (`ui/reasons.py`)."""
        self.work = {"jobs_checked": 0, "tenants_checked": 0, "rows_ticked": 0, "schedule_reads": 0}
        """Diagnostics: jobs whose keeping in memory was decided, tenants whose newest success
        was re-checked, running jobs' rows rebuilt as their time ticked, reads of the schedules
        applied. They grow with what changed and what runs, not with the fleet nor the queue: a
        quiet refresh adds 0 to the first two."""
        self.last_refresh: datetime | None = None
        self.refresh_count = 0
        self.synced = False
        """True once every job is known (read whole, or caught up from the cache)."""
        self.connected = False
        self.snapshot_at: datetime | None = None
        """When the data of the picture painted from the cache was read (None once fresh data
        replaced it, or when there was no picture)."""
        self._warm = False
        """The cache held jobs at start: catch up from it instead of reading everything."""
        self._timer: Any = None
        self._last_full = 0.0
        self._fleet_saved = 0.0
        self._plans = 0
        self._want_full = 0
        self._want_scheduled = 0
        """The number of the refresh that asked for a whole read / a read of the schedules, until
        one that did it, started then or later, is applied (0: none wanted): each refresh asks
        again (a refresh replaces the one before it, which may have stopped before it got there)."""
        self._schedules_at = float("-inf")
        """When the schedules were last read (monotonic)."""
        self._fired_waiting = False
        """A schedule fired a run since then, and the read it calls for waits its turn."""
        self._painted = threading.Event()
        """Set once the first fresh rows are on screen (the worker waits for it: see
        `refresh_read.FRESH_PAINT_WAIT_SECONDS`)."""

    # -- the snapshot (UI thread, before anything is read) ---------------------------------------

    def paint_snapshot(self) -> None:
        """Show the last picture from the cache, marked with its age (nothing if there is none)."""
        cache = self.cache
        at = snapshot.seen_at(cache)
        synced = cache.synced_at()
        if synced is not None:
            self._last_full = time.monotonic() - max(0.0, time.time() - synced)
        if at is None:
            return
        self._warm = synced is not None
        self.snapshot_at = at
        active = cache.active()
        self.active_ids = {r.id for r in active}
        self.job_rows.update((r.id, r) for r in active)
        self.on_snapshot(at)

    def load_snapshot_fleet(self) -> None:
        """The fleet rows kept from the last run, while no fresh ones have come (the fleet tab
        paints them; loading them imports the fleet's code, so not before the first frame)."""
        if self.fleet_rows or self.snapshot_at is None:
            return
        fleet = snapshot.load_fleet(self.cache)
        if fleet is not None:
            self.fleet_rows = {r.tenant: r for r in fleet}
            self.news.fleet(None)
            self.on_fleet(fleet)

    # -- reading (started here, read in a worker thread: `refresh_read`) ------------------------

    def refresh(self, full: bool = False, scheduled: bool = False) -> None:
        """Re-read what changed: new jobs (the head of the newest-first list, up to the first job
        already known to be finished), the jobs known to be active, and every scheduled job when
        one fired or an action touched them. Each refresh costs a few requests whatever the
        number of tenants; a full re-read (every FULL_SYNC_SECONDS, and `ctrl+r`) catches the rest
        (label edits, jobs that started and ended between two refreshes)."""
        if not self.app.is_running:
            return  # a timer that fired as the app closes
        self._plans += 1
        if full and not self._want_full:
            self._want_full = self._plans
        if scheduled and not self._want_scheduled:
            self._want_scheduled = self._plans
        from console.ui.refresh_read import ReadPlan, RefreshRead

        due = time.monotonic() - self._schedules_at >= FIRED_READ_SECONDS
        plan = ReadPlan(
            full=bool(self._want_full) or time.monotonic() - self._last_full >= FULL_SYNC_SECONDS,
            scheduled=bool(self._want_scheduled) or (self._fired_waiting and due),
            fired_read_due=due,
            head_scan=self.refresh_count % HEAD_SCAN_EVERY == 0,
            synced=self.synced,
            warm=self._warm,
            connected=self.connected,
            active=frozenset(self.active_ids),
            held=MappingProxyType(dict(self.job_infos)),
            first_frame=None if self.synced else self._first_frame,
            number=self._plans,
            outcomes=MappingProxyType(self.outcomes),
        )
        if not self.synced:
            self._first_frame = None  # read once, by this refresh
        read = RefreshRead(self.app, self.session, plan, ledger=self.ledger, painted=self._painted,
                           on_connected=self._on_connected, latest_now=self._latest_now,
                           kept_now=self._kept_now)
        self.app.run_worker(
            read.run,
            thread=True,
            exclusive=True,
            group="refresh",
            exit_on_error=False,
            description="refresh jobs and scheduled jobs",
        )

    def _on_connected(self) -> None:
        """The backend answered (a refresh's worker says so, through `ask_ui`)."""
        self.connected = True
        self.on_connected(self.session.endpoint)

    def _latest_now(self) -> LatestRuns:
        """A copy of each tenant's newest runs, for a refresh's worker to change (through `ask_ui`)."""
        return self.latest.copy()

    def _kept_now(self) -> Kept:
        """What the console holds, for a read to keep wherever nothing changed (through `ask_ui`)."""
        from console.ui.refresh_keep import Kept  # with the first read, after the first frame

        latest = self.latest
        return Kept(scheduled=dict(self.scheduled), newest=dict(latest.newest),
                    completed=dict(latest.completed), entries=latest.entries(), fleet=dict(self.fleet_rows))

    def fetch_outcomes(self, job_ids: list[str]) -> None:
        """Read the last loss and adapter of these finished runs from their log tails."""
        from console.ui.refresh_read import read_outcomes

        labels = {i: dict(getattr(self.job_info(i), "labels", None) or {}) for i in job_ids}
        self.app.run_worker(
            partial(read_outcomes, self.app, self.session, labels),
            thread=True,
            exclusive=True,
            group="outcomes",
            exit_on_error=False,
            description="read the last runs' outcomes",
        )

    @property
    def outcomes_pending(self) -> bool:
        """A worker is reading log tails for the fleet's last loss / adapter."""
        return any(w.group == "outcomes" and w.is_running for w in self.app.workers)

    def _request_of(self, run: Any) -> Any:
        """The training request of a kept run (read from the whole job: memory, else the cache)."""
        from console import jobspec

        info = self.job_info(run.id) if isinstance(run, RunMark) else run
        return jobspec.read_request(info) if info is not None else None

    # -- lookups --------------------------------------------------------------------------------

    def job_info(self, job_id: str) -> Any | None:
        """The `JobInfo` of a job: from memory, else rebuilt from the cache (None if unknown)."""
        info = self.job_infos.get(job_id)
        if info is not None:
            return info
        doc = self.cache.doc(job_id)
        if doc is None:
            return None
        return job_info(doc, getattr(self.session.api, "endpoint", None) if self.connected else None)

    def job_row(self, job_id: str) -> JobRow | None:
        """The row of a job: from memory, else from the cache."""
        return self.job_rows.get(job_id) or self.cache.row(job_id)

    # -- applying (UI thread) -------------------------------------------------------------------

    def apply(self, message: DataRefreshed) -> None:
        """Merge a refresh into what the console knows and update the panes that show it."""
        app, prices = self.app, self.session.prices
        now = self.session.clock()
        rows = message.rows
        if rows is None:  # not from a worker: build the rows, and keep them
            rows = {j.id: job_row(j, now=now, prices=prices) for j in message.jobs}
            self.cache.put((rows[j.id], j) for j in message.jobs)
        touched: set[str] = set()
        if message.full:
            self.synced = True
            self._last_full = time.monotonic()
            if message.latest is not None:
                self.latest = message.latest
            else:
                self.latest.observe_all(message.jobs)
            self.latest.take_displaced()
            self.active_ids = {i for i, r in rows.items() if r.stage not in TERMINAL}
            self.job_rows = {i: rows[i] for i in self.active_ids}
            self.job_infos = {j.id: j for j in message.jobs if j.id in self.active_ids}
            self.work["jobs_checked"] += len(rows)
            changed_rows: list[JobRow] = []
        else:
            changed_rows = self._apply_changes(message, rows, touched, now)
        if message.full:
            self.on_jobs(JobsChanged(True, [], list(message.gone)))
            self.news.reloaded = True
        else:
            self.on_jobs(JobsChanged(False, changed_rows, list(message.gone)))
            self.news.rows(changed_rows)
        if message.fleet is not None:
            self._fleet_saved = time.monotonic()  # the worker kept it for the next start
        if message.scheduled is not None:
            self.scheduled = {s.id: s for s in message.scheduled}
            self.scheduled_read = True
            self._schedules_at, self._fired_waiting = time.monotonic(), False
            self.work["schedule_reads"] += 1
            if message.plan >= self._want_scheduled:
                self._want_scheduled = 0
        elif message.fired:
            self._fired_waiting = True
        if message.full and message.plan >= self._want_full:
            self._want_full = 0
        self._update_fleet(message, touched, now)
        self.last_refresh = message.at
        self.refresh_count += 1
        if self.snapshot_at is not None:
            self.snapshot_at = None
        self.on_fresh(message.at)
        if not self._painted.is_set():
            app.call_after_refresh(self._painted.set)
        self.on_ledger(message)
        if message.full:
            app.call_after_refresh(give_back_memory)
        self.on_rows({r.id: r for r in changed_rows} if not message.full else rows)
        if self.synced:
            self._want_outcomes()
            self.arm(self.interval)

    def _apply_changes(self, message: DataRefreshed, rows: dict[str, JobRow], touched: set[str],
                       now: datetime) -> list[JobRow]:
        """Merge a refresh that brought only what changed; returns the rows to show again.

        Work follows the change: the jobs it brought and the active ones (their time and cost
        tick). A job that finished leaves `job_infos` and `job_rows` (it is in the cache); they
        change in place: only the UI thread reads them."""
        infos, job_rows, prices = self.job_infos, self.job_rows, self.session.prices
        active = self.active_ids
        for job_id in message.gone:
            infos.pop(job_id, None)
            job_rows.pop(job_id, None)
            active.discard(job_id)
        changed: dict[str, JobRow] = {}
        for j in message.jobs:
            row = rows[j.id]
            old = job_rows.get(j.id)
            if old is None or old.stage != row.stage:
                tenant = self.latest.observe(j)
                if tenant is not None:
                    touched.add(tenant)
            changed[j.id] = row
            if row.stage in TERMINAL:
                infos.pop(j.id, None)
                job_rows.pop(j.id, None)
                active.discard(j.id)
            else:
                infos[j.id] = j
                job_rows[j.id] = row
                active.add(j.id)
        # a running job's time and cost tick between refreshes; a queued one's row stands still
        for job_id in active - changed.keys():
            info = infos.get(job_id)
            if info is not None and info.started_at is not None:
                job_rows[job_id] = changed[job_id] = job_row(info, now=now, prices=prices)
                self.work["rows_ticked"] += 1
        if message.gone:
            lost = self.latest.forget(message.gone)
            if lost:
                endpoint = getattr(self.session.api, "endpoint", None)
                self.latest.observe_all(job_info(d, endpoint) for d in self.cache.latest_runs(lost))
                touched |= lost
        self.latest.take_displaced()
        self.work["jobs_checked"] += len(message.jobs)
        return list(changed.values())

    def _update_fleet(self, message: DataRefreshed, touched: set[str], now: datetime) -> None:
        """The fleet rows after a refresh: as the worker derived them, or re-derived here for the
        tenants whose runs changed (a refresh touches a few tenants, not the fleet)."""
        fleet = message.fleet
        if fleet is not None:
            self.fleet_rows = {r.tenant: r for r in fleet}
            self.news.fleet(None)
        elif touched and self.synced:
            from console.fleet import derive_fleet

            def tenant_of(sj: Any) -> str:
                spec = getattr(sj, "job_spec", None)
                return ((getattr(spec, "labels", None) or {}) if spec is not None else {}).get("tenant", "")

            scheduled = [sj for sj in self.scheduled.values() if tenant_of(sj) in touched]
            jobs = [j for t in touched for j in (self.latest.newest.get(t), self.latest.completed.get(t)) if j]
            rows = derive_fleet(scheduled, jobs, now=now, prices=self.session.prices, outcomes=self.outcomes,
                                request_of=self._request_of)
            merged = dict(self.fleet_rows)
            for tenant in touched:
                merged.pop(tenant, None)
            merged.update((r.tenant, r) for r in rows)
            fleet = [merged[t] for t in sorted(merged)]
            self.fleet_rows = dict(zip(sorted(merged), fleet, strict=True))
            self.news.fleet(touched)
            if time.monotonic() - self._fleet_saved >= SNAPSHOT_SAVE_SECONDS:
                self._fleet_saved = time.monotonic()
                self.app.run_worker(partial(snapshot.save_fleet, self.cache, fleet), thread=True,
                                    group="snapshot", exit_on_error=False, description="keep the fleet rows")
        else:
            return
        if message.full or message.latest is not None:
            self._all_successes()
        else:
            self._successes_of(touched)
        self.on_fleet(fleet)

    def _all_successes(self) -> None:
        """Every tenant's newest success, and which lack their outcome (after a whole read)."""
        self.newest_success = self.latest.newest_successes()
        self.outcomes_missing = {j: t for t, j in self.newest_success.items() if j not in self.outcomes}
        self.work["tenants_checked"] += len(self.newest_success)

    def _successes_of(self, tenants: set[str]) -> None:
        """The newest success of these tenants, whose runs changed."""
        for tenant in tenants:
            old = self.newest_success.get(tenant)
            new = self.latest.newest_success(tenant)
            if old == new:
                continue
            if old is not None:
                self.newest_success.pop(tenant, None)
                self.outcomes_missing.pop(old, None)
            if new is not None:
                self.newest_success[tenant] = new
                if new not in self.outcomes:
                    self.outcomes_missing[new] = tenant
        self.work["tenants_checked"] += len(tenants)

    def apply_outcomes(self, message: OutcomesFetched) -> None:
        self.outcomes = {**self.outcomes, **message.outcomes}  # replaced: a running read keeps its view
        touched = []
        for job_id, outcome in message.outcomes.items():
            tenant = self.outcomes_missing.pop(job_id, None)
            if tenant is None or self.newest_success.get(tenant) != job_id:
                continue
            row = self.fleet_rows.get(tenant)
            if row is not None:  # a new row: the old one may be on its way to the snapshot
                row = replace(row, last_loss=outcome.last_loss, adapter=outcome.adapter,
                              loss_trend=outcome.loss_trend)
                self.fleet_rows[tenant] = row
                touched.append(row)
        if touched:
            self.on_outcomes(touched)

    def failed(self) -> None:
        """A refresh worker failed (the status line says why): try again soon."""
        self.arm(RETRY_SECONDS)

    def arm(self, delay: float) -> None:
        """Re-arm the one-shot refresh timer (a refresh never starts while one is waiting)."""
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.app.set_timer(delay, self.refresh)

    def _want_outcomes(self) -> None:
        """Ask for a few missing outcomes, the tenants on screen in the fleet table first."""
        missing = self.outcomes_missing
        if not missing:
            return
        success = self.newest_success
        picked = [j for t in self.tenants_in_view() if (j := success.get(t)) in missing]
        picked = picked[:OUTCOME_FETCHES_PER_REFRESH]
        if picked:
            self.fetch_outcomes(picked)
