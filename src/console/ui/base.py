"""ConsoleBase: what the app's parts share — the session, the data, the job on screen, and what an
action applies to.

`ConsoleApp` (in `app.py`) adds the layout, the keys and the wiring of messages on top of this;
the action functions in `console.ui.actions` take a `ConsoleBase`, so they never import the app
module that imports them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.coordinate import Coordinate
from textual.css.query import NoMatches
from textual.widgets import TabbedContent

from console import paths
from console.config import Config, price_book
from console.jobs import JobRow, Prefetch, clean_log_line
from console.prices import PriceBook
from console.ui import timers
from console.ui.job_view import JobView
from console.ui.refresh import SNAPSHOT_ROWS, JobsChanged, Refresher
from console.ui.session import Session
from console.ui.widgets.jobs_pane import JobsPane
from console.ui.widgets.jobs_table import JobsTable
from console.ui.widgets.log_pane import LogPane
from console.ui.widgets.status_line import StatusLine

if TYPE_CHECKING:
    from console.fleet import TenantRow
    from console.ui.refresh_read import DataRefreshed
    from console.ui.widgets.fleet_table import FleetTable


class ConsoleBase(App[None]):
    CSS_PATH = str(paths.stylesheet_path())

    def __init__(
        self,
        cfg: Config,
        backend: Any,
        *,
        clock: Callable[[], datetime] | None,
        refresh_seconds: float,
        prices: PriceBook | None,
        stream_metrics: bool,
        first_frame: Prefetch | None,
    ) -> None:
        timers.guard()  # no timer of this process is armed with a negative or non-finite delay
        super().__init__()
        clock = clock or (lambda: datetime.now(UTC))
        self.session = Session(cfg, backend, clock, prices or price_book(cfg))
        self.read_only = bool(cfg.read_only)
        """Refuse every action that changes anything (`--read-only`, `read_only = true`)."""
        self._ledger: Any = None
        self._ledger_lock = threading.Lock()
        self.job_view = JobView(self, self.session, stream_metrics=stream_metrics)
        self.refresher = Refresher(
            self,
            self.session,
            interval=refresh_seconds,
            first_frame=first_frame,
            on_rows=self.job_view.row_refreshed,
            tenants_in_view=self.tenants_in_view,
            ledger=_LedgerHandle(self),
            on_fleet=self.fleet_changed,
            on_ledger=self.ledger_news,
            on_connected=self._backend_connected,
            on_jobs=self._jobs_changed,
            on_snapshot=self._snapshot_painted,
            on_fresh=self._fresh_data,
            on_outcomes=self._outcomes_read,
        )

    # what the refresher tells the screen (UI thread), routed to the widgets that show it

    def _jobs_changed(self, change: JobsChanged) -> None:
        pane = self.query_one(JobsPane)
        if change.reload:
            pane.reload()
        else:
            pane.apply_changes(change.rows, change.gone)

    def _snapshot_painted(self, at: datetime) -> None:
        self.query_one(JobsPane).reload(limit=SNAPSHOT_ROWS)
        self.query_one(StatusLine).mark_snapshot(at)

    def _fresh_data(self, at: datetime) -> None:
        line = self.query_one(StatusLine)
        line.set_endpoint(self.session.endpoint)  # where it answered: a restarted server's new port
        line.mark_ok(at)

    def _backend_connected(self, endpoint: str) -> None:
        try:
            self.query_one(StatusLine).set_endpoint(endpoint)
        except NoMatches:  # closing
            return
        self.job_view.connected()

    def _outcomes_read(self, rows: list[TenantRow]) -> None:
        from console.ui.widgets.fleet_table import FleetTable

        try:
            self.query_one(FleetTable).refresh_rows(rows, self.clock())
        except NoMatches:  # the fleet tab is not mounted yet: it draws the fleet rows when it is
            pass

    @property
    def ledger(self) -> Any:
        """The cost ledger (`console.ledger.Ledger`), opened on first use (after the first frame)."""
        with self._ledger_lock:  # the refresher's worker may ask first
            if self._ledger is None:
                from console.ledger import Ledger

                self._ledger = Ledger()
            return self._ledger

    def fleet_changed(self, rows: list[TenantRow]) -> None:
        """The refresher has new fleet rows (the fleet tab draws them when it is on screen)."""

    def ledger_news(self, message: DataRefreshed) -> None:
        """A refresh the costs pane may want (it records nothing: the refresher did)."""

    # the session's parts, as the app's own

    @property
    def cfg(self) -> Config:
        return self.session.cfg

    @property
    def namespace(self) -> str:
        return self.session.namespace

    @property
    def clock(self) -> Callable[[], datetime]:
        return self.session.clock

    @property
    def prices(self) -> PriceBook:
        return self.session.prices

    @property
    def api(self) -> Any:
        return self.session.api

    @property
    def backend_kind(self) -> str:
        return self.session.backend_kind

    # panes

    @property
    def log_pane(self) -> LogPane:
        return self.query_one(LogPane)

    @property
    def jobs_table(self) -> JobsTable:
        return self.query_one(JobsTable)

    @property
    def fleet_table(self) -> FleetTable:
        from console.ui.widgets.fleet_table import FleetTable

        return self.query_one(FleetTable)

    @property
    def active_tab(self) -> str:
        return self.query_one(TabbedContent).active

    # what an action applies to

    def selected_job(self) -> JobRow | None:
        """The job an action applies to: the highlighted one (fleet tab: the tenant's last)."""
        if self.active_tab == "fleet":
            tenant = self.fleet_table.selected_row
            if tenant and tenant.last_job_id:
                return self.refresher.job_row(tenant.last_job_id)
            return None
        return self.jobs_table.selected_row

    def selected_tenant(self) -> TenantRow | None:
        """The tenant an action applies to: the highlighted one (jobs tab: the selected job's)."""
        if self.active_tab == "fleet":
            return self.fleet_table.selected_row
        job = self.jobs_table.selected_row
        if job is None:
            return None
        return self.refresher.fleet_rows.get(job.tenant)

    def tenants_in_view(self) -> list[str]:
        """The tenants on screen: the fleet table's visible rows, or the selected job's tenant."""
        if self.active_tab == "fleet":
            table = self.fleet_table
            top = int(table.scroll_offset.y)
            return [
                table.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value
                for i in range(top, min(table.row_count, top + max(table.size.height, 50)))
            ]
        job = self.selected_job()
        return [job.tenant] if job is not None else []

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


class _LedgerHandle:
    """The app's ledger for the refresher's worker, opened when first needed (in that worker)."""

    def __init__(self, app: ConsoleBase) -> None:
        self._app = app

    def record_finished(self, jobs: Any, prices: Any = None) -> Any:
        return self._app.ledger.record_finished(jobs, prices)
