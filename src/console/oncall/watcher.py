"""One on-call pass over a backend: the detectors, then the notifications. What `console watch`
runs in a loop, and what the app can run in a thread worker.

A pass (:meth:`Watcher.check`) reads, through the `HfApi` it is given:

1. the jobs that may be news, not the whole list: the head of the newest-first list down to the
   last pass (the look-back on the first), the active jobs, and any job active at the last pass
   that is no longer (inspected) — a few requests a pass, whether the namespace holds a hundred
   jobs or a hundred thousand. The finished ones go into the cost ledger (`Ledger.record_finished`, once
   per job id), and with the schedules give the month's projection (`console.ledger.summarize`,
   every `BUDGET_EVERY_S`): over `monthly_budget_usd` is an event, once per month and budget;
2. each job that ended ERROR (or was killed on its timeout): an event with why it failed
   (`console.oncall.why`, from its log tail); one whose labels ask for retries is resumed from
   its checkpoint (`console.oncall.retry`), an event too;
   Each training job that ended COMPLETED under `promote = "on_eval"`: its evaluation job is
   submitted, once (`console.promotion.evaluate_ended`), and said as an INFO event;
3. each RUNNING job's log tail, Trackio run and CPU: its forecast (`console.oncall.forecast`;
   one that will hit its timeout first is an event) and its stall status
   (`console.oncall.stall`; a stall is an event, once per stall);
4. the Trackio project's ERROR alerts: an event each;
5. each SCHEDULING job: the queue depth per flavor (`console.jobs.scheduling_queue`), and one
   waiting longer than `notify.scheduling_after_s` (no free machine of its flavor) is an event,
   once per job, with its flavor and how long it has waited;
6. each schedule whose runs failed `notify.schedule_failures` times in a row (3; from the ledger,
   `Ledger.failure_streaks`): flagged in the report, and an event once per streak (its key names
   the schedule's last run that passed before it), so it is said again only after a run passes;
7. each scheduled tenant whose live adapter version (`console.adapters.live_since`, every
   `LIVE_EVERY_S`) is older than `notify.stale_live_periods` of its schedule's periods: flagged,
   and an event once per live version (its runs keep failing, or pass and are never promoted):
   `console.oncall.stale_live`.

Events are given through a :class:`~console.oncall.notify.Notifier`, once each for good to each
consumer (this watcher's own, each webhook), with the events other watchers of the data dir found
that its consumers were not given (a failure only a read-only web tab saw). Ended jobs and alerts
older than a day before this consumer first watched this data dir are history, not news: a first
`console watch` on a busy fleet does not replay every failure ever (and a webhook added to the
config starts from then).

Besides the events, the report carries the current picture (:mod:`console.oncall.report`): the
tenants failing now with why, and the failures of the last 24 hours (:mod:`console.oncall.recent`;
the first pass reads the list back at least that far).

A read that fails (Trackio, one job's log, the metrics stream, the schedules) is noted in the
report and the pass goes on; only listing the jobs failing fails the pass.

Blocking (HTTP, SQLite, Trackio): call it from a thread. No Textual, no console.ui,
console.server or console.backend.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from console import jobspec, levels, promotion
from console.inputs import format_duration
from console.jobs import ACTIVE_STAGES, format_cost, job_row, log_time
from console.ledger import Ledger, LedgerSummary, ledger_summary, live_prices, month_of, timed_out
from console.ledger.forecast import kept_like
from console.oncall import budget
from console.oncall.forecast import forecast_job
from console.oncall.logtail import read_quietly
from console.oncall.notify import Event, Notifier
from console.oncall.recent import RECENT_S, RecentRuns
from console.oncall.report import WatchReport, problem_text
from console.oncall.retry import Retrier
from console.oncall.stale_live import StaleLiveCheck
from console.oncall.stall import StallDetector, cpu_percent
from console.oncall.store import OnCallStore
from console.oncall.why import why_failed
from console.prices import PriceBook
from console.stages import ERROR, RUNNING, SCHEDULING
from console.trackio_metrics import MetricsReader, RunMetrics, reader_for

LOOKBACK_S = 86400.0
"""Ended jobs and alerts this long before the first watch still count as news."""
LOG_TAIL = 50
"""Lines of a running job's log read each pass (what a stall is judged on)."""
FAIL_TAIL = 200
"""Lines of a failed job's log read once, for why it failed."""
PRICES_TTL_S = 600.0
MIN_RATE_POINTS = 5
"""A running job is called an overrun only once its rate rests on this many logged steps."""
READ_THREADS = 4
BUDGET_EVERY_S = 300.0
"""The month's projection (the schedules read, every schedule's remaining runs) is worked out at
most this often: it moves by a run's cost, not in seconds, and at 10,000 schedules it is the
dearest part of a pass."""
HEAD_OVERLAP_S = 120.0
"""The head of the job list is read back to this long before the last pass began (clock skew
between this machine and the backend, jobs listed late)."""


