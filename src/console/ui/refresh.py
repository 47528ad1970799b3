"""The refresh coordinator: what the console knows about the namespace, and how it keeps it fresh.

`Refresher` owns the app's picture of the backend — every job it has seen (`job_infos`), their
table rows (`job_rows`), the scheduled jobs, the derived fleet rows and the outcomes read from
finished runs' log tails — and the polling that keeps it current:

* a refresh runs in a thread worker (group "refresh"), reads only what may have changed (the head
  of the newest-first list, the jobs known to be active, the scheduled jobs when one fired), and
  posts `DataRefreshed`; every `FULL_SYNC_SECONDS` (and on `ctrl+r`) it re-reads everything;
* when the app applies that message (`apply`), the panes are updated and a one-shot timer is
  re-armed, so refreshes never pile up;
* a second worker (group "outcomes") reads a few log tails per refresh for the fleet's last loss
  and adapter, the tenants on screen first.

It talks to the backend only through `HfApi` (`session.api`) and to the screen only through the
panes' own update methods. It must not import the app module (the app imports it) nor the server.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any

from textual.app import App
from textual.message import Message
from textual.worker import get_current_worker

from console import jobspec
from console.fleet import RunOutcome, TenantRow, derive_fleet, parse_outcome
from console.jobs import ACTIVE_STAGES, JobRow, Prefetch, first_frame_jobs, job_row
from console.metrics import spark_text
from console.ui.session import Session
from console.ui.widgets.costs import LedgerPane
from console.ui.widgets.fleet_table import FleetTable
from console.ui.widgets.jobs_pane import JobsPane
from console.ui.widgets.status_line import StatusLine

REFRESH_SECONDS = 2.0
FULL_SYNC_SECONDS = 900.0
"""Every this often a refresh re-reads the whole job list and every scheduled job (a safety net:
the quiet refreshes already catch new, changed and deleted jobs)."""
HEAD_SCAN_EVERY = 5
"""Every this many refreshes, also read the head of the job list (jobs that began and ended
between two refreshes); the others read only the active jobs."""
OUTCOME_FETCHES_PER_REFRESH = 8
"""Log tails read per refresh for the fleet's last loss / adapter: bounded, whatever the tenants."""
RETRY_SECONDS = 5.0
LOSS_TREND_WIDTH = 6
"""Characters of each tenant's last-run loss curve in the fleet pane."""
TERMINAL = ("COMPLETED", "ERROR", "CANCELED", "DELETED")
BENCH_READY_ENV = "CONSOLE_BENCH_READY_FILE"
"""If set, the app writes `time.time()` to this file once its first filled frame is painted."""


@dataclass
class DataRefreshed(Message):
    """A refresh worker's result.

    `full`: `jobs` is every job in the namespace. Otherwise `jobs` holds only the jobs that are
    new or may have changed since the last refresh and `gone` the ids that no longer exist.
    `scheduled` is None when the scheduled jobs were not re-read.
    """

    jobs: list[Any]
    scheduled: list[Any] | None
    at: datetime
    full: bool = True
    gone: list[str] = field(default_factory=list)


@dataclass
class OutcomesFetched(Message):
    """What the log tails of some tenants' newest completed runs said."""

    outcomes: dict[str, RunOutcome]


