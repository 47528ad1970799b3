"""The costs pane: what the fleet has cost this month, what it will cost by month end, the budget.

Shows month to date (and minutes in flight), wasted spend on timeouts, the plan floor, the
schedules' remaining firings, the projection to month end against the configured monthly budget
(a warning when over; the builder model's part of the schedules named apart), spend by tenant
(this month, all time, wasted) and by month.

Self-contained: construct it with a :class:`console.ledger.Ledger` and the config. Feed it either

* :meth:`LedgerPane.ingest` with the jobs and scheduled jobs the app already listed (no extra HTTP
  request: the ledger write and the summary run in a thread worker), or
* :meth:`LedgerPane.record_from` with an `HfApi` and a namespace (the worker lists them itself).

The workers read what they are given and post what they found (`Updated`, with what `record_from`
read: schedules, prices, running jobs); the pane's own state changes on the UI thread only.
It posts :class:`LedgerPane.Updated` after every refresh and :class:`LedgerPane.BudgetExceeded`
when the projection first goes over the budget in a month, once the schedules are known (a
projection drawn from the ledger file alone, before the schedules were read, lacks their firings
and says less than `console ledger`). `w` opens the what-if explorer.
Tenant names come from job labels: untrusted, rendered as plain `Text`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from console.jobs import clean_log_line
from console.ledger import Ledger, LedgerSummary, TenantSpend, ledger_summary, record_from_api
from console.ledger.forecast import kept_like
from console.memory import give_back_memory
from console.prices import PriceBook
from console.stages import ACTIVE_STAGES
from console.ui import keys
from console.ui.widgets.keyed_table import KeyedTable

PACE_SHOWN = 3.0
PACE_HIDDEN = 20.0
"""An update waits until `PACE x` the time the last one took has passed since it ended: a summary
of 10,000 schedules that takes seconds never chains into back-to-back updates (at most a third of
a core while the pane is shown, a twentieth while hidden); one of 100 takes milliseconds and is
not held back."""


HOLD_RETRY_SECONDS = 1.0
"""How often a held update (see `LedgerPane`'s `hold`) looks again."""


def pace_wait(last_took: float, since_done: float, shown: bool) -> float:
    """Seconds the next update waits, after one that took `last_took` s and ended `since_done` s ago."""
    return max(0.0, last_took * (PACE_SHOWN if shown else PACE_HIDDEN) - since_done)

TENANT_COLUMNS = (("tenant", "Tenant"), ("runs", "Runs"), ("month", "This month"),
                  ("total", "All time"), ("wasted", "Wasted"))


def _marks(scheduled: Sequence[Any] | None) -> frozenset[tuple[str, Any, bool]]:
    """What of the schedules moves the projection: each one's id, cron and whether it is suspended."""
    return frozenset((str(getattr(s, "id", "")), getattr(s, "schedule", None), bool(getattr(s, "suspend", False)))
                     for s in scheduled or ())


def _plain(text: object, style: str = "") -> Text:
    return Text(clean_log_line(str(text)), style=style, no_wrap=True, overflow="ellipsis")


def _tenant_cells(values: tuple[str, ...]) -> tuple[Text, ...]:
    tenant, runs, month, total, wasted = values
    return (
        _plain(tenant),
        Text(runs, justify="right"),
        Text(month, justify="right"),
        Text(total, justify="right"),
        Text(wasted, justify="right", style="dim" if wasted == "$0.00" else "red"),
    )


@dataclass(frozen=True)
class BackendRead:
    """A `record_from` worker's read of the backend, kept by the pane on the UI thread."""

    scheduled: list[Any]
    prices: PriceBook
    active: list[Any]


class LedgerPane(Vertical):
    """Spend, projection and budget from the cost ledger."""

    DEFAULT_CSS = """
    LedgerPane { height: 1fr; padding: 0 1; }
    LedgerPane #ledger-summary { height: auto; }
    LedgerPane #ledger-warning { height: auto; color: $error; text-style: bold; }
    LedgerPane #ledger-months { height: auto; color: $text-muted; }
    LedgerPane #ledger-tenants { height: 1fr; }
    """

    BINDINGS = keys.COSTS_PANE

    @dataclass
    class Updated(Message):
        """The ledger was brought up to date; `added` new entries."""

        summary: LedgerSummary
        added: int
        with_schedules: bool = True
        """The summary counts the schedules' firings (False: drawn before they were read)."""
        took: float | None = None
        """How long the worker's update took (None: not timed), for the pacing."""
        read: BackendRead | None = None
        """What the worker read from the backend (`record_from`), for the pane to keep."""

    @dataclass
    class BudgetExceeded(Message):
        """The month's projection went over the budget (posted once per month)."""

        warning: str

    @dataclass
    class Failed(Message):
        error: str
        took: float | None = None

    def __init__(self, ledger: Ledger, cfg: Any, *, id: str | None = None,
                 classes: str | None = None, records: bool = True,
                 on_summary: Callable[[LedgerSummary], Any] | None = None,
                 hold: Callable[[], bool] | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        """`records=False`: the jobs given to `ingest` are already in the ledger (the app's
        refresher records them), so only the summary is brought up to date. `on_summary` is
        called (in the worker) with each new summary: the app keeps the last one for its next
        start. `hold`: while it says so and the pane is hidden, updates wait (the app's first
        reads are under way: at 10,000 tenants a summary beside them doubles the start's peak
        memory, and nobody is looking at it yet). `clock`: the app's "now", which every projection
        the pane draws reads (the runs left this month, the money in flight)."""
        super().__init__(id=id, classes=classes)
        self.clock = clock or (lambda: datetime.now(UTC))
        self.ledger = ledger
        self.cfg = cfg
        self.records = records
        self.on_summary = on_summary
        self.hold = hold
        self.kept_from: str | None = None
        """Shown while the summary on screen is the one kept from the last run (its age)."""
        self.summary: LedgerSummary | None = None
        self.scheduled: list[Any] | None = None
        """The scheduled jobs last given (None: not read yet, so no projection is complete)."""
        self.prices: PriceBook | None = None
        self.refreshes = 0
        self._active: dict[str, Any] = {}
        self._warned_month: str | None = None
        # one update at a time: what arrives meanwhile waits here and goes in the next one
        self._busy = False
        self._pending: dict[str, Any] | None = None
        self._pending_now: datetime | None = None
        self._took = 0.0
        """How long the last update took (its worker's time, start to end)."""
        self._done_at = 0.0
        self._pace_timer: Any = None
        self._stale = False
        """A quiet refresh came while the pane was hidden: update it when it shows."""
        self._schedules_moved = False
        """New schedules came since the last update: the next one is not paced."""
        self._tenants_pending: Sequence[TenantSpend] | None = None
        """Spend by tenant not drawn yet (the pane was hidden when it came)."""

    def compose(self) -> ComposeResult:
        yield Static(_plain("Cost ledger: reading..."), id="ledger-summary")
        yield Static("", id="ledger-warning")
        yield Static("", id="ledger-months")
        table = KeyedTable(id="ledger-tenants", cursor_type="row", zebra_stripes=False)
        table.column_keys = tuple(key for key, _ in TENANT_COLUMNS)
        for key, label in TENANT_COLUMNS:
            table.add_column(label, key=key)
        yield table

    def on_mount(self) -> None:
        self.load()

    # -- what the app calls

    def ingest(self, jobs: Sequence[Any], scheduled: Sequence[Any] | None = None,
               prices: PriceBook | None = None, now: datetime | None = None, *, full: bool = True,
               gone: Sequence[str] = ()) -> None:
        """Record newly finished jobs among `jobs` and redraw (the app's refresh already has them).

        Takes the app's refresh as it comes: `full=False` means `jobs` holds only the jobs that
        changed (and `gone` the ids that disappeared); `scheduled=None` keeps the last schedules.
        The pane keeps the active jobs itself, so the minutes in flight stay right either way.
        """
        if scheduled is not None:
            scheduled = list(scheduled)
            # a schedule paused, resumed, rescheduled, added or removed: the projection follows at
            # once, not after the pacing that keeps quiet refreshes light
            self._schedules_moved |= _marks(scheduled) != _marks(self.scheduled)
            self.scheduled = scheduled
        self.prices = prices or self.prices
        if full:
            self._active = {}
        for job_id in gone:
            self._active.pop(job_id, None)
        finished = False
        for job in jobs:
            stage = str(getattr(getattr(job.status, "stage", None), "value", job.status.stage))
            if stage in ACTIVE_STAGES:
                self._active[job.id] = job
            else:
                self._active.pop(job.id, None)
                finished = True
        news = full or finished or scheduled is not None or bool(gone)
        if not (news or self.is_on_screen):
            # only the money in flight moved (the active jobs are kept above): nothing is queued,
            # or an update running now would be followed by another after every quiet refresh
            self._stale = True  # brought up to date when shown
            return
        pending = self._pending if self._pending is not None else {}
        pending.update((job.id, job) for job in jobs)
        self._pending, self._pending_now = pending, now
        self._next_update()

    def record_from(self, api: Any, namespace: str | None) -> None:
        """List jobs and schedules from the backend in a worker, record, redraw."""
        self._record_from(api, namespace, self.summary)

    def load(self) -> None:
        """Redraw from what the ledger file holds (no backend)."""
        if self._pending is None:
            self._pending, self._pending_now = {}, None
        self._next_update()

    @property
    def updating(self) -> bool:
        """An update is running, or waiting its turn (paced)."""
        return self._busy or self._pending is not None

    def _next_update(self) -> None:
        """Start the waiting update unless one is running (refreshes come every few seconds; an
        update at 1,000 tenants can take longer, and threads must not pile up)."""
        if self._busy or self._pending is None:
            return
        if self.hold is not None and not self.is_on_screen and self.hold():
            wait = HOLD_RETRY_SECONDS
        elif self._schedules_moved:
            wait = 0.0
        else:
            wait = pace_wait(self._took, time.monotonic() - self._done_at, self.is_on_screen)
        if wait > 0:
            if self._pace_timer is None:
                self._pace_timer = self.set_timer(wait, self._paced)
            return
        jobs, now = list(self._pending.values()), self._pending_now
        self._pending, self._pending_now = None, None
        self._schedules_moved = False
        self._busy = True
        self._ingest(jobs, self.scheduled, self.prices, now, list(self._active.values()), self.summary)

    def _paced(self) -> None:
        self._pace_timer = None
        self._next_update()

    # -- workers: each reads what it is given (and the ledger, the config and the clock, which
    # never change) and posts what it found; only the UI thread changes the pane's state

    @work(thread=True, group="ledger", exit_on_error=False, description="update the cost ledger")
    def _ingest(self, jobs: list[Any], scheduled: list[Any] | None, prices: PriceBook | None,
                now: datetime | None, active: list[Any], before: LedgerSummary | None) -> None:
        started = time.monotonic()
        try:
            added = self.ledger.record_finished(jobs, prices, now=now).added if self.records else 0
            summary = self._summarize(scheduled or [], active, prices, now, before)
            if self.on_summary is not None:
                self.on_summary(summary)
        except Exception as exc:
            self.post_message(self.Failed(str(exc) or type(exc).__name__, took=time.monotonic() - started))
            return
        took = time.monotonic() - started
        give_back_memory()  # a summary at 10,000 schedules passes through tens of MB
        self.post_message(self.Updated(summary, added, with_schedules=scheduled is not None, took=took))

    @work(thread=True, exclusive=True, group="ledger-read", exit_on_error=False,
          description="refresh the cost ledger from the backend")
    def _record_from(self, api: Any, namespace: str | None, before: LedgerSummary | None) -> None:
        try:
            snap = record_from_api(self.ledger, api, namespace=namespace, granularity=self.cfg.billing.granularity)
            active = list(snap.recorded.active)
            summary = self._summarize(snap.scheduled_jobs, active, snap.prices, None, before)
        except Exception as exc:
            self.post_message(self.Failed(str(exc) or type(exc).__name__))
            return
        read = BackendRead(list(snap.scheduled_jobs), snap.prices, active)
        self.post_message(self.Updated(summary, snap.recorded.added, read=read))

    def _summarize(self, scheduled: Sequence[Any], active: Sequence[Any], prices: PriceBook | None,
                   now: datetime | None, before: LedgerSummary | None) -> LedgerSummary:
        """The summary; what did not change since `before` (the one shown, given by the UI thread)
        stays the objects it holds (`kept_like`)."""
        # totals and calibration from SQL: the pane never holds the ledger's entries
        summary = ledger_summary(
            self.ledger,
            now=now or self.clock(),
            plan=self.cfg.plan,
            seats=self.cfg.seats,
            budget_usd=self.cfg.monthly_budget_usd,
            scheduled_jobs=scheduled,
            active_jobs=active,
            prices=prices,
        )
        return kept_like(summary, before)

    # -- drawing

    def show_kept(self, summary: LedgerSummary) -> None:
        """Show the summary kept from the last run until the first update replaces it."""
        if self.summary is not None:
            return
        self.kept_from = "kept from the last run"
        self._draw(summary)

    def _timed(self, took: float | None) -> None:
        """A worker's update ended, having taken `took` seconds: what the next one's pace reads."""
        if took is not None:
            self._took, self._done_at = took, time.monotonic()

    def on_ledger_pane_updated(self, message: Updated) -> None:
        self._timed(message.took)
        if message.read is not None:  # what `record_from` read: the schedules, prices, running jobs
            read = message.read
            self.scheduled, self.prices = read.scheduled, read.prices
            self._active = {j.id: j for j in read.active}
        self._busy = False
        self._next_update()
        self.refreshes += 1
        self.kept_from = None
        self.summary = message.summary
        self._draw(message.summary)
        s = message.summary
        if s.budget_warning and message.with_schedules and self._warned_month != s.month:
            self._warned_month = s.month
            self.post_message(self.BudgetExceeded(s.budget_warning))

    def _draw(self, s: LedgerSummary) -> None:
        if not self.query("#ledger-summary"):
            return  # composing, or being taken down as the app quits: the summary is kept
        text = self._summary_text(s)
        if self.kept_from:
            text.append(f"  ({self.kept_from}: refreshing)", style="bold yellow")
        self.query_one("#ledger-summary", Static).update(text)
        self.query_one("#ledger-warning", Static).update(
            _plain(f"Over budget: {s.budget_warning}") if s.budget_warning else ""
        )
        months = "  ".join(f"{m} ${v:,.2f}" for m, v in list(s.by_month.items())[-6:])
        self.query_one("#ledger-months", Static).update(_plain(f"By month: {months}" if months else ""))
        self._tenants_pending = s.by_tenant
        if self.is_on_screen:
            self._draw_tenants()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "ledger" and event.state in (WorkerState.CANCELLED, WorkerState.ERROR):
            self._busy = False  # an update that never reported must not hold back the next ones

    def on_ledger_pane_failed(self, message: Failed) -> None:
        self._timed(message.took)
        self._busy = False
        self._next_update()
        self.query_one("#ledger-warning", Static).update(_plain(f"Ledger: {message.error}"))

    @staticmethod
    def _summary_text(s: LedgerSummary) -> Text:
        t = Text()
        t.append(f"{s.month}  ", style="bold")
        t.append(f"spent ${s.month_to_date_usd:,.2f}")
        if s.in_flight_usd:
            t.append(f" + ${s.in_flight_usd:,.2f} running")
        t.append(f"  wasted ${s.wasted_usd:,.2f}", style="red" if s.wasted_usd else "dim")
        t.append(f" ({s.wasted_runs} timeout{'s' if s.wasted_runs != 1 else ''})\n",
                 style="red" if s.wasted_usd else "dim")
        t.append(f"plan floor ${s.plan_floor_usd:,.2f} ({s.plan} x {s.seats})  ")
        running = [f for f in s.schedules if not f.suspended]
        runs = sum(f.remaining_runs for f in running)
        t.append(f"schedules +${s.scheduled_remaining_usd:,.2f} ({runs} run{'s' if runs != 1 else ''} left")
        paused = len(s.schedules) - len(running)
        if paused:  # a suspended schedule adds $0
            t.append(f"; {paused} suspended: $0")
        builder = [f for f in running if f.kind == "builder"]
        if builder:  # the builder model's own cadence and size, apart from the tenants' (reference §4(a))
            b_runs = sum(f.remaining_runs for f in builder)
            t.append(f"; builder model +${sum(f.remaining_usd for f in builder):,.2f}, "
                     f"{b_runs} run{'s' if b_runs != 1 else ''}")
        t.append(")\n")
        t.append("projection ", style="bold")
        t.append(f"${s.projection_usd:,.2f}", style="bold red" if s.over_budget else "bold")
        if s.budget_usd is None:
            t.append("  no budget set (monthly_budget_usd)", style="dim")
        else:
            t.append(f"  budget ${s.budget_usd:,.2f}", style="red" if s.over_budget else "green")
        spread = f", {s.calibration_spread}" if s.calibration_spread else ""
        t.append(f"  · {s.entries} jobs costed, calibration on {s.calibration_runs} run(s){spread}", style="dim")
        return t

    def on_show(self) -> None:
        self.shown()

    def shown(self) -> None:
        """Shown again: draw what came while hidden, and bring a stale summary up to date. (Called
        on Textual's Show event, and by the app when its tab opens: Show is not always sent when
        an ancestor's display changes.)"""
        self._draw_tenants()
        if self._pace_timer is not None:  # held back at the hidden pace: now at the shown one
            self._pace_timer.stop()
            self._pace_timer = None
            self._next_update()
        if self._stale:
            self._stale = False
            self.load()  # an update from what is kept: the money in flight brought up to date

    def _draw_tenants(self) -> None:
        """Spend by tenant, by key: a row is rebuilt only when its numbers changed (compared as
        plain values; 10,000 tenants' `Text` cells took hundreds of ms to build on every update)."""
        rows, self._tenants_pending = self._tenants_pending, None
        if rows is None:
            return
        table = self.query_one("#ledger-tenants", KeyedTable)
        wanted = {r.tenant: r for r in rows}
        with self.app.batch_update():
            table.drop_rows_except(wanted)
            present = {k.value for k in table.rows}
            for r in rows:
                values = (r.tenant, str(r.runs), f"${r.month_usd:,.2f}", f"${r.total_usd:,.2f}",
                          f"${r.wasted_usd:,.2f}")
                table.put_row(r.tenant, values, partial(_tenant_cells, values), shown=r.tenant in present)
            if [r.key.value for r in table.ordered_rows] != [r.tenant for r in rows]:
                # the summary's order: biggest spender this month first
                order = {clean_log_line(r.tenant): i for i, r in enumerate(rows)}
                table.sort("tenant", key=lambda cell: order.get(cell.plain, len(order)))

    # -- the what-if explorer

    def action_budget_undo(self) -> None:
        from console.ui.actions import oncall

        oncall.budget_undo(self.app)

    def action_whatif(self) -> None:
        from console.ui.screens.whatif import WhatIfScreen

        self.app.push_screen(
            WhatIfScreen(self.cfg, ledger=self.ledger, scheduled_jobs=self.scheduled, prices=self.prices)
        )