@dataclass
class _RunningRead:
    job: Any
    tail: list[str] | None = None
    last_output_at: float | None = None
    metrics: RunMetrics | None = None
    cpu: float | None = None
    problems: list[str] = field(default_factory=list)


class Watcher:
    """The detectors and the notifier over one backend (see the module docstring).

    `cfg` is the console's config (plan, seats, budget, Trackio project, `[notify]`). Pass the
    app's own `ledger`, `reader` and `store` to share them; by default they are the data dir's.
    `write` takes the terminal escapes (bell, desktop notification).
    """

    def __init__(
        self,
        api: Any,
        cfg: Any,
        *,
        namespace: str | None = None,
        backend_kind: str | None = None,
        store: OnCallStore | None = None,
        ledger: Ledger | None = None,
        reader: MetricsReader | None = None,
        notifier: Notifier | None = None,
        write: Callable[[str], None] | None = None,
        consumer: str = "watch",
        clock: Callable[[], datetime] | None = None,
        lookback_s: float = LOOKBACK_S,
        since: float | None = None,
        schedules: Callable[[], list[Any] | None] | None = None,
    ) -> None:
        self.api = api
        self.cfg = cfg
        self.namespace = namespace or getattr(cfg, "namespace", None)
        self.store = store or OnCallStore()
        self.ledger = ledger if ledger is not None else Ledger()
        self.reader = reader if reader is not None else reader_for(cfg, backend_kind)
        notify = cfg.notify
        self.notifier = notifier or Notifier(self.store, notify, write=write, consumer=consumer)
        self.recent = RecentRuns(self.store)
        self.retrier = Retrier(api, cfg, self.namespace, backend_kind)
        self.detector = StallDetector(
            self.store, stall_after_s=notify.stall_after_s, idle_cpu_pct=notify.stall_cpu_pct
        )
        self.clock = clock or (lambda: datetime.now(UTC))
        self.lookback_s = lookback_s
        self.since = since
        """Unix time: ended jobs and alerts from then on are news (`console watch --since`), in
        place of the day before the data dir was first watched. Sent events stay sent."""
        self.project = cfg.trackio.project
        self.backend_kind = backend_kind
        self._prices: tuple[float, PriceBook] | None = None
        self._last_pass: float | None = None
        """When the last pass began (epoch seconds): the next reads the list back to there."""
        self._active: set[str] = set()
        """The jobs active at the last pass: one that is no longer is read, wherever it is."""
        self._budget_at: float | None = None
        self._budget_events: list[Event] = []
        self._summary: LedgerSummary | None = None
        self._scheduled: list[Any] | None = None
        """The schedules the last projection read itself, when the caller gave none (the stale-live
        check reuses them); None when it had the caller's."""
        self._kept_schedules = schedules
        """The schedules a caller already keeps (the app's, as its last refresh read them), or None
        until it has them; without it (or before then) a pass reads them itself. 10,000 schedules
        are tens of MB as they come: the TUI keeps one copy, not two."""
        self._given: list[Any] | None = None
        """The schedules the caller gave the pass under way (`check`), None between passes."""
        self.stale_live = StaleLiveCheck(api, self.store)

    # -- reads

    def prices(self) -> PriceBook:
        now = time.monotonic()
        if self._prices is None or now - self._prices[0] > PRICES_TTL_S:
            self._prices = (now, live_prices(self.api, self.cfg.billing.granularity))
        return self._prices[1]

    def _tail(self, job_id: str, lines: int, *, running: bool = False) -> list[str]:
        def read() -> Iterator[str]:
            return self.api.fetch_job_logs(job_id=job_id, namespace=self.namespace, follow=False,
                                           tail=lines)

        if running:
            return read_quietly(read, lines)
        return list(itertools.islice(read(), lines))

    def _running_tail(self, job_id: str) -> tuple[list[str], float | None]:
        """A running job's log tail and the time the Jobs API stamped its last line (None when
        the API gives no times)."""
        entries = getattr(self.api, "fetch_job_log_entries", None)
        if entries is None:
            return self._tail(job_id, LOG_TAIL, running=True), None
        read = read_quietly(lambda: entries(job_id=job_id, namespace=self.namespace, tail=LOG_TAIL), LOG_TAIL)
        when = log_time(read[-1][0]) if read else None
        return [text for _, text in read], when.timestamp() if when is not None else None

    def _read_running(self, job: Any) -> _RunningRead:
        read = _RunningRead(job)
        try:
            read.tail, read.last_output_at = self._running_tail(job.id)
        except Exception as exc:
            read.problems.append(f"log of {job.id}: {problem_text(exc)}")
        run = jobspec.trackio_run_name(job.id, jobspec.labels_of(job))
        if run:
            try:
                read.metrics = self.reader.run_metrics(self.project, run)
            except Exception as exc:
                read.problems.append(f"Trackio run {run}: {problem_text(exc)}")
        try:
            sample = next(iter(self.api.fetch_job_metrics(job_id=job.id, namespace=self.namespace)), None)
            read.cpu = cpu_percent(sample)
        except Exception as exc:
            read.problems.append(f"metrics of {job.id}: {problem_text(exc)}")
        return read

    # -- the pass

    def check(self, schedules: list[Any] | None = None) -> WatchReport:
        """One pass: read, detect, notify. Raises only when the jobs cannot be listed.

        `schedules`: the schedules the caller keeps, as of this pass (a copy it gives: the app's,
        taken on its UI thread); None: those the constructor's `schedules` gives, else read. The
        copy is the caller's, to replace: none is kept past the pass (10,000 schedules a whole
        re-read has replaced would stay alive beside the new ones)."""
        self._given = schedules
        try:
            return self._pass()
        finally:
            self._given = None

    def _pass(self) -> WatchReport:
        t0 = time.monotonic()
        now = self.clock()
        report = WatchReport(at=now)
        prices = self.prices()
        # news: from a day before this consumer first watched the data dir (a `console watch`
        # started on a fleet a TUI has watched for months is not given months of failures)
        since = self.store.first_watch_at(now.timestamp(), self.notifier.consumer) - self.lookback_s
        if self.since is not None:
            since = self.since
        jobs = self._jobs(min(since, now.timestamp() - RECENT_S))  # the picture's 24 hours, at least
        self._last_pass = now.timestamp()
        self.recent.observe(jobs, now)
        events: list[Event] = []

        events += self._budget(jobs, now, prices, report)
        events += self._ended(jobs, now, prices, since)
        evaluating, problems = promotion.evaluate_ended(  # promote = "on_eval": a passing run's evaluation
            self.api, jobs, self.store, now=now.timestamp(), since=since, namespace=self.namespace,
            backend_kind=self.backend_kind, read_only=bool(getattr(self.cfg, "read_only", False)))
        events += evaluating
        report.problems += problems
        events += self.retrier.check(jobs, since, prices, self.notifier.already_sent, report.problems)
        running = [j for j in jobs if j.status.stage == RUNNING]
        report.running = len(running)
        events += self._running(running, now, prices, report)
        events += self._alerts(jobs, now, since, report)
        events += self._scheduling(jobs, now, prices, report)
        events += self._failing_schedules(now, since, report)
        events += self._stale_live(now, report)
        self.detector.forget_others([j.id for j in running])

        events = self.notifier.backlog(since, {e.key for e in events}) + events
        report.events = self.notifier.send(events)
        report.failing_tenants, report.failures = self.recent.picture(
            now, prices, read_tail=lambda job_id: self._tail(job_id, FAIL_TAIL))
        report.seconds = time.monotonic() - t0
        return report

    def _jobs(self, since: float) -> list[Any]:
        """The jobs a pass looks at (see the module docstring), each once, compacted."""
        horizon = since if self._last_pass is None else max(since, self._last_pass - HEAD_OVERLAP_S)
        found: dict[str, Any] = {}
        for job in self.api.list_jobs(namespace=self.namespace):  # newest first
            created = job.created_at.timestamp() if job.created_at is not None else None
            if created is not None and created < horizon:
                break
            if job.id not in found:  # compacted as read: a burst of queued runs is held light
                found[job.id] = jobspec.compact_job(job)
        for job in self.api.list_jobs(namespace=self.namespace, status=list(ACTIVE_STAGES)):
            if job.id not in found:
                found[job.id] = jobspec.compact_job(job)
        for job_id in self._active - set(found):  # ended since the last pass
            try:
                found[job_id] = jobspec.compact_job(self.api.inspect_job(job_id=job_id, namespace=self.namespace))
            except Exception:  # deleted, or not readable now: the next pass tries again
                continue
        jobs = list(found.values())
        self._active = {j.id for j in jobs if j.status.stage in ACTIVE_STAGES}
        return jobs

    def _budget(self, jobs: list[Any], now: datetime, prices: PriceBook,
                report: WatchReport) -> list[Event]:
        try:
            refreshed = self.ledger.record_finished(jobs, prices, now=now)
        except Exception as exc:
            report.problems.append(f"ledger: {problem_text(exc)}")
            return []
        at = time.monotonic()
        if self._budget_at is not None and at - self._budget_at < BUDGET_EVERY_S:
            report.summary = self._summary
            return list(self._budget_events)
        self._budget_at = at
        self._budget_events = self._project(refreshed, now, prices, report)
        self._summary = report.summary
        return list(self._budget_events)

    def _callers_schedules(self) -> list[Any] | None:
        """The schedules the caller keeps (`schedules`), or None when it has none (yet)."""
        if self._given is not None:
            return self._given
        return self._kept_schedules() if self._kept_schedules is not None else None

    def _read_scheduled(self) -> list[Any]:
        """The schedules: the caller's when it has them, else read, compacted as the app keeps
        them (their strings shared with its own copy)."""
        kept = self._callers_schedules()
        if kept is not None:
            return kept
        return [jobspec.compact_job(sj) for sj in self.api.list_scheduled_jobs(namespace=self.namespace)]

    def _project(self, refreshed: Any, now: datetime, prices: PriceBook,
                 report: WatchReport) -> list[Event]:
        try:
            kept = self._callers_schedules()
            scheduled = kept if kept is not None else self._read_scheduled()
            # the caller's copy is theirs to replace: holding it here until the next projection
            # (BUDGET_EVERY_S) would keep a whole re-read's old schedules alive beside the new
            self._scheduled = None if kept is not None else scheduled
        except Exception as exc:
            report.problems.append(f"schedules: {problem_text(exc)}")
            scheduled = []
        summary = ledger_summary(
            self.ledger, now=now, plan=self.cfg.plan, seats=self.cfg.seats,
            budget_usd=self.cfg.monthly_budget_usd, scheduled_jobs=scheduled,
            active_jobs=refreshed.active, prices=prices,
        )
        summary = kept_like(summary, self._summary)  # what did not change stays the objects held
        report.summary = summary
        if not summary.over_budget or summary.budget_usd is None:
            return []
        if getattr(self.cfg, "budget_action", "warn") == "suspend":  # a budget that acts
            acted, problems = budget.act(self.api, self.store, summary, namespace=self.namespace, now=now.timestamp(),
                                         read_only=bool(getattr(self.cfg, "read_only", False)))
            report.problems += problems
            if acted:
                self._budget_at = None  # the next pass projects the month again, with these suspended
                return acted
        month = month_of(now)
        return [Event(
            key=f"budget:{month}:{summary.budget_usd:.2f}",
            kind="budget",
            level="WARN",
            title=f"{month} projected over budget",
            text=summary.budget_warning or "",
            at=now.timestamp(),
            data={"projection_usd": summary.projection_usd, "budget_usd": summary.budget_usd,
                  "month_to_date_usd": summary.month_to_date_usd},
        )]

    def _ended(self, jobs: list[Any], now: datetime, prices: PriceBook, since: float) -> list[Event]:
        candidates = {}
        for job in jobs:
            if job.status.stage != ERROR:
                continue
            ended = job.finished_at or job.created_at
            if ended is not None and ended.timestamp() < since:
                continue
            kind = "job_timeout" if timed_out(job) else "job_error"
            candidates[f"{kind}:{job.id}"] = (kind, job)
        fresh = set(candidates) - self.notifier.already_sent(candidates)
        events = []
        for key in sorted(fresh):
            kind, job = candidates[key]
            try:
                tail = self._tail(job.id, FAIL_TAIL)
            except Exception:  # the status message still says something
                tail = []
            reason = why_failed(job, tail)
            row = job_row(job, now=now, prices=prices)
            verb = "timed out" if kind == "job_timeout" else "failed"
            text = f"{reason.text if reason else row.message or ERROR}; billed {format_cost(row.cost_usd)}"
            events.append(Event(
                key=key, kind=kind, level=levels.ERROR,
                title=f"{row.tenant} {row.kind} job {row.id} {verb}",
                text=text, at=now.timestamp(), job_id=row.id, tenant=row.tenant,
                data={"reason": reason.text if reason else None,
                      "reason_source": reason.source if reason else None,
                      "cost_usd": row.cost_usd, "message": row.message, "labels": row.labels},
            ))
        return events

    def _running(self, running: list[Any], now: datetime, prices: PriceBook,
                 report: WatchReport) -> list[Event]:
        if not running:
            return []
        with ThreadPoolExecutor(min(READ_THREADS, len(running)), thread_name_prefix="oncall-read") as pool:
            reads = list(pool.map(self._read_running, running))
        events = []
        for read in reads:
            job = read.job
            report.problems.extend(read.problems)
            metrics = read.metrics if read.metrics is not None and read.metrics.found else None
            fc = forecast_job(job, metrics, now=now, prices=prices)
            report.forecasts.append(fc)
            if (fc.will_time_out and metrics is not None
                    and len(metrics.recent_steps) >= MIN_RATE_POINTS):
                events.append(Event(
                    key=f"overrun:{job.id}", kind="overrun", level="WARN",
                    title=f"{fc.tenant} job {job.id} will hit its timeout",
                    text=fc.line(), at=now.timestamp(), job_id=job.id, tenant=fc.tenant,
                    data=fc.to_dict(),
                ))
            if read.tail is None:
                continue  # without its log, a job is neither cleared nor accused
            status = self.detector.observe(
                job, log_tail=read.tail, step=metrics.step if metrics else None, cpu_pct=read.cpu,
                now=now, prices=prices, last_output_at=read.last_output_at,
                last_step_at=metrics.last_step_at if metrics else None,
            )
            report.stalls.append(status)
            if status.stalled:
                events.append(Event(
                    key=f"stall:{job.id}:{int(status.idle_since)}", kind="stall", level="WARN",
                    title=f"{status.tenant} job {job.id} stalled for {format_duration(status.idle_s)}",
                    text=status.line(), at=now.timestamp(), job_id=job.id, tenant=status.tenant,
                    data=status.to_dict(),
                ))
        return events

    def _scheduling(self, jobs: list[Any], now: datetime, prices: PriceBook,
                    report: WatchReport) -> list[Event]:
        after = float(self.cfg.notify.scheduling_after_s)
        report.waiting = [job_row(j, now=now, prices=prices) for j in jobs if j.status.stage == SCHEDULING]
        events = []
        for row in report.waiting:
            waited = row.waiting_seconds(now)
            if waited is None or waited < after:
                continue
            report.stuck[row.id] = waited
            flavor = row.flavor or "-"
            since = row.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if row.created_at else "-"
            text = f"waiting for {flavor} for {format_duration(waited)} (since {since})"
            events.append(Event(
                key=f"scheduling:{row.id}", kind="scheduling", level="WARN",
                title=f"{row.tenant} job {row.id} stuck in SCHEDULING on {flavor}",
                text=text + (f"; {row.message}" if row.message else ""),
                at=now.timestamp(), job_id=row.id, tenant=row.tenant,
                data={"flavor": row.flavor, "waiting_s": round(waited, 1), "since": since,
                      "message": row.message, "labels": row.labels},
            ))
        return events

    def _failing_schedules(self, now: datetime, since: float, report: WatchReport) -> list[Event]:
        after = int(getattr(self.cfg.notify, "schedule_failures", 3))
        try:
            streaks = self.ledger.failure_streaks()
        except Exception as exc:
            report.problems.append(f"ledger: {problem_text(exc)}")
            return []
        report.failing = sorted((s for s in streaks.values() if s.failures >= after),
                                key=lambda s: (-s.failures, s.scheduled_job_id))
        events = []
        for streak in report.failing:
            ended = _timestamp(streak.last_at or "")
            if ended is not None and ended < since:
                continue  # failing since before the first watch: history (the report still flags it)
            sj = streak.scheduled_job_id
            last = f"; last: {streak.last_message}" if streak.last_message else ""
            events.append(Event(
                key=f"schedule_failing:{sj}:{streak.passed_job_id or 'never-passed'}",
                kind="schedule_failing", level=levels.ERROR,
                title=f"{streak.tenant} schedule {sj} failed {streak.failures} runs in a row",
                text=f"every run since {streak.since or '-'} failed (last {streak.last_job_id}){last}",
                at=now.timestamp(), job_id=streak.last_job_id, tenant=streak.tenant,
                data={**streak.to_dict(), "threshold": after},
            ))
        return events

    def _stale_live(self, now: datetime, report: WatchReport) -> list[Event]:
        periods = int(getattr(self.cfg.notify, "stale_live_periods", 3))
        return self.stale_live.events(now, periods, report, self._live_schedules)

    def _live_schedules(self) -> list[Any]:
        """The schedules the stale-live check reads: the caller's, as fresh as what it shows,
        else those the last projection read, else read now."""
        scheduled = self._callers_schedules()
        if scheduled is None:
            scheduled = self._scheduled
        if scheduled is None:
            scheduled = self._scheduled = self._read_scheduled()
        return scheduled

    def _alerts(self, jobs: list[Any], now: datetime, since: float, report: WatchReport) -> list[Event]:
        try:
            alerts = [a for a in self.reader.alerts(self.project) if a.level == levels.ERROR]
        except Exception as exc:
            report.problems.append(f"Trackio alerts: {problem_text(exc)}")
            return []
        runs: dict[str, Any] = {}
        for job in jobs:
            run = jobspec.trackio_run_name(job.id, jobspec.labels_of(job))
            if run:
                runs.setdefault(run, job)
        events = []
        for a in alerts:
            at = _timestamp(a.timestamp)
            if at is not None and at < since:
                continue
            job = runs.get(a.run)
            tenant = jobspec.labels_of(job).get("tenant") if job is not None else None
            events.append(Event(
                key=f"alert:{a.project}:{a.run}:{a.timestamp}:{a.title}",
                kind="trackio_error", level=levels.ERROR,
                title=f"Trackio ERROR in {a.run}: {a.title}",
                text=a.text + (f" (step {a.step})" if a.step is not None else ""),
                at=now.timestamp(), job_id=job.id if job is not None else None, tenant=tenant,
                data={"project": a.project, "run": a.run, "step": a.step, "alert_at": a.timestamp},
            ))
        return events

    def close(self, timeout: float = 0.0) -> None:
        """Let queued webhooks finish for up to `timeout` seconds."""
        self.notifier.close(timeout)


def _timestamp(text: str) -> float | None:
    try:
        dt = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()