class _Stopped(Exception):
    """The refresh worker was cancelled (the app is closing) in the middle of a read."""


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
    ) -> None:
        """`on_rows`: called with the job rows after each refresh (the job on screen follows them);
        `tenants_in_view`: the tenants whose last outcome to read first."""
        self.app = app
        self.session = session
        self.on_rows = on_rows
        self.tenants_in_view = tenants_in_view
        self.interval = interval
        self._first_frame = first_frame
        self.job_infos: dict[str, Any] = {}
        self.job_rows: dict[str, JobRow] = {}
        self.active_ids: set[str] = set()
        """Ids of the jobs last seen SCHEDULING or RUNNING (kept in step with `job_rows`)."""
        self.scheduled: dict[str, Any] = {}
        self.fleet_rows: dict[str, TenantRow] = {}
        self.outcomes: dict[str, RunOutcome] = {}
        self.newest_success: dict[str, str] = {}
        """tenant -> id of its newest completed training run (whose outcome the fleet shows)"""
        self.last_refresh: datetime | None = None
        self.refresh_count = 0
        self.synced = False
        """True once the whole job list has been read (the first frame shows only the newest)."""
        self._timer: Any = None
        self._last_full = 0.0
        self._full_stamped = False

    # -- reading (worker threads) -------------------------------------------------------------

    def refresh(self, full: bool = False, scheduled: bool = False) -> None:
        """Re-read what changed: new jobs (the head of the newest-first list, up to the first job
        already known to be finished), the jobs known to be active, and every scheduled job when
        one fired or an action touched them. Each refresh costs a few requests whatever the
        number of tenants; a full re-read (every FULL_SYNC_SECONDS, and `ctrl+r`) catches the rest
        (label edits, jobs that started and ended between two refreshes)."""
        self.app.run_worker(
            partial(self._read, full, scheduled),
            thread=True,
            exclusive=True,
            group="refresh",
            exit_on_error=False,
            description="refresh jobs and scheduled jobs",
        )

    def _read(self, full: bool, scheduled: bool) -> None:
        try:
            self._read_changes(full, scheduled)
        except _Stopped:
            return  # the app is closing: a long read (the whole list) stops between two items

    def _read_changes(self, full: bool, scheduled: bool) -> None:
        app, session = self.app, self.session
        api, ns, at = session.api, session.namespace, session.clock()
        known = self.job_infos
        slim = jobspec.compact_job
        worker = get_current_worker()

        def list_jobs(**kw: Any) -> Iterator[Any]:
            for job in api.list_jobs(namespace=ns, **kw):
                if worker.is_cancelled:
                    raise _Stopped
                yield slim(job)

        def list_scheduled() -> list[Any]:
            return [slim(s) for s in api.list_scheduled_jobs(namespace=ns)]

        if not self.synced:
            if not known:
                # first frame: the newest jobs and every active one, then the whole history
                pre, self._first_frame = self._first_frame, None
                head = None
                if pre is not None:
                    try:
                        head, at = pre.result()
                    except Exception:  # that read failed: read again now (a lasting error shows)
                        head = None
                if head is None:
                    head = first_frame_jobs(api, ns)
                app.post_message(DataRefreshed(head, None, at, full=False))
            full = True
        if full or time.monotonic() - self._last_full >= FULL_SYNC_SECONDS:
            jobs = list(list_jobs())
            sched = list_scheduled()
            app.post_message(DataRefreshed(jobs, sched, session.clock(), full=True))
            return
        changed: list[Any] = []
        if self.refresh_count % HEAD_SCAN_EVERY == 0:
            for job in list_jobs():
                old = known.get(job.id)
                if old is not None and old.status.stage in TERMINAL and job.status.stage in TERMINAL:
                    break
                changed.append(job)
        seen = {j.id for j in changed}
        for job in list_jobs(status=list(ACTIVE_STAGES)):
            if job.id not in seen:
                changed.append(job)
                seen.add(job.id)
        gone: list[str] = []
        for job_id in [i for i in self.active_ids if i not in seen]:
            try:
                changed.append(slim(api.inspect_job(job_id=job_id, namespace=ns)))
            except Exception as exc:  # deleted meanwhile: drop it; anything else: retry later
                if getattr(getattr(exc, "response", None), "status_code", None) == 404:
                    gone.append(job_id)
                else:
                    raise
        fired = any(j.id not in known and _initiated_by_schedule(j) for j in changed)
        sched = list_scheduled() if (scheduled or fired) else None
        app.post_message(DataRefreshed(changed, sched, at, full=False, gone=gone))

    def fetch_outcomes(self, job_ids: list[str]) -> None:
        """Read the last loss and adapter of these finished runs from their log tails."""
        self.app.run_worker(
            partial(self._read_outcomes, job_ids),
            thread=True,
            exclusive=True,
            group="outcomes",
            exit_on_error=False,
            description="read the last runs' outcomes",
        )

    def _read_outcomes(self, job_ids: list[str]) -> None:
        session = self.session
        found: dict[str, RunOutcome] = {}
        for job_id in job_ids:
            try:
                lines = session.api.fetch_job_logs(job_id=job_id, namespace=session.namespace, follow=False, tail=40)
                tail = list(lines)
            except Exception:  # the outcome is a nicety; a later refresh retries
                continue
            outcome = parse_outcome(tail)
            info = self.job_infos.get(job_id)
            run = jobspec.trackio_run_name(job_id, getattr(info, "labels", None))
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

    # -- applying (UI thread) -------------------------------------------------------------------

    def apply(self, message: DataRefreshed) -> None:
        """Merge a refresh into what the console knows and update the panes that show it."""
        app, prices = self.app, self.session.prices
        now = self.session.clock()
        if message.full:
            self.synced = True
            self._last_full = time.monotonic()
            infos = {j.id: j for j in message.jobs}
            rows = {j.id: job_row(j, now=now, prices=prices) for j in message.jobs}
            fleet_changed = True
        else:
            infos = dict(self.job_infos)
            rows = dict(self.job_rows)
            fleet_changed = bool(message.gone)
            for job_id in message.gone:
                infos.pop(job_id, None)
                rows.pop(job_id, None)
            for j in message.jobs:
                old = infos.get(j.id)
                if old is None or old.status.stage != j.status.stage:
                    fleet_changed = True
                infos[j.id] = j
            # active jobs' running time and cost tick between refreshes
            fresh = {j.id for j in message.jobs}
            fresh.update(self.active_ids)
            for job_id in fresh:
                if job_id in infos:
                    rows[job_id] = job_row(infos[job_id], now=now, prices=prices)
        if message.scheduled is not None:
            self.scheduled = {s.id: s for s in message.scheduled}
            fleet_changed = True
        changed_rows = None if message.full else [rows[i] for i in fresh if i in rows]
        self.job_infos, self.job_rows = infos, rows
        if message.full:
            self.active_ids = {i for i, r in rows.items() if r.stage not in TERMINAL}
        else:
            active = set(self.active_ids)  # a new set: the refresh worker may be reading the old one
            for job_id in fresh:
                row = rows.get(job_id)
                if row is not None and row.stage not in TERMINAL:
                    active.add(job_id)
                else:
                    active.discard(job_id)
            self.active_ids = active
        pane = app.query_one(JobsPane)
        if changed_rows is None:
            pane.update_rows(list(rows.values()))
        else:
            pane.apply_changes(changed_rows, message.gone)
        if fleet_changed and self.synced:
            jobs = list(infos.values())
            fleet = derive_fleet(self.scheduled.values(), jobs, now=now, prices=prices, outcomes=self.outcomes)
            self.fleet_rows = {r.tenant: r for r in fleet}
            self.newest_success = _newest_successes(jobs)
            app.query_one(FleetTable).update_rows(fleet, now)
        self.last_refresh = message.at
        self.refresh_count += 1
        app.query_one(StatusLine).mark_ok(message.at)
        app.query_one(LedgerPane).ingest(
            message.jobs, message.scheduled, prices, full=message.full, gone=message.gone
        )
        if message.full:
            app.call_after_refresh(_give_back_memory)
        self._stamp_for_benchmark(message.full)
        self.on_rows(self.job_rows)
        if self.synced:
            self._want_outcomes()
            self.arm(self.interval)

    def apply_outcomes(self, message: OutcomesFetched) -> None:
        self.outcomes.update(message.outcomes)
        touched = []
        for tenant, job_id in self.newest_success.items():
            outcome = message.outcomes.get(job_id)
            row = self.fleet_rows.get(tenant)
            if outcome is not None and row is not None:
                row.last_loss, row.adapter = outcome.last_loss, outcome.adapter
                row.loss_trend = outcome.loss_trend
                touched.append(row)
        if touched:
            self.app.query_one(FleetTable).refresh_rows(touched, self.session.clock())

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
        missing = {t: j for t, j in self.newest_success.items() if j not in self.outcomes}
        if not missing:
            return
        picked = [missing[t] for t in self.tenants_in_view() if t in missing][:OUTCOME_FETCHES_PER_REFRESH]
        if picked:
            self.fetch_outcomes(picked)

    def _stamp_for_benchmark(self, full: bool) -> None:
        ready_file = os.environ.get(BENCH_READY_ENV)
        if not ready_file:
            return
        if self.refresh_count == 1:
            self.app.call_after_refresh(_write_ready_stamp, ready_file, "")
        if full and not self._full_stamped:
            self._full_stamped = True
            self.app.call_after_refresh(_write_ready_stamp, ready_file, "full ")


