"""ConsoleApp: the fleet, the jobs and their live logs, and the actions an on-call engineer needs.

Layout (legible at 80x24, no mouse needed)::

    status line: namespace  plan  backend endpoint  refreshed 2s ago | STALE
    [1 Fleet] [2 Jobs] [3 Costs]
      Fleet: FleetTable (one row per tenant, derived from HF Jobs)
      Jobs:  JobsPane (filter + JobsTable) over LogPane (+ #metrics-panel when wide)
      Costs: #ledger-pane (the cost ledger / what-if widgets mount here)
    footer: the keys

Every HfApi call runs in a thread worker; results come back as messages (`DataRefreshed`,
`ActionDone`) and failures are handled in one `on_worker_state_changed`. Polling re-arms a
one-shot timer after each fetch, so refreshes never pile up. Mutating actions are refused in
read-only mode, and the ones that cost money or kill work ask first.

Hooks for other panes: the JobsTable posts `JobsTable.JobSelected` (it bubbles to the app) and
the app mirrors it in the reactive `selected_job_id`; widgets elsewhere can
`self.watch(self.app, "selected_job_id", ...)`. The ledger pane mounts into `#ledger-pane`, the
metrics / sparkline panel into `#metrics-panel` (beside the log, shown from 120 columns).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, ComposeResult, SuspendNotSupported, SystemCommand
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Footer, TabbedContent, TabPane
from textual.worker import Worker, WorkerState, get_current_worker

from console import jobspec, paths
from console.config import Config
from console.fleet import RunOutcome, TenantRow, derive_fleet, parse_outcome
from console.jobs import (
    ACTIVE_STAGES,
    JobRow,
    Prefetch,
    clean_log_line,
    first_frame_jobs,
    format_cost,
    job_row,
)
from console.jobspec import TrainingRequest
from console.metrics import spark_text
from console.prices import PriceBook, shipped_price_book
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.help import HelpScreen
from console.ui.screens.prompt import PromptScreen
from console.ui.screens.reschedule import RescheduleScreen
from console.ui.screens.submit import SubmitResult, SubmitScreen
from console.ui.streams import iterate_batches, iterate_cancellable
from console.ui.widgets.costs import LedgerPane
from console.ui.widgets.fleet_table import FleetTable
from console.ui.widgets.job_details import JobDetails
from console.ui.widgets.jobs_pane import JobsPane
from console.ui.widgets.jobs_table import JobsTable
from console.ui.widgets.log_pane import DEFAULT_MAX_LINES, LogPane
from console.ui.widgets.metrics import AlertList, MetricsPanel
from console.ui.widgets.status_line import StatusLine


class _Stopped(Exception):
    """The refresh worker was cancelled (the app is closing) in the middle of a read."""


SSH_SHELL_ENV = "CONSOLE_SSH_SHELL"
BENCH_READY_ENV = "CONSOLE_BENCH_READY_FILE"
"""If set, the app writes `time.time()` to this file once its first filled frame is painted."""
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
LOG_BACKLOG_LIMIT = 50_000
TERMINAL = ("COMPLETED", "ERROR", "CANCELED", "DELETED")


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


@dataclass
class ActionDone(Message):
    text: str
    severity: str = "information"
    refresh: bool = True


@dataclass
class MetricsSample(Message):
    job_id: str
    sample: dict[str, Any] = field(default_factory=dict)


class ConsoleApp(App[None]):
    """The console TUI against one backend (a `console.backend.Backend` or the like)."""

    CSS_PATH = str(paths.stylesheet_path())
    TITLE = "console"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    BINDINGS = [
        Binding("1", "show_tab('fleet')", "Fleet", tooltip="The tenant fleet", id="tab-fleet"),
        Binding("2", "show_tab('jobs')", "Jobs", tooltip="Jobs and their logs", id="tab-jobs"),
        Binding(
            "3", "show_tab('costs')", "Costs", tooltip="Cost ledger", id="tab-costs", show=False
        ),
        Binding(
            "4",
            "show_tab('training')",
            "Training",
            tooltip="Trackio curves of the selected job and the fleet's alerts",
            id="tab-training",
            show=False,
        ),
        Binding(
            "dollar_sign",
            "whatif",
            "What-if",
            tooltip="What-if explorer: the fleet's cost under other assumptions",
            id="whatif",
            show=False,
        ),
        Binding("s", "submit", "Submit", tooltip="Submit a training job (form)", id="submit"),
        Binding("c", "cancel_job", "Cancel", tooltip="Cancel the selected job", id="cancel"),
        Binding("x", "ssh", "Shell", tooltip="Open a shell in the selected job", id="ssh"),
        Binding("r", "reschedule", "Resched", tooltip="Edit the tenant's cron", id="reschedule"),
        Binding(
            "p",
            "toggle_suspend",
            "Pause",
            tooltip="Suspend / resume the tenant's schedule",
            id="suspend",
        ),
        Binding(
            "t", "trigger", "Trigger", tooltip="Run the tenant's scheduled job now", id="trigger"
        ),
        Binding("R", "rerun", "Rerun", tooltip="Run the selected job again", id="rerun"),
        Binding(
            "slash",
            "filter",
            "Filter",
            tooltip="Filter jobs (tenant:, stage:, label:)",
            id="filter",
        ),
        Binding(
            "f",
            "log('toggle_follow')",
            "Follow",
            tooltip="Follow the log on/off",
            id="follow",
            show=False,
        ),
        Binding(
            "w",
            "log('toggle_wrap')",
            "Wrap",
            tooltip="Wrap log lines on/off",
            id="wrap",
            show=False,
        ),
        Binding(
            "G",
            "log('jump_end')",
            "End",
            tooltip="Jump to the end of the log",
            id="end",
            show=False,
        ),
        Binding(
            "ctrl+s",
            "save_log",
            "Save log",
            tooltip="Save the full log to a file",
            id="save-log",
            show=False,
        ),
        Binding(
            "ctrl+r", "refresh_now", "Refresh", tooltip="Refresh now", id="refresh", show=False
        ),
        Binding("question_mark", "help", "Help", tooltip="All keys", id="help"),
        Binding("q", "quit", "Quit", tooltip="Quit the console", id="quit"),
    ]
    MUTATING = {
        "submit": "submit",
        "cancel_job": "cancel",
        "reschedule": "reschedule",
        "toggle_suspend": "suspend/resume",
        "trigger": "trigger",
        "rerun": "rerun",
        "ssh": "open a shell in",
    }

    selected_job_id: reactive[str | None] = reactive(None)
    """The job highlighted in the jobs table (None when there is none)."""

    def __init__(
        self,
        cfg: Config,
        backend: Any,
        *,
        clock: Callable[[], datetime] | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
        log_max_lines: int = DEFAULT_MAX_LINES,
        prices: PriceBook | None = None,
        start_tab: str = "jobs",
        stream_metrics: bool = True,
        first_frame: Prefetch | None = None,
    ) -> None:
        """`first_frame`: the first page of jobs, already being read (see `jobs.Prefetch`)."""
        super().__init__()
        self._first_frame = first_frame
        self.cfg = cfg
        self.backend = backend
        self.clock = clock or (lambda: datetime.now(UTC))
        self.refresh_seconds = refresh_seconds
        self.log_max_lines = log_max_lines
        self.prices = prices or shipped_price_book()
        self.start_tab = start_tab
        self.stream_metrics = stream_metrics
        self.read_only = bool(cfg.read_only)
        self.namespace = getattr(backend, "namespace", None) or cfg.namespace
        self.job_infos: dict[str, Any] = {}
        self._active_ids: set[str] = set()
        """Ids of the jobs last seen SCHEDULING or RUNNING (kept in step with `job_rows`)."""
        self.job_rows: dict[str, JobRow] = {}
        self.scheduled: dict[str, Any] = {}
        self.fleet_rows: dict[str, TenantRow] = {}
        self.outcomes: dict[str, RunOutcome] = {}
        self.last_refresh: datetime | None = None
        self.refresh_count = 0
        self._refresh_timer = None
        self._log_job: str | None = None
        self._synced = False
        self._last_full = 0.0
        self._full_stamped = False
        self._newest_success: dict[str, str] = {}
        """tenant -> id of its newest completed training run (whose outcome the fleet shows)"""
        from console.ledger import Ledger
        from console.metrics import reader_for

        self._metrics_live = False
        self.ledger = Ledger()
        self.metrics_reader = reader_for(cfg, getattr(backend, "kind", cfg.backend))

    # -- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusLine(
            namespace=self.namespace,
            plan=self.cfg.plan,
            backend=getattr(self.backend, "kind", self.cfg.backend),
            endpoint=getattr(self.backend, "url", "") or "",
            read_only=self.read_only,
            clock=self.clock,
            id="status-line",
        )
        with TabbedContent(initial=self.start_tab, id="tabs"):
            with TabPane("1 Fleet", id="fleet"):
                yield FleetTable(id="fleet-table")
            with TabPane("2 Jobs", id="jobs"):
                yield JobsPane(self.clock, id="jobs-pane")
                with Horizontal(id="log-row"):
                    yield LogPane(max_lines=self.log_max_lines, id="log-pane")
                    with Vertical(id="metrics-panel"):
                        yield JobDetails(id="job-details")
                        yield MetricsPanel(self.metrics_reader, self.cfg.trackio.project, id="trackio-metrics")
            with TabPane("3 Costs", id="costs"):
                with Container(id="ledger-pane"):
                    yield LedgerPane(self.ledger, self.cfg, id="ledger-widget")
            with TabPane("4 Training", id="training"):
                with Vertical(id="training-pane"):
                    yield MetricsPanel(
                        self.metrics_reader, self.cfg.trackio.project, id="trackio-metrics-tab"
                    )
                    yield AlertList(self.metrics_reader, self.cfg.trackio.project, id="fleet-alerts")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.title = f"console - {self.namespace}"
        self.refresh_data()
        if self.start_tab == "jobs":
            self.query_one(JobsTable).focus()
        else:
            self.query_one(FleetTable).focus()

    @property
    def api(self) -> Any:
        return self.backend.api

    @property
    def synced(self) -> bool:
        """True once the whole job list has been read (the first frame shows only the newest)."""
        return self._synced

    @property
    def outcomes_pending(self) -> bool:
        """A worker is reading log tails for the fleet's last loss / adapter."""
        return any(w.group == "outcomes" and w.is_running for w in self.workers)

    @property
    def log_pane(self) -> LogPane:
        return self.query_one(LogPane)

    @property
    def jobs_table(self) -> JobsTable:
        return self.query_one(JobsTable)

    @property
    def fleet_table(self) -> FleetTable:
        return self.query_one(FleetTable)

    # -- refresh ---------------------------------------------------------------------------

    @work(
        thread=True,
        exclusive=True,
        group="refresh",
        exit_on_error=False,
        description="refresh jobs and scheduled jobs",
    )
    def refresh_data(self, full: bool = False, scheduled: bool = False) -> None:
        """Re-read what changed: new jobs (the head of the newest-first list, up to the first job
        already known to be finished), the jobs known to be active, and every scheduled job when
        one fired or an action touched them. Each refresh costs a few requests whatever the
        number of tenants; a full re-read (every FULL_SYNC_SECONDS, and `ctrl+r`) catches the rest
        (label edits, jobs that started and ended between two refreshes)."""
        try:
            self._refresh(full, scheduled)
        except _Stopped:
            return  # the app is closing: a long read (the whole list) stops between two items

    def _refresh(self, full: bool, scheduled: bool) -> None:
        api, ns, at = self.api, self.namespace, self.clock()
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

        if not self._synced:
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
                self.post_message(DataRefreshed(head, None, at, full=False))
            full = True
        if full or time.monotonic() - self._last_full >= FULL_SYNC_SECONDS:
            jobs = list(list_jobs())
            sched = list_scheduled()
            self.post_message(DataRefreshed(jobs, sched, self.clock(), full=True))
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
        active = [i for i in self._active_ids if i not in seen]
        gone: list[str] = []
        if active:
            for job_id in active:
                if job_id in seen:
                    continue
                try:
                    changed.append(slim(api.inspect_job(job_id=job_id, namespace=ns)))
                except Exception as exc:  # deleted meanwhile: drop it; anything else: retry later
                    if getattr(getattr(exc, "response", None), "status_code", None) == 404:
                        gone.append(job_id)
                    else:
                        raise
        fired = any(j.id not in known and _initiated_by_schedule(j) for j in changed)
        sched = list_scheduled() if (scheduled or fired) else None
        self.post_message(DataRefreshed(changed, sched, at, full=False, gone=gone))

    @work(
        thread=True,
        exclusive=True,
        group="outcomes",
        exit_on_error=False,
        description="read the last runs' outcomes",
    )
    def fetch_outcomes(self, job_ids: list[str]) -> None:
        """Last loss and adapter of these finished runs, from their log tails."""
        found: dict[str, RunOutcome] = {}
        for job_id in job_ids:
            try:
                tail = list(
                    self.api.fetch_job_logs(
                        job_id=job_id, namespace=self.namespace, follow=False, tail=40
                    )
                )
            except Exception:  # the outcome is a nicety; a later refresh retries
                continue
            outcome = parse_outcome(tail)
            info = self.job_infos.get(job_id)
            run = jobspec.trackio_run_name(job_id, getattr(info, "labels", None))
            if run:
                try:
                    curve = self.metrics_reader.run_metrics(self.cfg.trackio.project, run).loss
                    outcome = replace(outcome, loss_trend=spark_text(curve, LOSS_TREND_WIDTH))
                except Exception:  # the trend is a nicety, like the outcome itself
                    pass
            found[job_id] = outcome
        if found:
            self.post_message(OutcomesFetched(found))

    def _shutting_down(self) -> bool:
        """A worker's result can arrive while the app is closing and its panes are already gone
        (shutdown clears `is_running` first, then removes the widgets)."""
        return not self.is_running

    def on_outcomes_fetched(self, message: OutcomesFetched) -> None:
        if self._shutting_down():
            return
        self.outcomes.update(message.outcomes)
        touched = []
        for tenant, job_id in self._newest_success.items():
            outcome = message.outcomes.get(job_id)
            row = self.fleet_rows.get(tenant)
            if outcome is not None and row is not None:
                row.last_loss, row.adapter = outcome.last_loss, outcome.adapter
                row.loss_trend = outcome.loss_trend
                touched.append(row)
        if touched:
            self.fleet_table.refresh_rows(touched, self.clock())

    def _want_outcomes(self) -> None:
        """Ask for a few missing outcomes, the tenants on screen in the fleet table first."""
        missing = {
            t: j for t, j in self._newest_success.items() if j not in self.outcomes
        }
        if not missing:
            return
        table = self.fleet_table
        if self.active_tab == "fleet":
            order = [
                table.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value
                for i in range(
                    int(table.scroll_offset.y),
                    min(table.row_count, int(table.scroll_offset.y) + max(table.size.height, 50)),
                )
            ]
        else:
            job = self.selected_job()
            order = [job.tenant] if job is not None else []
        picked = [missing[t] for t in order if t in missing][:OUTCOME_FETCHES_PER_REFRESH]
        if picked:
            self.fetch_outcomes(picked)

    def on_data_refreshed(self, message: DataRefreshed) -> None:
        if self._shutting_down():
            return
        now = self.clock()
        if message.full:
            self._synced = True
            self._last_full = time.monotonic()
            infos = {j.id: j for j in message.jobs}
            rows = {j.id: job_row(j, now=now, prices=self.prices) for j in message.jobs}
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
            fresh.update(self._active_ids)
            for job_id in fresh:
                if job_id in infos:
                    rows[job_id] = job_row(infos[job_id], now=now, prices=self.prices)
        if message.scheduled is not None:
            self.scheduled = {s.id: s for s in message.scheduled}
            fleet_changed = True
        changed_rows = None if message.full else [rows[i] for i in fresh if i in rows]
        self.job_infos, self.job_rows = infos, rows
        if message.full:
            self._active_ids = {i for i, r in rows.items() if r.stage not in TERMINAL}
        else:
            active = set(self._active_ids)  # a new set: the refresh worker may be reading the old one
            for job_id in fresh:
                row = rows.get(job_id)
                if row is not None and row.stage not in TERMINAL:
                    active.add(job_id)
                else:
                    active.discard(job_id)
            self._active_ids = active
        pane = self.query_one(JobsPane)
        if changed_rows is None:
            pane.update_rows(list(rows.values()))
        else:
            pane.apply_changes(changed_rows, message.gone)
        if fleet_changed and self._synced:
            jobs = list(infos.values())
            fleet = derive_fleet(
                self.scheduled.values(), jobs, now=now, prices=self.prices, outcomes=self.outcomes
            )
            self.fleet_rows = {r.tenant: r for r in fleet}
            self._newest_success = _newest_successes(jobs)
            self.fleet_table.update_rows(fleet, now)
        self.last_refresh = message.at
        self.refresh_count += 1
        self.query_one(StatusLine).mark_ok(message.at)
        self.query_one(LedgerPane).ingest(
            message.jobs, message.scheduled, self.prices, full=message.full, gone=message.gone
        )
        if message.full:
            self.call_after_refresh(_give_back_memory)
        ready_file = os.environ.get(BENCH_READY_ENV)
        if ready_file and self.refresh_count == 1:
            self.call_after_refresh(_write_ready_stamp, ready_file, "")
        if ready_file and message.full and not self._full_stamped:
            self._full_stamped = True
            self.call_after_refresh(_write_ready_stamp, ready_file, "full ")
        if self._log_job and self._log_job in self.job_rows:
            log_row = self.job_rows[self._log_job]
            self.log_pane.set_stage(log_row.stage)
            self.query_one(JobDetails).show(log_row)
            if (log_row.stage not in TERMINAL) != self._metrics_live:
                self._show_job_metrics(log_row)  # the run started or ended: poll, or read once more
        if self._synced:
            self._want_outcomes()
            self._arm_refresh(self.refresh_seconds)

    def _arm_refresh(self, delay: float) -> None:
        if self._refresh_timer is not None:
            self._refresh_timer.stop()
        self._refresh_timer = self.set_timer(delay, self.refresh_data)

    def action_refresh_now(self) -> None:
        self.refresh_data(full=True)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state != WorkerState.ERROR or self._shutting_down():
            return
        error = _describe_error(worker.error)
        if worker.group == "refresh":
            self.query_one(StatusLine).mark_failed(error)
            self._arm_refresh(RETRY_SECONDS)
        elif worker.group == "actions":
            self.notify(f"{worker.description} failed: {error}", severity="error", timeout=8)
            self.refresh_data()
        elif worker.group == "logs":
            self.log_pane.end(self.log_pane.generation, error)
        elif worker.group == "save":
            self.notify(f"Saving the log failed: {error}", severity="error")

    # -- selection, logs and metrics --------------------------------------------------------

    def on_jobs_table_job_selected(self, message: JobsTable.JobSelected) -> None:
        if self._shutting_down():
            return
        self.selected_job_id = message.job_id
        self.query_one(JobDetails).show(message.row)
        self._show_job_metrics(message.row)
        if message.job_id != self._log_job:
            self.open_log(message.job_id)

    def _show_job_metrics(self, row: JobRow | None) -> None:
        run = jobspec.trackio_run_name(row.id, row.labels) if row is not None else None
        live = row is not None and row.stage not in TERMINAL
        self._metrics_live = live
        for panel in self.query(MetricsPanel):
            panel.show_run(run, job_id=row.id if row else None, live=live)

    def on_ledger_pane_budget_exceeded(self, message: LedgerPane.BudgetExceeded) -> None:
        self.notify(str(message.warning), severity="warning", timeout=10, markup=False)

    def action_whatif(self) -> None:
        from console.ui.widgets.costs import WhatIfScreen

        self.push_screen(
            WhatIfScreen(
                self.cfg, ledger=self.ledger, scheduled_jobs=list(self.scheduled.values()), prices=self.prices
            )
        )

    def on_jobs_table_job_opened(self, message: JobsTable.JobOpened) -> None:
        self.log_pane.log_widget.focus()

    def on_fleet_table_tenant_opened(self, message: FleetTable.TenantOpened) -> None:
        self.action_show_tab("jobs")
        self.query_one(JobsPane).set_filter(f"tenant:{message.tenant}")

    def open_log(self, job_id: str | None) -> None:
        """Show `job_id`'s log, streaming (the previous stream's lines are dropped)."""
        self._log_job = job_id
        row = self.job_rows.get(job_id or "")
        label = f"{row.tenant} {row.kind}" if row else ""
        generation = self.log_pane.start(job_id, label, row.stage if row else "")
        if job_id is None:
            return
        self.stream_logs(job_id, generation)
        if self.stream_metrics and row is not None and row.stage == "RUNNING":
            self.stream_job_metrics(job_id)

    @work(
        thread=True,
        exclusive=True,
        group="logs",
        exit_on_error=False,
        description="stream the job's log",
    )
    def stream_logs(self, job_id: str, generation: int) -> None:
        worker = get_current_worker()
        pane = self.log_pane
        ns = self.namespace
        stream = iterate_batches(
            lambda: self.api.fetch_job_logs(job_id=job_id, namespace=ns, follow=True),
            lambda: worker.is_cancelled or pane.generation != generation,
        )
        for lines in stream:
            pane.feed(generation, lines)
            while pane.backlog() > LOG_BACKLOG_LIMIT and not worker.is_cancelled:
                time.sleep(0.01)  # backpressure: the UI drains in batches
        if not worker.is_cancelled and pane.generation == generation:
            pane.end(generation)

    @work(
        thread=True,
        exclusive=True,
        group="metrics",
        exit_on_error=False,
        description="stream the job's metrics",
    )
    def stream_job_metrics(self, job_id: str) -> None:
        worker = get_current_worker()
        ns = self.namespace
        for sample in iterate_cancellable(
            lambda: self.api.fetch_job_metrics(job_id=job_id, namespace=ns, follow=True),
            lambda: worker.is_cancelled or self._log_job != job_id,
        ):
            if isinstance(sample, dict):
                self.post_message(MetricsSample(job_id, sample))

    def on_metrics_sample(self, message: MetricsSample) -> None:
        if self._shutting_down():
            return
        self.log_pane.show_metrics(message.job_id, message.sample)

    # -- navigation ------------------------------------------------------------------------

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        if tab == "jobs":
            self.jobs_table.focus()
        elif tab == "fleet":
            self.fleet_table.focus()

    def action_filter(self) -> None:
        self.action_show_tab("jobs")
        self.query_one(JobsPane).open_filter()

    def get_system_commands(self, screen: Any) -> Any:
        """The command palette lists every action of the key bindings, with its key."""
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            if not isinstance(binding, Binding) or binding.action == "quit":
                continue
            key = binding.key.replace("question_mark", "?").replace("slash", "/")
            yield SystemCommand(
                f"{binding.description} ({key})",
                binding.tooltip or binding.description,
                partial(self.run_action, binding.action),
            )

    def action_log(self, action: str) -> None:
        """Log-pane keys from anywhere on the jobs tab."""
        if self.active_tab != "jobs":
            self.action_show_tab("jobs")
        getattr(self.log_pane, f"action_{action}")()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Notifications carry server errors, tenant names and labels: plain text, never markup
        (a label like `[@click=app.quit]` must not become a link), and no escape sequences."""
        super().notify(
            clean_log_line(str(message)), title=clean_log_line(str(title)), severity=severity,
            timeout=timeout, markup=markup,
        )

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    # -- what an action applies to ---------------------------------------------------------

    @property
    def active_tab(self) -> str:
        return self.query_one(TabbedContent).active

    def selected_job(self) -> JobRow | None:
        """The job an action applies to: the highlighted one (fleet tab: the tenant's last)."""
        if self.active_tab == "fleet":
            tenant = self.fleet_table.selected_row
            if tenant and tenant.last_job_id:
                return self.job_rows.get(tenant.last_job_id)
            return None
        return self.jobs_table.selected_row

    def selected_tenant(self) -> TenantRow | None:
        if self.active_tab == "fleet":
            return self.fleet_table.selected_row
        job = self.jobs_table.selected_row
        if job is None:
            return None
        return self.fleet_rows.get(job.tenant)

    def _refuse_if_read_only(self, action: str) -> bool:
        if self.read_only:
            what = self.MUTATING.get(action, action)
            self.notify(
                f"Read-only: {what} refused (started with --read-only or read_only = true)",
                severity="warning",
                title="read-only",
            )
            return True
        return False

    def _schedule_of(self, tenant: TenantRow | None) -> Any | None:
        if tenant is None or not tenant.scheduled_job_id:
            return None
        return self.scheduled.get(tenant.scheduled_job_id)

    @work(thread=True, group="actions", exit_on_error=False)
    def call_api(self, description: str, fn: Callable[[], str]) -> None:
        """Run a blocking API call; its outcome (or error) comes back as a notification."""
        text = fn()
        self.post_message(ActionDone(text))

    def _start(self, description: str, fn: Callable[[], str]) -> None:
        worker = self.call_api(description, fn)
        worker.description = description

    def on_action_done(self, message: ActionDone) -> None:
        self.notify(message.text, severity=message.severity, timeout=6)
        if message.refresh:
            self.refresh_data(scheduled=True)

    # -- actions ---------------------------------------------------------------------------

    def action_cancel_job(self) -> None:
        if self._refuse_if_read_only("cancel_job"):
            return
        job = self.selected_job()
        if job is None:
            self.notify("No job selected", severity="warning")
            return
        if not job.active:
            self.notify(f"Job {job.id} is {job.stage}: nothing to cancel", severity="warning")
            return

        def confirmed(yes: bool | None) -> None:
            if not yes:
                self.notify("Cancel: not done", timeout=3)
                return
            ns = self.namespace

            def cancel() -> str:
                self.api.cancel_job(job_id=job.id, namespace=ns)
                return f"Canceled {job.id} ({job.tenant})"

            self._start(f"Cancel {job.id}", cancel)

        self.push_screen(
            ConfirmScreen(
                f"Cancel job {job.id}?",
                [
                    f"tenant {job.tenant}, {job.kind}, {job.stage} on {job.flavor}",
                    f"cost so far {format_cost(job.cost_usd)}; "
                    "its work since the last push is lost",
                ],
                yes_label="Cancel job",
            ),
            confirmed,
        )

    def _initial_request(self) -> TrainingRequest:
        tenant = self.selected_tenant()
        base = tenant.request if tenant and tenant.request else None
        if base is None:
            job = self.selected_job()
            info = self.job_infos.get(job.id) if job else None
            base = jobspec.read_request(info) if info is not None else None
        if base is None:
            base = TrainingRequest(
                tenant=tenant.tenant if tenant else "", dataset="", flavor=self.cfg.defaults.flavor
            )
        return replace(
            base,
            env=self.cfg.defaults.env,
            run_name=None,
            scheduled=False,
            timeout_seconds=None,
            ssh=self.backend_kind == "local",
            trackio_project=base.trackio_project or self.cfg.trackio.project,
            trackio_space_id=base.trackio_space_id or self.cfg.trackio.space_id,
        )

    @property
    def backend_kind(self) -> str:
        return getattr(self.backend, "kind", self.cfg.backend)

    def _token(self) -> str | None:
        if self.backend_kind != "hub":
            return None
        from huggingface_hub import get_token

        return get_token()

    def action_submit(self) -> None:
        if self._refuse_if_read_only("submit"):
            return
        screen = SubmitScreen(
            self._initial_request(),
            backend_kind=self.backend_kind,
            timeout_buffer=self.cfg.defaults.timeout_buffer,
            token=None,
            prices=self.prices,
        )
        self.push_screen(screen, self._submit_form_done)

    def _submit_form_done(self, result: SubmitResult | None) -> None:
        if result is None:
            self.notify("Submit: nothing submitted", timeout=3)
            return
        sub = result.submission
        what = f"a scheduled job ({result.schedule})" if result.schedule else "a job now"
        details = [
            f"tenant {result.request.tenant} on {sub.flavor} "
            f"(${self.prices.price_per_hour(sub.flavor):.2f}/h)",
            f"estimated {sub.estimate_hours * 60:.0f} min, ${sub.estimate_usd:.2f} per run; "
            f"timeout {sub.timeout_seconds}s",
        ]
        if result.preflight:
            details.append(
                "a CPU dataset preflight (~$0.01) runs first; training starts if it passes"
            )

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._start(f"Submit {result.request.tenant}", lambda: self._do_submit(result))
            else:
                self.notify("Submit: nothing submitted", timeout=3)

        self.push_screen(ConfirmScreen(f"Submit {what}?", details, yes_label="Submit"), confirmed)

    def _do_submit(self, result: SubmitResult) -> str:
        """Worker thread: optional preflight, then the job or the scheduled job."""
        token = self._token()
        request = result.request
        ns = self.namespace
        build = dict(
            backend_kind=self.backend_kind,
            timeout_buffer=self.cfg.defaults.timeout_buffer,
            token=token,
            prices=self.prices,
        )
        submission = jobspec.build_submission(request, **build)
        if result.preflight:
            check = jobspec.build_submission(
                replace(request, kind="validate", ssh=False, run_name=None, scheduled=False),
                **build,
            )
            job = self.api.run_job(**check.run_kwargs(), namespace=ns)
            self.post_message(
                ActionDone(f"Preflight {job.id} started for {request.tenant}", refresh=True)
            )
            stage = _wait_terminal(self.api, job.id, ns)
            if stage != "COMPLETED":
                return f"Preflight {job.id} ended {stage}: training not submitted (see its log)"
        if result.schedule:
            sj = self.api.create_scheduled_job(
                **submission.scheduled_kwargs(result.schedule), namespace=ns
            )
            return f"Scheduled {request.tenant} ({sj.id}): {result.schedule}"
        job = self.api.run_job(**submission.run_kwargs(), namespace=ns)
        return (
            f"Submitted {job.id} for {request.tenant} "
            f"(timeout {submission.timeout_seconds}s, est ${submission.estimate_usd:.2f})"
        )

    def action_rerun(self) -> None:
        if self._refuse_if_read_only("rerun"):
            return
        job = self.selected_job()
        info = self.job_infos.get(job.id) if job else None
        if job is None or info is None:
            self.notify("No job selected", severity="warning")
            return
        request = jobspec.read_request(info)
        ns = self.namespace
        if request is not None:
            request = replace(
                request,
                run_name=None,
                scheduled=False,
                timeout_seconds=None,
                ssh=bool(job.ssh_url) or self.backend_kind == "local",
            )
            try:
                sub = jobspec.build_submission(
                    request,
                    backend_kind=self.backend_kind,
                    timeout_buffer=self.cfg.defaults.timeout_buffer,
                    prices=self.prices,
                )
            except jobspec.SubmissionError as exc:
                self.notify(f"Rerun refused: {exc}", severity="error")
                return
            cost = f"${sub.estimate_usd:.2f} est"

            def rerun() -> str:
                s = replace(sub, secrets={"HF_TOKEN": t} if (t := self._token()) else {})
                new = self.api.run_job(**s.run_kwargs(), namespace=ns)
                return f"Rerun of {job.id}: {new.id} ({request.tenant})"
        else:
            cost = "cost unknown (not a console job)"

            def rerun() -> str:
                new = self.api.run_job(
                    image=info.docker_image or "python:3.12",
                    command=list(info.command or []) + list(info.arguments or []),
                    env=dict(info.environment or {}),
                    flavor=info.flavor,
                    labels=jobspec.labels_of(info),
                    namespace=ns,
                )
                return f"Rerun of {job.id}: {new.id} (secrets are not copied)"

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._start(f"Rerun {job.id}", rerun)
            else:
                self.notify("Rerun: not done", timeout=3)

        self.push_screen(
            ConfirmScreen(
                f"Run job {job.id} again?",
                [f"tenant {job.tenant}, {job.kind} on {job.flavor}", cost],
                yes_label="Rerun",
            ),
            confirmed,
        )

    def _need_schedule(self, action: str) -> tuple[TenantRow, Any] | None:
        """The selected tenant and its scheduled job for `action`, or None (and a message) when
        read-only mode refuses it or there is no schedule to act on."""
        if self._refuse_if_read_only(action):
            return None
        tenant = self.selected_tenant()
        sj = self._schedule_of(tenant)
        if tenant is None or sj is None:
            who = f"{tenant.tenant} has" if tenant else "no tenant selected, or it has"
            self.notify(f"{who} no scheduled job", severity="warning")
            return None
        return tenant, sj

    def action_reschedule(self) -> None:
        found = self._need_schedule("reschedule")
        if found is None:
            return
        tenant, sj = found
        ns = self.namespace

        def done(cron: str | None) -> None:
            if not cron:
                self.notify("Reschedule: not changed", timeout=3)
                return

            def reschedule() -> str:
                self.api.update_scheduled_job_schedule(
                    scheduled_job_id=sj.id, schedule=cron, namespace=ns
                )
                return f"Rescheduled {tenant.tenant}: {cron}"

            self._start(f"Reschedule {tenant.tenant}", reschedule)

        self.push_screen(RescheduleScreen(tenant.tenant, sj.schedule or "", clock=self.clock), done)

    def action_toggle_suspend(self) -> None:
        found = self._need_schedule("toggle_suspend")
        if found is None:
            return
        tenant, sj = found
        ns = self.namespace
        if sj.suspend:

            def resume() -> str:
                self.api.resume_scheduled_job(scheduled_job_id=sj.id, namespace=ns)
                return f"Resumed {tenant.tenant}'s schedule ({sj.schedule})"

            self._start(f"Resume {tenant.tenant}", resume)
        else:

            def suspend() -> str:
                self.api.suspend_scheduled_job(scheduled_job_id=sj.id, namespace=ns)
                return f"Suspended {tenant.tenant}'s schedule (p resumes)"

            self._start(f"Suspend {tenant.tenant}", suspend)

    def action_trigger(self) -> None:
        found = self._need_schedule("trigger")
        if found is None:
            return
        tenant, sj = found
        ns = self.namespace

        def confirmed(yes: bool | None) -> None:
            if not yes:
                self.notify("Trigger: not done", timeout=3)
                return

            def trigger() -> str:
                job = self.api.trigger_scheduled_job(scheduled_job_id=sj.id, namespace=ns)
                return f"Triggered {tenant.tenant}: job {job.id}"

            self._start(f"Trigger {tenant.tenant}", trigger)

        self.push_screen(
            ConfirmScreen(
                f"Run {tenant.tenant}'s scheduled job now?",
                [
                    f"{tenant.flavor}, est {format_cost(tenant.cost_per_run)} per run",
                    f"schedule {sj.schedule} is unchanged",
                ],
                yes_label="Trigger",
            ),
            confirmed,
        )

    # -- ssh -------------------------------------------------------------------------------

    def action_ssh(self) -> None:
        if self._refuse_if_read_only("ssh"):
            return
        job = self.selected_job()
        if job is None:
            self.notify("No job selected", severity="warning")
            return
        if job.stage != "RUNNING":
            self.notify(
                f"Job {job.id} is {job.stage}: a shell needs a running job", severity="warning"
            )
            return
        url = job.ssh_url
        if not url:
            self.notify(
                f"Job {job.id} was started without ssh (submit with ssh on to get a shell)",
                severity="warning",
            )
            return
        if url.startswith("file://"):
            self._local_shell(job, Path(url.removeprefix("file://")))
        else:
            ssh = shutil.which("ssh")
            if ssh is None:
                self.notify(
                    "No `ssh` program on this machine: install OpenSSH to open a shell",
                    severity="error",
                )
                return
            self._hand_terminal([ssh, url], None, None, f"ssh {url}")

    def _local_shell(self, job: JobRow, folder: Path) -> None:
        if not folder.is_dir():
            self.notify(f"Job {job.id}'s working folder is gone ({folder})", severity="error")
            return
        shell = os.environ.get(SSH_SHELL_ENV) or os.environ.get("SHELL") or "/bin/sh"
        env = _job_environment(folder, self.job_infos.get(job.id), job.id)
        self._hand_terminal([shell], folder, env, f"shell in {folder}")

    def _hand_terminal(
        self, argv: list[str], cwd: Path | None, env: dict[str, str] | None, what: str
    ) -> None:
        try:
            with self.suspend():
                code = subprocess.call(argv, cwd=cwd, env=env)
        except SuspendNotSupported:
            # No terminal to hand over (headless, tests): run it detached from the screen.
            code = subprocess.call(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL)
        except OSError as exc:
            self.notify(f"Could not start {argv[0]}: {exc}", severity="error")
            return
        self.notify(f"Back from {what} (exit {code})", timeout=4)
        self.refresh_data()

    # -- save log --------------------------------------------------------------------------

    def action_save_log(self) -> None:
        job_id = self._log_job
        if not job_id:
            self.notify("No job selected", severity="warning")
            return
        default = str(Path.cwd() / f"{job_id}.log")

        def chosen(path: str | None) -> None:
            if path:
                self.save_log(job_id, Path(path).expanduser())

        self.push_screen(PromptScreen(f"Save the full log of {job_id} to:", default), chosen)

    @work(thread=True, group="save", exit_on_error=False, description="save the log")
    def save_log(self, job_id: str, path: Path) -> None:
        lines = list(self.api.fetch_job_logs(job_id=job_id, namespace=self.namespace, follow=False))
        path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
        self.post_message(ActionDone(f"Saved {len(lines)} lines to {path}", refresh=False))


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


def _wait_terminal(
    api: Any, job_id: str, namespace: str, poll: float = 1.0, limit: float = 3600.0
) -> str:
    deadline = time.monotonic() + limit
    worker = get_current_worker()
    while time.monotonic() < deadline and not worker.is_cancelled:
        stage = api.inspect_job(job_id=job_id, namespace=namespace).status.stage
        if stage in TERMINAL:
            return stage
        time.sleep(poll)
    return "UNFINISHED"


def _job_environment(folder: Path, info: Any, job_id: str) -> dict[str, str]:
    """The running job's own environment (read from its process), else ours plus its env."""
    try:
        import psutil

        for proc in psutil.process_iter(["cwd"]):
            try:
                if proc.info.get("cwd") and Path(proc.info["cwd"]) == folder:
                    env = proc.environ()
                    if env.get("JOB_ID") == job_id or "JOB_ID" not in env:
                        return dict(env)
            except (psutil.Error, OSError):
                continue
    except ImportError:
        pass
    env = dict(os.environ)
    env.update({k: str(v) for k, v in ((info.environment if info else None) or {}).items()})
    env["JOB_ID"] = job_id
    return env


def _describe_error(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    text = str(error).strip().splitlines()
    first = text[0] if text else type(error).__name__
    server = getattr(error, "server_message", None)  # what the API said, not just "404 ..."
    if isinstance(server, str) and server.strip() and server.strip() not in first:
        first = f"{first.rstrip('.')}: {server.strip().splitlines()[0]}"
    if len(first) > 200:
        first = first[:197] + "..."
    return f"{type(error).__name__}: {first}"
