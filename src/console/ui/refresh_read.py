"""A refresh's read, in its thread worker: what it is given, what it reads, what it hands back.

`console.ui.refresh.Refresher` (the UI thread) starts each refresh with a :class:`RefreshRead`
built from a frozen :class:`ReadPlan`: the jobs last seen active, whether to read the head of the
list or everything, the first frame's prefetch, the fleet outcomes known (a read-only view of a
dict the refresher replaces, never changes). The read holds nothing of the refresher's: it reads
its plan, the cache (its own connection), the ledger and the backend (`session.api`), and hands
back a `DataRefreshed` that only `Refresher.apply`, on the UI thread, merges. When it needs the
UI thread (the backend answered: say so; a copy of each tenant's newest runs, to derive the fleet
with the schedules it read) it asks through `App.call_from_thread` (`ask_ui`), and waits for the
answer; a read whose app is closing stops there.

The fleet's code is imported here, in the worker, after the first frame. No import of the app
module nor of the server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import CancelledError
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any

from textual.app import App
from textual.message import Message
from textual.worker import get_current_worker

from console.cache import snapshot
from console.cache.docs import job_info
from console.cache.latest import LatestRuns
from console.cache.store import PUT_BATCH, JobCache
from console.jobs import JobRow, Prefetch, job_row
from console.stages import ACTIVE_STAGES, TERMINAL_STAGES
from console.ui.refresh_keep import Kept, keep_fleet, keep_latest, keep_schedules
from console.ui.session import Session

LOSS_TREND_WIDTH = 6
"""Characters of each tenant's last-run loss curve in the fleet pane."""
CATCH_UP_MOST = 5000
"""More jobs than this new or changed since the cache was written, and a start reads the whole list
instead of catching up."""
FRESH_PAINT_WAIT_SECONDS = 0.5
"""After posting the first fresh rows, the worker waits (at most this long) for them to be on
screen before its heavier reads, which would compete with the paint for the interpreter."""
TERMINAL = TERMINAL_STAGES
_NONE_HELD: Mapping[str, Any] = MappingProxyType({})


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
    fired: bool = False
    """A schedule fired a run this read saw, and the schedules were read too recently to read
    them again now (`ReadPlan.fired_read_due`): the refresher reads them when it is time."""


@dataclass
class OutcomesFetched(Message):
    """What the log tails of some tenants' newest completed runs said."""

    outcomes: dict[str, Any]


@dataclass(frozen=True)
class ReadPlan:
    """What one refresh reads, frozen on the UI thread when it starts: the worker reads this, never
    the refresher's own (UI-thread) state."""

    full: bool
    """Read the whole list (asked for, or FULL_SYNC_SECONDS since the last whole read)."""
    scheduled: bool
    """Read the scheduled jobs (an action touched them, or a run fired since the last read)."""
    head_scan: bool
    """Read the head of the list (every HEAD_SCAN_EVERY refreshes)."""
    synced: bool
    """Every job is known already."""
    warm: bool
    """The cache held jobs at start: catch up from it."""
    connected: bool
    active: frozenset[str]
    """The jobs last seen SCHEDULING or RUNNING."""
    held: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """The active jobs the refresher holds (id -> JobInfo), a copy: a quiet read hands back only
    those the backend now says something else of (`unchanged`), however many are queued."""
    first_frame: Prefetch | None = None
    """The first page read before the app started (the first refresh only)."""
    number: int = 0
    """This refresh's number (they count up): what it brings answers what was asked before it."""
    outcomes: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """What the log tails of finished runs said (job id -> outcome), as known when it started:
    read-only (the refresher replaces its dict when outcomes come, never changes it)."""
    fired_read_due: bool = True
    """A schedule's new run, if this read sees one, is reason enough to read the schedules now
    (`refresh.FIRED_READ_SECONDS` since they were last read)."""


class Stopped(Exception):
    """The refresh worker was cancelled (the app is closing) in the middle of a read."""


