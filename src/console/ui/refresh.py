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

Who owns what: everything on the `Refresher` belongs to the UI thread. A refresh starts there
(`refresh`), which freezes what the read needs into a :class:`ReadPlan` (the jobs last seen
active, whether to read the head of the list or everything, the first frame's prefetch); the
worker reads only that plan, the cache (its own connection) and the backend, asks the UI thread
for a copy of anything else it needs (`_from_ui`), and hands back a `DataRefreshed`, which only
`apply`, on the UI thread, merges. The screen is told through the callbacks the app gives (the
app routes them to its widgets); the refresher queries no widget. It talks to the backend only
through `HfApi` (`session.api`), and must not import the app module (the app imports it) nor the
server. The fleet's code is imported in the workers, after the first frame.

Why one module of over 500 lines: it is the one refresh coordinator (as Dolphie keeps its
workers apart from its panels). What a refresh reads depends on what the last one found (the
cache's newest finished job, the active set, whether a schedule fired, when the whole list was
last read), and that state is written by the worker and read by `apply` under one set of rules;
split across modules, the rules would be too. What stands alone lives beside it: the cache
(`console.cache`), the rows (`console.jobs`), the fleet (`console.fleet`), the streams
(`ui/streams.py`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any

from textual.app import App
from textual.message import Message
from textual.worker import get_current_worker

from console.cache import snapshot
from console.cache.docs import job_info
from console.cache.latest import LatestRuns, RunMark
from console.cache.store import PUT_BATCH
from console.jobs import JobRow, Prefetch, job_row
from console.memory import give_back_memory
from console.stages import ACTIVE_STAGES, TERMINAL_STAGES
from console.ui.session import Session

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
LOSS_TREND_WIDTH = 6
"""Characters of each tenant's last-run loss curve in the fleet pane."""
LEDGER_BATCH = 5000
"""Finished jobs recorded in the cost ledger at a time while the whole list streams in."""
SNAPSHOT_ROWS = 100
"""Rows of the jobs table painted from the cache at start (a screenful or more; the rest come
with the catch-up, or a scroll)."""
FRESH_PAINT_WAIT_SECONDS = 0.5
"""After posting the first fresh rows, the worker waits (at most this long) for them to be on
screen before its heavier reads, which would compete with the paint for the interpreter."""
SNAPSHOT_SAVE_SECONDS = 60.0
"""The fleet rows kept for the next start are written at most this often between whole reads."""
TERMINAL = TERMINAL_STAGES


@dataclass
class DataRefreshed(Message):
    """A refresh worker's result.

    `full`: the cache now holds every job in the namespace (the jobs table reloads from it), and
    `jobs` are the ones kept in memory (active, and each tenant's newest runs). Otherwise `jobs`
    holds only the jobs that are new or may have changed since the last refresh and `gone` the
    ids that no longer exist. `scheduled` is None when the scheduled jobs were not re-read.
    """

    jobs: list[Any]
    scheduled: list[Any] | None
    at: datetime
    full: bool = True
    gone: list[str] = field(default_factory=list)
    rows: dict[str, JobRow] | None = None
    """The rows of `jobs`, built and written to the cache by the worker (None: build them here)."""
    latest: LatestRuns | None = None
    """Each tenant's newest runs, when the worker read them all (a whole read or a catch-up)."""
    fleet: list[Any] | None = None
    """The fleet rows, when the worker derived them (it had the scheduled jobs)."""
    plan: int = 0
    """The number of the refresh that read it (`ReadPlan.number`; 0: not from a refresh)."""


@dataclass
class OutcomesFetched(Message):
    """What the log tails of some tenants' newest completed runs said."""

    outcomes: dict[str, Any]


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
        self.failed_rows.update((r.id, r) for r in rows if r.stage == "ERROR")

    def take(self) -> tuple[set[str] | None, dict[str, JobRow], bool]:
        out = (self.tenants, self.failed_rows, self.reloaded)
        self.tenants, self.failed_rows, self.reloaded = set(), {}, False
        return out


def _stop_if_closing(app: Any) -> None:
    """Stop the worker thread that calls this if it was cancelled or the app is closing: a read
    that outlived its app (a refresh timer can fire in the shutdown window, after the workers
    were cancelled, and its thread may start late under load) writes nothing to the cache, which
    the next start paints as the picture at quit."""
    if get_current_worker().is_cancelled or not app.is_running:
        raise _Stopped


class _Stopped(Exception):
    """The refresh worker was cancelled (the app is closing) in the middle of a read."""


@dataclass(frozen=True)
class ReadPlan:
    """What one refresh reads, frozen on the UI thread when it starts: the worker reads this, never
    the refresher's own (UI-thread) state."""

    full: bool
    """Read the whole list (asked for, or FULL_SYNC_SECONDS since the last whole read)."""
    scheduled: bool
    """Read the scheduled jobs (an action touched them)."""
    head_scan: bool
    """Read the head of the list (every HEAD_SCAN_EVERY refreshes)."""
    synced: bool
    """Every job is known already."""
    warm: bool
    """The cache held jobs at start: catch up from it."""
    connected: bool
    active: frozenset[str]
    """The jobs last seen SCHEDULING or RUNNING."""
    first_frame: Prefetch | None = None
    """The first page read before the app started (the first refresh only)."""
    number: int = 0
    """This refresh's number (they count up): what it brings answers what was asked before it."""


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
        self.newest_success: dict[str, str] = {}
        """tenant -> id of its newest completed training run (whose outcome the fleet shows), kept
        in step with `latest` tenant by tenant as runs change."""
        self.outcomes_missing: dict[str, str] = {}
        """job id -> tenant: the newest successes whose outcome is not read yet (what
        `_want_outcomes` picks from), kept in step with `newest_success` and `outcomes`."""
        self.news = News()
        """What changed since the reasons for failed runs were last looked for (`ui/reasons.py`)."""
        self.work = {"jobs_checked": 0, "tenants_checked": 0}
        """Diagnostics: jobs whose keeping in memory was decided, tenants whose newest success
        was re-checked. Both grow with what changed, not with the fleet: a quiet refresh adds 0."""
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
        self._reading = threading.local()
        """The plan of the refresh a worker thread is reading (for `_post`)."""
        self._painted = threading.Event()
        """Set once the first fresh rows are on screen (the worker waits for it: see
        FRESH_PAINT_WAIT_SECONDS)."""

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

    # -- reading (worker threads) -------------------------------------------------------------

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
        plan = ReadPlan(
            full=bool(self._want_full) or time.monotonic() - self._last_full >= FULL_SYNC_SECONDS,
            scheduled=bool(self._want_scheduled),
            head_scan=self.refresh_count % HEAD_SCAN_EVERY == 0,
            synced=self.synced,
            warm=self._warm,
            connected=self.connected,
            active=frozenset(self.active_ids),
            first_frame=None if self.synced else self._first_frame,
            number=self._plans,
        )
        if not self.synced:
            self._first_frame = None  # read once, by this refresh
        self.app.run_worker(
            partial(self._read, plan),
            thread=True,
            exclusive=True,
            group="refresh",
            exit_on_error=False,
            description="refresh jobs and scheduled jobs",
        )

    def _read(self, plan: ReadPlan) -> None:
        self._reading.plan = plan.number
        try:
            if not plan.connected:
                self.session.ensure_connected()  # huggingface_hub loads here, after the first frame
                self._from_ui(self._on_connected)
            self._read_changes(plan)
        except _Stopped:
            return  # the app is closing: a long read (the whole list) stops between two items

    def _from_ui(self, func: Callable[[], Any]) -> Any:
        """Run `func` on the UI thread and return what it returns (the worker's one way to the
        refresher's state). The worker waits for it by a posted callback, checking as it waits
        that it was not replaced and the app is not closing (then the read stops): a loop that
        stops first never leaves it waiting."""
        worker = get_current_worker()
        box: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                box["value"] = func()
            except BaseException as exc:  # handed to the worker, which raises it
                box["error"] = exc
            finally:
                done.set()

        if worker.is_cancelled or not self.app.call_later(run):
            raise _Stopped
        while not done.wait(0.05):
            _stop_if_closing(self.app)
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _on_connected(self) -> None:
        self.connected = True
        self.on_connected(self.session.endpoint)

    def _lister(self) -> tuple[Callable[..., Iterator[Any]], Callable[[], list[Any]]]:
        from console import jobspec

        api, ns = self.session.api, self.session.namespace
        slim = jobspec.compact_job
        worker = get_current_worker()

        def list_jobs(**kw: Any) -> Iterator[Any]:
            for job in api.list_jobs(namespace=ns, **kw):
                if worker.is_cancelled:
                    raise _Stopped
                yield slim(job)

        def list_scheduled() -> list[Any]:
            return [jobspec.keep_schedule(s) for s in api.list_scheduled_jobs(namespace=ns)]

        return list_jobs, list_scheduled

    def _rows(self, jobs: list[Any], *, sync: int = 0) -> dict[str, JobRow]:
        """Rows of `jobs`, written to the cache with their documents (not by a worker that was
        cancelled: the app is closing or a newer refresh replaced it, and what it read may be
        older than what the cache holds)."""
        now, prices = self.session.clock(), self.session.prices
        rows = {j.id: job_row(j, now=now, prices=prices) for j in jobs}
        _stop_if_closing(self.app)
        self.cache.put(((rows[j.id], j) for j in jobs), sync=sync)
        return rows

    def _read_changes(self, plan: ReadPlan) -> None:
        api, ns = self.session.api, self.session.namespace
        at = self.session.clock()
        list_jobs, list_scheduled = self._lister()
        full = plan.full
        if not plan.synced:
            if plan.warm:
                self._catch_up(plan, list_jobs, list_scheduled)
                return
            # first run on this cache: the newest page and every active job, then the whole list
            pre = plan.first_frame
            head = None
            if pre is not None:
                try:
                    head, at = pre.result()
                except Exception:  # that read failed: read again now (a lasting error shows)
                    head = None
            if head is None:
                from console.jobs import first_frame_jobs

                head = first_frame_jobs(api, ns)
            rows = self._rows(head)
            self._record([j for j in head if j.status.stage in TERMINAL])
            self._post(DataRefreshed(head, None, at, full=False, rows=rows))
            full = True
        if full:
            self._read_all(list_jobs, list_scheduled)
            return
        changed: list[Any] = []
        if plan.head_scan:
            for job in list_jobs():
                if job.status.stage in TERMINAL and self.cache.stages([job.id]).get(job.id) in TERMINAL:
                    break
                changed.append(job)
        seen = {j.id for j in changed}
        for job in list_jobs(status=list(ACTIVE_STAGES)):
            if job.id not in seen:
                changed.append(job)
                seen.add(job.id)
        gone = self._inspect_vanished(plan.active, seen)
        changed += gone[1]
        known = self.cache.stages([j.id for j in changed if _initiated_by_schedule(j)])
        fired = any(_initiated_by_schedule(j) and j.id not in known for j in changed)  # a new run of a schedule
        sched = list_scheduled() if (plan.scheduled or fired) else None
        fleet = None
        if sched is not None:
            latest = self._from_ui(self.latest.copy)
            latest.observe_all(changed)
            latest.forget(gone[0])
            fleet = self._derive(sched, latest)
        rows = self._rows(changed)
        self._record([j for j in changed if j.status.stage in TERMINAL])
        self._post(DataRefreshed(changed, sched, at, full=False, gone=gone[0], rows=rows, fleet=fleet))
        if gone[0]:
            self.cache.remove(gone[0])

    def _inspect_vanished(self, active: frozenset[str], seen: set[str]) -> tuple[list[str], list[Any]]:
        """The jobs last seen active that the active list no longer has: (deleted ids, their
        current state)."""
        from console import jobspec

        api, ns = self.session.api, self.session.namespace
        gone: list[str] = []
        found: list[Any] = []
        for job_id in [i for i in active if i not in seen]:
            try:
                found.append(jobspec.compact_job(api.inspect_job(job_id=job_id, namespace=ns)))
            except Exception as exc:  # deleted meanwhile: drop it; anything else: retry later
                if getattr(getattr(exc, "response", None), "status_code", None) == 404:
                    gone.append(job_id)
                else:
                    raise
        return gone, found

    def _catch_up(self, plan: ReadPlan, list_jobs: Callable[..., Iterator[Any]],
                  list_scheduled: Callable[[], list[Any]]) -> None:
        """Start from the cache: read what changed since it was written (the newest jobs down to
        the first one it already knows finished, the active ones) and show it at once; then
        the jobs last seen active, the scheduled jobs and each tenant's newest runs for the
        fleet. If the list ended before a known job (the backend's history was reset), or more
        jobs came than a catch-up should hold, the whole list is read instead."""
        cache, at = self.cache, self.session.clock()
        changed: list[Any] = []
        known_end = False
        for job in list_jobs():
            if job.status.stage in TERMINAL and cache.stages([job.id]).get(job.id) in TERMINAL:
                known_end = True
                break
            changed.append(job)
            if len(changed) > LEDGER_BATCH:
                break
        if not known_end:
            self._read_all(list_jobs, list_scheduled)
            return
        seen = {j.id for j in changed}
        for job in list_jobs(status=list(ACTIVE_STAGES)):
            if job.id not in seen:
                changed.append(job)
                seen.add(job.id)
        self._post(DataRefreshed(changed, None, at, full=False, rows=self._rows(changed)))
        self._painted.wait(FRESH_PAINT_WAIT_SECONDS)  # the fresh frame first, the heavy reads after
        gone, found = self._inspect_vanished(plan.active, seen)
        cache.remove(gone)
        self._record([j for j in changed + found if j.status.stage in TERMINAL])
        sched = list_scheduled()
        latest = LatestRuns()
        endpoint = getattr(self.session.api, "endpoint", None)
        latest.observe_all(job_info(doc, endpoint) for doc in cache.latest_runs())
        latest.observe_all(found)
        latest.forget(gone)
        fleet = self._derive(sched, latest)
        jobs = list({j.id: j for j in changed + found if j.status.stage not in TERMINAL}.values())
        self._post(DataRefreshed(jobs, sched, self.session.clock(), full=True, gone=gone,
                                 rows=self._rows(found + jobs), latest=latest, fleet=fleet))

    def _read_all(self, list_jobs: Callable[..., Iterator[Any]], list_scheduled: Callable[[], list[Any]]) -> None:
        """Read the whole job list into the cache, a batch at a time; keep the active jobs and
        each tenant's newest runs; record the finished jobs in the ledger; drop the jobs the
        list no longer has."""
        cache, prices = self.cache, self.session.prices
        now = self.session.clock()
        sync = cache.begin_sync()
        latest = LatestRuns()
        active: dict[str, Any] = {}
        batch: list[tuple[JobRow, Any]] = []
        finished: list[Any] = []
        for job in list_jobs():
            row = job_row(job, now=now, prices=prices)
            batch.append((row, job))
            latest.observe(job)
            if row.stage in TERMINAL:
                finished.append(job)
            else:
                active[job.id] = job
            if len(batch) >= PUT_BATCH:
                _stop_if_closing(self.app)
                cache.put(batch, sync=sync)
                batch = []
            if len(finished) >= LEDGER_BATCH:
                self._record(finished)
                finished = []
        _stop_if_closing(self.app)
        cache.put(batch, sync=sync)
        self._record(finished)
        gone = cache.end_sync(sync)
        sched = list_scheduled()
        fleet = self._derive(sched, latest)
        jobs = list(active.values())
        self._post(DataRefreshed(jobs, sched, self.session.clock(), full=True, gone=gone,
                                 rows=self._rows(jobs, sync=sync), latest=latest, fleet=fleet))

    def _record(self, finished: list[Any]) -> None:
        if self.ledger is not None and finished:
            self.ledger.record_finished(finished, self.session.prices)

    def _derive(self, scheduled: list[Any], latest: LatestRuns) -> list[Any]:
        """The fleet rows from the scheduled jobs and each tenant's newest runs (kept for the
        next start too, by `_post`)."""
        from console.fleet import derive_fleet

        outcomes = self._from_ui(lambda: dict(self.outcomes))
        return derive_fleet(scheduled, latest.jobs(), now=self.session.clock(), prices=self.session.prices,
                            outcomes=outcomes, request_of=self._request_of)

    def _request_of(self, run: Any) -> Any:
        """The training request of a kept run (read from the whole job: memory, else the cache)."""
        from console import jobspec

        info = self.job_info(run.id) if isinstance(run, RunMark) else run
        return jobspec.read_request(info) if info is not None else None

    def _post(self, message: DataRefreshed) -> None:
        """Hand a refresh to the UI thread; then keep the fleet it derived for the next start
        (after the post: writing 10,000 rows is not on the way to the frame that shows them)."""
        message.plan = getattr(self._reading, "plan", 0)
        snapshot.save_seen(self.cache, message.at)
        self.app.post_message(message)
        if message.fleet is not None:
            snapshot.save_fleet(self.cache, message.fleet)

    def fetch_outcomes(self, job_ids: list[str]) -> None:
        """Read the last loss and adapter of these finished runs from their log tails."""
        labels = {i: dict(getattr(self.job_info(i), "labels", None) or {}) for i in job_ids}
        self.app.run_worker(
            partial(self._read_outcomes, labels),
            thread=True,
            exclusive=True,
            group="outcomes",
            exit_on_error=False,
            description="read the last runs' outcomes",
        )

    def _read_outcomes(self, labels_of: dict[str, dict[str, str]]) -> None:
        from console import jobspec
        from console.fleet import parse_outcome
        from console.trackio_metrics import spark_text

        session = self.session
        found: dict[str, Any] = {}
        for job_id, labels in labels_of.items():
            try:
                lines = session.api.fetch_job_logs(job_id=job_id, namespace=session.namespace, follow=False, tail=40)
                tail = list(lines)
            except Exception:  # the outcome is a nicety; a later refresh retries
                continue
            outcome = parse_outcome(tail)
            run = jobspec.trackio_run_name(job_id, labels or None)
            if run:
                try:
                    curve = session.metrics_reader.run_metrics(session.cfg.trackio.project, run).loss
                    outcome = replace(outcome, loss_trend=spark_text(curve, LOSS_TREND_WIDTH))
                except Exception:  # the trend is a nicety, like the outcome itself
                    pass
            found[job_id] = outcome
        if found:
            self.app.post_message(OutcomesFetched(found))

    @property
    def outcomes_pending(self) -> bool:
        """A worker is reading log tails for the fleet's last loss / adapter."""
        return any(w.group == "outcomes" and w.is_running for w in self.app.workers)

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
            if message.plan >= self._want_scheduled:
                self._want_scheduled = 0
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
        # active jobs' running time and cost tick between refreshes
        for job_id in active - changed.keys():
            if job_id in infos:
                job_rows[job_id] = changed[job_id] = job_row(infos[job_id], now=now, prices=prices)
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
        self.outcomes.update(message.outcomes)
        touched = []
        for job_id, outcome in message.outcomes.items():
            tenant = self.outcomes_missing.pop(job_id, None)
            if tenant is None or self.newest_success.get(tenant) != job_id:
                continue
            row = self.fleet_rows.get(tenant)
            if row is not None:
                row.last_loss, row.adapter = outcome.last_loss, outcome.adapter
                row.loss_trend = outcome.loss_trend
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


def _initiated_by_schedule(job: Any) -> bool:
    initiator = getattr(job, "initiator", None)
    return initiator is not None and getattr(initiator, "type", None) == "scheduled-job"