def _give_back_memory() -> None:
    """Return the heap freed after reading the whole job list to the system (glibc only).

    Reading 10,000 jobs parses tens of MB of JSON page by page; the pages are freed, but the
    allocator keeps their memory for reuse, and the console would sit at that peak for good.
    """
    import ctypes
    import ctypes.util

    global _LIBC
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _LIBC.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


_LIBC: Any = None


def _write_ready_stamp(path: str, what: str) -> None:
    """The start-up benchmark's hook: the first frame with the jobs table filled is on screen
    (first line: the time), then the first frame with the whole job list ("full <time>")."""
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{what}{time.time():.6f}\n")
    except OSError:
        pass


def _initiated_by_schedule(job: Any) -> bool:
    initiator = getattr(job, "initiator", None)
    return initiator is not None and getattr(initiator, "type", None) == "scheduled-job"


def _newest_successes(jobs: list[Any]) -> dict[str, str]:
    """tenant -> id of its newest COMPLETED console training run."""
    newest: dict[str, Any] = {}
    for job in jobs:
        if job.status.stage != "COMPLETED":
            continue
        labels = jobspec.labels_of(job)
        if labels.get("app") != "console" or labels.get("kind") != "sft":
            continue
        tenant = labels.get("tenant", "")
        prev = newest.get(tenant)
        if prev is None or (job.created_at and prev.created_at and job.created_at > prev.created_at):
            newest[tenant] = job
    return {tenant: job.id for tenant, job in newest.items()}