def stop_if_closing(app: App[Any]) -> None:
    """Stop the worker thread that calls this if it was cancelled or the app is closing: a read
    that outlived its app (a refresh timer can fire in the shutdown window, after the workers
    were cancelled, and its thread may start late under load) writes nothing to the cache, which
    the next start paints as the picture at quit."""
    if get_current_worker().is_cancelled or not app.is_running:
        raise Stopped


_CLOSING = object()


def ask_ui(app: App[Any], func: Callable[[], Any]) -> Any:
    """Run `func` on the UI thread (`App.call_from_thread`) and return what it returns: how a
    worker reaches the UI thread's state. A worker that was cancelled, or whose app is closing
    or gone (then `call_from_thread` refuses, or the call comes after the app stopped running),
    stops (`Stopped`); what `func` raises is raised here."""

    def on_ui() -> Any:
        if not app.is_running:
            return _CLOSING
        try:
            return func()
        except BaseException as exc:  # handed back boxed: a RuntimeError of its own is not the app's refusal
            return _Raised(exc)

    stop_if_closing(app)
    try:
        result = app.call_from_thread(on_ui)
    except (RuntimeError, CancelledError):  # the app is not running, or its loop dropped the call
        raise Stopped from None
    if result is _CLOSING:
        raise Stopped
    if isinstance(result, _Raised):
        raise result.exc
    return result


@dataclass(frozen=True)
class _Raised:
    exc: BaseException


class RefreshRead:
    """One refresh's read (see the module docstring); `run` is the worker's body.

    `on_connected`, `latest_now` and `kept_now` run on the UI thread (through `ask_ui`): the backend
    answered; a copy of each tenant's newest runs as the refresher knows them; what it holds, for a
    read of the schedules to keep wherever nothing changed (`refresh_keep`). `painted` is set (by the UI
    thread) once the first fresh rows are on screen."""

    def __init__(self, app: App[Any], session: Session, plan: ReadPlan, *, ledger: Any,
                 painted: threading.Event, on_connected: Callable[[], None],
                 latest_now: Callable[[], LatestRuns], kept_now: Callable[[], Kept] = Kept) -> None:
        self.app = app
        self.session = session
        self.cache: JobCache = session.cache
        self.plan = plan
        self.ledger = ledger
        self.painted = painted
        self.on_connected = on_connected
        self.latest_now = latest_now
        self.kept_now = kept_now

    def run(self) -> None:
        try:
            if not self.plan.connected:
                self.session.ensure_connected()  # huggingface_hub loads here, after the first frame
                ask_ui(self.app, self.on_connected)
            self._read_changes()
        except Stopped:
            return  # the app is closing: a long read (the whole list) stops between two items

    def _lister(self) -> tuple[Callable[..., Iterator[Any]], Callable[..., list[Any]]]:
        from console import jobspec
        from console.cache.apart import read_schedules_apart

        api, ns = self.session.api, self.session.namespace
        slim = jobspec.compact_job
        worker = get_current_worker()

        def list_jobs(**kw: Any) -> Iterator[Any]:
            for job in api.list_jobs(namespace=ns, **kw):
                if worker.is_cancelled:
                    raise Stopped
                yield slim(job)

        def list_scheduled(held: Mapping[str, Any] = _NONE_HELD) -> list[Any]:
            # decoded in a child process: the whole list's parse never enters the console's memory
            apart = read_schedules_apart(api, ns, held, lambda: worker.is_cancelled)
            if apart is not None:
                return apart
            if worker.is_cancelled:
                raise Stopped
            return keep_schedules(list(api.list_scheduled_jobs(namespace=ns)), held)

        return list_jobs, list_scheduled

    def _rows(self, jobs: list[Any], *, sync: int = 0) -> dict[str, JobRow]:
        """Rows of `jobs`, written to the cache with their documents (not by a worker that was
        cancelled: the app is closing or a newer refresh replaced it, and what it read may be
        older than what the cache holds)."""
        now, prices = self.session.clock(), self.session.prices
        rows = {j.id: job_row(j, now=now, prices=prices) for j in jobs}
        stop_if_closing(self.app)
        self.cache.put(((rows[j.id], j) for j in jobs), sync=sync)
        return rows

    def _read_changes(self) -> None:
        plan = self.plan
        api, ns = self.session.api, self.session.namespace
        at = self.session.clock()
        list_jobs, list_scheduled = self._lister()
        full = plan.full
        if not plan.synced:
            if plan.warm:
                self._catch_up(list_jobs, list_scheduled)
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
        seen: set[str] = set()

        def consider(job: Any) -> None:
            # a job read again as the refresher holds it is not handed back: 2,000 queued runs
            # of a fired fleet cost a page read, not 2,000 rows, cache writes and merges a tick
            if job.id not in seen:
                seen.add(job.id)
                if not unchanged(job, plan.held.get(job.id)):
                    changed.append(job)

        if plan.head_scan:
            for job in list_jobs():
                if job.status.stage in TERMINAL and self.cache.stages([job.id]).get(job.id) in TERMINAL:
                    break
                consider(job)
        for job in list_jobs(status=list(ACTIVE_STAGES)):
            consider(job)
        gone, found = self._inspect_vanished(plan.active, seen)
        changed += found
        known = self.cache.stages([j.id for j in changed if _initiated_by_schedule(j)])
        fired = any(_initiated_by_schedule(j) and j.id not in known for j in changed)  # a new run of a schedule
        sched = fleet = None
        if plan.scheduled or (fired and plan.fired_read_due):
            kept = ask_ui(self.app, self.kept_now)
            sched = list_scheduled(kept.scheduled)
            latest = ask_ui(self.app, self.latest_now)
            latest.observe_all(changed)
            latest.forget(gone)
            fleet = keep_fleet(self._derive(sched, latest, changed), kept.fleet)
        rows = self._rows(changed)
        self._record([j for j in changed if j.status.stage in TERMINAL])
        self._post(DataRefreshed(changed, sched, at, full=False, gone=gone, rows=rows, fleet=fleet,
                                 fired=fired and sched is None))
        if gone:
            self.cache.remove(gone)

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

    def _catch_up(self, list_jobs: Callable[..., Iterator[Any]], list_scheduled: Callable[..., list[Any]]) -> None:
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
            if len(changed) > CATCH_UP_MOST:
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
        self.painted.wait(FRESH_PAINT_WAIT_SECONDS)  # the fresh frame first, the heavy reads after
        gone, found = self._inspect_vanished(self.plan.active, seen)
        cache.remove(gone)
        self._record([j for j in changed + found if j.status.stage in TERMINAL])
        sched = list_scheduled()
        latest = LatestRuns()
        endpoint = getattr(self.session.api, "endpoint", None)
        latest.observe_all(job_info(doc, endpoint) for doc in cache.latest_runs())
        latest.observe_all(found)
        latest.forget(gone)
        kept = ask_ui(self.app, self.kept_now)  # the fleet rows the last run kept, if painted by now
        fleet = keep_fleet(self._derive(sched, latest, changed + found), kept.fleet)
        jobs = list({j.id: j for j in changed + found if j.status.stage not in TERMINAL}.values())
        self._post(DataRefreshed(jobs, sched, self.session.clock(), full=True, gone=gone,
                                 rows=self._rows(found + jobs), latest=latest, fleet=fleet))

    def _read_all(self, list_jobs: Callable[..., Iterator[Any]], list_scheduled: Callable[..., list[Any]]) -> None:
        """Read the whole job list into the cache, a batch at a time (its finished jobs recorded in
        the ledger with it, so no more than a batch of parsed jobs is held at once); keep the active
        jobs and each tenant's newest runs; drop the jobs the list no longer has. What the console
        holds and the read finds unchanged is kept as it is (`refresh_keep`)."""
        cache, prices = self.cache, self.session.prices
        now = self.session.clock()
        kept = ask_ui(self.app, self.kept_now)
        sync = cache.begin_sync()
        latest = LatestRuns(kept.marks())
        active: dict[str, Any] = {}
        batch: list[tuple[JobRow, Any]] = []
        for job in list_jobs():
            row = job_row(job, now=now, prices=prices)
            batch.append((row, job))
            latest.observe(job)
            if row.stage not in TERMINAL:
                active[job.id] = job
            if len(batch) >= PUT_BATCH:
                self._put_batch(batch, sync)
                batch = []
        self._put_batch(batch, sync)
        del batch  # the last parse objects go before what is kept is built
        gone = cache.end_sync(sync)
        sched = list_scheduled(kept.scheduled)
        jobs = list(active.values())
        latest = keep_latest(latest, kept)
        fleet = keep_fleet(self._derive(sched, latest, jobs), kept.fleet)
        self._post(DataRefreshed(jobs, sched, self.session.clock(), full=True, gone=gone,
                                 rows=self._rows(jobs, sync=sync), latest=latest, fleet=fleet))

    def _put_batch(self, batch: list[tuple[JobRow, Any]], sync: int) -> None:
        """Write a batch of a whole read to the cache and record its finished jobs in the ledger."""
        stop_if_closing(self.app)
        self.cache.put(batch, sync=sync)
        self._record([job for row, job in batch if row.stage in TERMINAL])

    def _record(self, finished: list[Any]) -> None:
        if self.ledger is not None and finished:
            self.ledger.record_finished(finished, self.session.prices)

    def _derive(self, scheduled: list[Any], latest: LatestRuns, in_hand: list[Any]) -> list[Any]:
        """The fleet rows from the scheduled jobs and each tenant's newest runs (kept for the
        next start too, by `_post`). A run's training request is read from the whole job: the
        one this read has in hand (`in_hand`), else the cache's."""
        from console import jobspec
        from console.fleet import derive_fleet

        by_id = {j.id: j for j in in_hand}
        endpoint = getattr(self.session.api, "endpoint", None)

        def request_of(run: Any) -> Any:
            info = by_id.get(run.id)
            if info is None:
                doc = self.cache.doc(run.id)
                info = job_info(doc, endpoint) if doc is not None else None
            return jobspec.read_request(info) if info is not None else None

        return derive_fleet(scheduled, latest.jobs(), now=self.session.clock(), prices=self.session.prices,
                            outcomes=dict(self.plan.outcomes), request_of=request_of)

    def _post(self, message: DataRefreshed) -> None:
        """Hand a refresh to the UI thread; then keep the fleet it derived for the next start
        (after the post: writing 10,000 rows is not on the way to the frame that shows them;
        `snapshot.save_fleet` writes nothing when they are the rows it last kept or read)."""
        message.plan = self.plan.number
        snapshot.save_seen(self.cache, message.at)
        self.app.post_message(message)
        if message.fleet is not None:
            snapshot.save_fleet(self.cache, message.fleet)


def read_outcomes(app: App[Any], session: Session, labels_of: dict[str, dict[str, str]]) -> None:
    """Read the last loss and adapter of these finished runs (job id -> its labels) from their log
    tails and Trackio runs, and post them (`OutcomesFetched`). A worker's body."""
    from console import jobspec
    from console.fleet import parse_outcome
    from console.trackio_metrics import spark_text

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
        app.post_message(OutcomesFetched(found))


def unchanged(job: Any, held: Any | None) -> bool:
    """`job`, as read now, says what `held` (the copy the refresher holds) said: every field but
    its `durations`, the clock of a queued or running job, which the console keeps counting from
    its times (`console.jobs.job_row`)."""
    if held is None or type(job) is not type(held):
        return False
    now = job.durations
    job.durations = held.durations
    try:
        return bool(job == held)
    finally:
        job.durations = now


def _initiated_by_schedule(job: Any) -> bool:
    initiator = getattr(job, "initiator", None)
    return initiator is not None and getattr(initiator, "type", None) == "scheduled-job"
