"""ConsoleApp: the fleet, the jobs and their live logs, and the actions an on-call engineer needs.

Layout (legible at 80x24, no mouse needed)::

    status line: namespace  plan  backend endpoint  refreshed 5s ago | STALE
    [1 Fleet] [2 Jobs] [3 Costs] [4 Training]
      Fleet: FleetTable (one row per tenant, derived from HF Jobs)
      Jobs:  JobsPane (filter + JobsTable) over LogPane (+ #metrics-panel when wide)
      Costs: LedgerPane (spend, projection, budget; `$` opens the what-if)
      Training: Trackio curves of the selected job and the fleet's alerts
    footer: the keys

This module is composition, tab routing and the wiring of messages. The work lives beside it:

* `base.ConsoleBase` — what the parts share: the session (config, backend, clock, prices), the
  data, the job on screen, and what an action applies to (the selected job or tenant);
* `refresh.Refresher` — what the console knows (jobs, schedules, fleet rows) and the polling that
  keeps it fresh (thread workers, a re-armed one-shot timer);
* `job_view.JobView` — the job on screen: its log and metrics streams, details, Trackio run;
* `reasons.FailureReasons` — why each failed job failed (`console.oncall.why`), for the jobs
  table's ERROR rows and the fleet's failed tenants;
* `live.LiveVersions` — each tenant's adapter versions and the live one (`console.adapters`), for
  the fleet's Live column and the versions view (`v`);
* `watch.OnCallWatch` — the on-call passes (`console watch`'s detectors and notifications) in a
  thread worker; their forecasts and stalls mark the jobs table;
* `actions.jobs`, `actions.schedules`, `actions.shell`, `actions.oncall` — one function per
  action key;
* `keys` — every binding, as data (the footer, `?`, the command palette and docs/keys.md).

Every HfApi call runs in a thread worker; results come back as messages and failures are handled
in one `on_worker_state_changed`. Mutating actions are refused in read-only mode, and the ones
that cost money or kill work ask first.

Hooks for other panes: the JobsTable posts `JobsTable.JobSelected` (it bubbles to the app) and
the app mirrors it in the reactive `selected_job_id`; widgets elsewhere can
`self.watch(self.app, "selected_job_id", ...)`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from datetime import datetime
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import ComposeResult, SystemCommand
from textual.containers import Container, Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from console import collector, firstframe
from console.cache import snapshot
from console.config import Config
from console.jobs import Prefetch
from console.prices import PriceBook
from console.ui import keys, lastframe
from console.ui.base import ConsoleBase
from console.ui.refresh import REFRESH_SECONDS
from console.ui.widgets.footer import KeyFooter
from console.ui.widgets.job_details import JobDetails
from console.ui.widgets.jobs_pane import JobsPane
from console.ui.widgets.jobs_table import JobsTable
from console.ui.widgets.log_pane import DEFAULT_MAX_LINES, LogPane
from console.ui.widgets.status_line import StatusLine

if TYPE_CHECKING:
    from types import EllipsisType

    from console.ui.actions import ActionDone
    from console.ui.job_view import MetricsSample
    from console.ui.live_versions import LiveVersions, VersionsRead
    from console.ui.reasons import FailureReasons, ReasonsRead
    from console.ui.refresh_read import DataRefreshed, OutcomesFetched
    from console.ui.watch import OnCallChecked, OnCallWatch

TABS = ("fleet", "jobs", "costs", "training", "metrics")
"""The tabs, and the jobs tab's Trackio panel ("metrics"), mounted when first needed."""
HIDDEN_TABS_AFTER_FRESH_SECONDS = 0.3
HIDDEN_TABS_AFTER_SECONDS = 3.0
"""The tabs not on screen are mounted after the first fresh frame, or this long after the first
frame when no fresh data has come by then (or at once when the user opens one)."""


class _Action:
    """An action key's function, `console.ui.actions.<module>.<name>`, as a method of the app. Its
    module (and what it imports: the job specs, the cost model, the shipping of scripts) loads when
    the action is first looked up, not on the first frame's path."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __get__(self, app: Any, owner: type | None = None) -> Any:
        function = getattr(importlib.import_module(f"console.ui.actions.{self.module}"), self.name)
        return function if app is None else function.__get__(app, owner)


class MainScreen(Screen[None]):
    """The app's first screen. Textual restyles a screen and every widget on it each time it
    resumes; on the first, as the app starts, each of them was styled as it mounted a moment before
    (with the screen's breakpoint class and the focus it was born with: a focus change restyles
    what it touches on its own), so that pass would only style every widget a second time."""

    _resumed = False

    def post_message(self, message: Message) -> bool:
        if isinstance(message, events.ScreenResume) and not self._resumed:
            self._resumed = True
            message.refresh_styles = False
        return super().post_message(message)


class ConsoleApp(ConsoleBase):
    """The console TUI against one backend (a `console.backend.Backend` or the like)."""

    TITLE = "console"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    BINDINGS = keys.APP

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
        watch_seconds: float | None | EllipsisType = ...,
        first_watch_seconds: float | None = None,
    ) -> None:
        """`backend`: connected, or still connecting (see `console.ui.session`); `first_frame`:
        the first page of jobs, already being read (see `jobs.Prefetch`); `watch_seconds`: between
        on-call passes (None: none; `...`: `watch.WATCH_SECONDS`), the first one
        `first_watch_seconds` after start."""
        super().__init__(
            cfg,
            backend,
            clock=clock,
            refresh_seconds=refresh_seconds,
            prices=prices,
            stream_metrics=stream_metrics,
            first_frame=first_frame,
        )
        # the user's keys and looks (`[keys]`, `theme`): a bad entry is a ConfigError, before any frame
        self.user_keys = keys.user_keymap(cfg)
        """Binding id -> key(s), from the config's `[keys]` (the footer, `?` and ctrl+p show them)."""
        if self.user_keys:
            self.set_keymap(self.user_keys)
        if theme := keys.check_theme(cfg, self.available_themes):
            self.theme = theme
        self.log_max_lines = log_max_lines
        self.start_tab = start_tab
        self._mounted_tabs: set[str] = {"jobs", start_tab}
        self._watch_args: dict[str, Any] = {} if watch_seconds is ... else {"interval": watch_seconds}
        if first_watch_seconds is not None:
            self._watch_args["first_delay"] = first_watch_seconds

    # -- the parts the first frame draws nothing from: made on first use ---------------------------

    @cached_property
    def oncall(self) -> OnCallWatch:
        """The on-call passes (`watch.OnCallWatch`), started after the first frame."""
        from console.ui.watch import OnCallWatch

        return OnCallWatch(self, **self._watch_args)

    @cached_property
    def reasons(self) -> FailureReasons:
        """Why each failed job failed (`reasons.FailureReasons`), read after the first reads."""
        from console.ui.reasons import FailureReasons

        return FailureReasons(self)

    @cached_property
    def live(self) -> LiveVersions:
        """Each tenant's live adapter version (`live_versions.LiveVersions`), for the fleet tab."""
        from console.ui.live_versions import LiveVersions

        return LiveVersions(self)

    # -- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusLine(
            namespace=self.namespace,
            plan=self.cfg.plan,
            backend=self.backend_kind,
            endpoint=self.session.endpoint,
            read_only=self.read_only,
            clock=self.clock,
            id="status-line",
        )
        with TabbedContent(initial=self.start_tab, id="tabs"):
            with TabPane("1 Fleet", id="fleet"):
                if "fleet" in self._mounted_tabs:
                    yield from self._tab_content("fleet")
            with TabPane("2 Jobs", id="jobs"):
                yield JobsPane(self.clock, id="jobs-pane", source=self.session.cache)
                with Horizontal(id="log-row"):
                    yield LogPane(max_lines=self.log_max_lines, id="log-pane")
                    with Vertical(id="metrics-panel"):  # beside the log when wide
                        yield JobDetails(id="job-details")  # its Trackio curves: `_mount_tab`
            with TabPane("3 Costs", id="costs"):
                if "costs" in self._mounted_tabs:
                    yield from self._tab_content("costs")
            with TabPane("4 Training", id="training"):
                if "training" in self._mounted_tabs:
                    yield from self._tab_content("training")
        yield KeyFooter(compact=True)

    def _tab_content(self, tab: str) -> list[Any]:
        """What a tab other than the jobs tab holds (mounted when needed: `_mount_tab`)."""
        if tab == "fleet":
            from textual.widgets import Static

            from console.ui.widgets.fleet_table import FleetTable

            table = FleetTable(id="fleet-table")
            table.detail = Static(id="fleet-line")  # the highlighted tenant whole, under the table
            return [table, table.detail]
        if tab == "costs":
            from console.ui.widgets.costs import LedgerPane

            pane = LedgerPane(self.ledger, self.cfg, id="ledger-widget", records=False,
                              on_summary=partial(snapshot.save_ledger, self.session.cache),
                              hold=lambda: not self.refresher.synced, clock=self.clock)
            return [Container(pane, id="ledger-pane")]
        if tab == "metrics":
            from console.ui.widgets.training import MetricsPanel

            return [MetricsPanel(self.session.metrics_reader, self.cfg.trackio.project, id="trackio-metrics")]
        if tab == "training":
            from console.ui.widgets.training import AlertList, MetricsPanel

            project = self.cfg.trackio.project
            return [Vertical(
                MetricsPanel(self.session.metrics_reader, project, id="trackio-metrics-tab"),
                AlertList(self.session.metrics_reader, project, id="fleet-alerts"),
                id="training-pane",
            )]
        return []

    async def _mount_tab(self, tab: str) -> None:
        """Mount a hidden tab's widgets and give them what is known so far."""
        if tab in self._mounted_tabs or not self.is_running:
            return
        self._mounted_tabs.add(tab)
        where = self.query_one("#metrics-panel") if tab == "metrics" else self.query_one(f"#{tab}", TabPane)
        await where.mount_all(self._tab_content(tab))
        self._fill_tab(tab)

    def _fill_tab(self, tab: str) -> None:
        if tab == "fleet":
            self.refresher.load_snapshot_fleet()
            self.fleet_changed(list(self.refresher.fleet_rows.values()))
            self.reasons.show()
            self.live.want()
        elif tab == "costs":
            pane = self._ledger_pane()
            kept = snapshot.load_ledger(self.session.cache) if self.refresher.snapshot_at else None
            if pane is not None and kept is not None:
                pane.show_kept(kept)
            if pane is not None:
                # the jobs running now (their money in flight) and the schedules, as read before the
                # tab mounted: the next refresh may be seconds away, the next schedule read minutes
                refresher = self.refresher
                infos = refresher.job_infos
                active = [infos[i] for i in refresher.active_ids if i in infos]
                scheduled = list(refresher.scheduled.values()) if refresher.scheduled_read else None
                if active or scheduled is not None:
                    pane.ingest(active, scheduled, self.prices, full=False)
        elif tab in ("training", "metrics"):
            tables = self.query(JobsTable)
            if tables:  # none while the app is closing
                self.job_view.select(self.job_view.job_id, tables.first().selected_row)

    async def _mount_hidden_tabs(self) -> None:
        for tab in TABS:
            if not self.is_running:
                return
            try:
                await self._mount_tab(tab)
            except NoMatches:  # the app closed under the mount (a quit during start)
                return

    def on_mount(self) -> None:
        self.title = f"console - {self.namespace}"
        self.app_resume_signal.subscribe(self, self._repaint_after_resume)
        self.refresher.paint_snapshot()
        self.call_after_refresh(collector.resume)  # paused by the TUI's start until the first frame
        for tab in self._mounted_tabs - {"jobs"}:
            self._fill_tab(tab)
        # connect and read once the first frame is on screen; the other tabs come after that
        self.call_after_refresh(self.refresher.refresh)
        self.set_timer(HIDDEN_TABS_AFTER_SECONDS, self._mount_hidden_tabs)
        self.call_after_refresh(self._start_watch)
        if self.start_tab == "jobs":
            self.query_one(JobsTable).focus()
        else:
            self.fleet_table.focus()

    def _start_watch(self) -> None:
        self.oncall.start()

    def get_default_screen(self) -> Any:
        """The main screen, born as it is first drawn: with the width's breakpoint class (Textual
        adds it on the first resize, which restyles every widget), focusing the start tab's
        table (not the tab bar first, then the table: each focus change restyles what it moves
        between), and each widget styled once, as it mounts (`MainScreen`)."""
        screen = MainScreen(id="_default")
        screen.AUTO_FOCUS = "#jobs-table" if self.start_tab == "jobs" else "#fleet-table"
        width = self.size.width
        wanted = max((at, name) for at, name in self.HORIZONTAL_BREAKPOINTS if width >= at)[1]
        screen.update_classes({name: name == wanted for _, name in self.HORIZONTAL_BREAKPOINTS}, update=False)
        return screen

    def _repaint_after_resume(self, _app: object) -> None:
        """Back from `ctrl+z` / `fg`: the terminal shows the shell's screen; draw every cell again."""
        self.screen.refresh(repaint=True, layout=True)

    # -- the terminal (console.ui.driver) ------------------------------------------------------

    def get_driver_class(self) -> Any:
        """Textual's Linux driver with output that drops frames for a terminal that cannot keep up
        (TEXTUAL_DRIVER, when set, and other platforms keep Textual's choice)."""
        from textual import constants

        firstframe.took_over()  # the terminal as it was before the kept picture, for Textual to read
        if constants.DRIVER is not None or sys.platform == "win32":
            return super().get_driver_class()
        from console.ui.driver import ConsoleDriver

        return ConsoleDriver

    def _display(self, screen: Any, renderable: Any) -> None:
        # Textual writes one screen update here: marked as one frame, which the console's driver
        # may drop (and redraw whole later) rather than make the app wait for the terminal
        frame = getattr(self._driver, "frame", None)
        if frame is None:
            super()._display(screen, renderable)
            return
        with frame():
            super()._display(screen, renderable)

    # -- what the refresher hands over ------------------------------------------------------------

    def fleet_changed(self, rows: list[Any]) -> None:
        if "fleet" not in self._mounted_tabs:
            return  # drawn from refresher.fleet_rows when the tab mounts
        try:
            self.fleet_table.update_rows(rows, self.clock())
        except NoMatches:
            pass

    def _ledger_pane(self) -> Any:
        from console.ui.widgets.costs import LedgerPane

        try:
            return self.query_one(LedgerPane)
        except NoMatches:
            return None

    def ledger_news(self, message: DataRefreshed) -> None:
        pane = self._ledger_pane() if "costs" in self._mounted_tabs else None
        if pane is not None:
            pane.ingest(message.jobs, message.scheduled, self.prices, full=message.full, gone=message.gone)
        if message.full or self.refresher.refresh_count == 1:
            # after the fresh frame is on screen, and after the worker's next reads have started
            self.set_timer(HIDDEN_TABS_AFTER_FRESH_SECONDS, self._mount_hidden_tabs)

    # -- messages from workers and panes -------------------------------------------------------

    def _shutting_down(self) -> bool:
        """A worker's result can arrive while the app is closing and its panes are already gone
        (shutdown clears `is_running` first, then removes the widgets)."""
        return not self.is_running

    def on_data_refreshed(self, message: DataRefreshed) -> None:
        if not self._shutting_down():
            self.refresher.apply(message)
            self.reasons.want()
            self.live.want()

    def on_reasons_read(self, message: ReasonsRead) -> None:
        if not self._shutting_down():
            self.reasons.apply(message)

    def on_versions_read(self, message: VersionsRead) -> None:
        if not self._shutting_down():
            self.live.apply(message)

    def on_outcomes_fetched(self, message: OutcomesFetched) -> None:
        if not self._shutting_down():
            self.refresher.apply_outcomes(message)

    def on_metrics_sample(self, message: MetricsSample) -> None:
        if not self._shutting_down():
            self.job_view.show_sample(message)

    def on_on_call_checked(self, message: OnCallChecked) -> None:
        if not self._shutting_down():
            self.oncall.apply(message)

    def on_unmount(self) -> None:
        if "oncall" in self.__dict__:  # made (and started) after the first frame: a start quit sooner has none
            self.oncall.close()

    def on_action_done(self, message: ActionDone) -> None:
        self.notify(message.text, severity=message.severity, timeout=6)
        if message.refresh:
            self.refresher.refresh(scheduled=True)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state != WorkerState.ERROR or self._shutting_down():
            return
        error = describe_error(worker.error)
        if worker.group == "refresh":
            fatal = getattr(self.session.backend, "fatal", None)
            if fatal and not self.refresher.connected:
                self.exit(return_code=2)  # the backend cannot be reached at all: say why and leave
                return
            self.query_one(StatusLine).mark_failed(error)
            self.refresher.failed()
        elif worker.group == "actions":
            self.notify(f"{worker.description} failed: {error}", severity="error", timeout=8)
            self.refresher.refresh()
        elif worker.group == "logs":
            self.job_view.stream_failed(error)
        elif worker.group == "save":
            self.notify(f"Saving the log failed: {error}", severity="error")

    def on_jobs_table_job_selected(self, message: JobsTable.JobSelected) -> None:
        if self._shutting_down():
            return
        self.selected_job_id = message.job_id
        self.job_view.select(message.job_id, message.row)

    def on_jobs_table_job_opened(self, message: JobsTable.JobOpened) -> None:
        self.log_pane.log_widget.focus()

    async def on_fleet_table_tenant_opened(self, message: Any) -> None:
        await self.action_show_tab("jobs")
        self.query_one(JobsPane).set_filter(f"tenant:{message.tenant}")

    # -- navigation ------------------------------------------------------------------------

    async def action_show_tab(self, tab: str) -> None:
        await self._mount_tab(tab)
        self.query_one(TabbedContent).active = tab
        if tab == "jobs":
            self.jobs_table.focus()
        elif tab == "fleet":
            self.fleet_table.focus()

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """A tab opened (by a key or a click): mount its widgets if they are not yet, and let the
        panes that skipped drawing while hidden draw now."""
        if event.pane.id:
            await self._mount_tab(event.pane.id)
        for widget in event.pane.query("*"):
            shown = getattr(widget, "shown", None)
            if callable(shown):
                shown()

    async def action_filter(self) -> None:
        await self.action_show_tab("jobs")
        await self.query_one(JobsPane).open_filter()

    async def action_log(self, action: str) -> None:
        """Log-pane keys from anywhere on the jobs tab (`J` on the fleet tab: the fleet as it was)."""
        if action == "jump_time" and self.active_tab == "fleet":
            self.fleet_table.action_past()
            return
        if self.active_tab != "jobs":
            await self.action_show_tab("jobs")
        getattr(self.log_pane, f"action_{action}")()

    def action_help(self) -> None:
        from console.ui.screens.help import HelpScreen

        self.push_screen(HelpScreen())

    def action_whatif(self) -> None:
        from console.ui.screens.whatif import WhatIfScreen

        scheduled = list(self.refresher.scheduled.values())
        self.push_screen(WhatIfScreen(self.cfg, ledger=self.ledger, scheduled_jobs=scheduled, prices=self.prices))

    async def action_quit(self) -> None:
        lastframe.keep(self)  # the next start paints it before anything loads
        await super().action_quit()

    async def on_event(self, event: events.Event) -> None:
        # a key typed just after `q` reaches the app while it closes its screens: with no screen to
        # go to it is dropped, not a crash on the way out
        if isinstance(event, events.InputEvent) and not self.screen_stack:
            return
        await super().on_event(event)

    def action_refresh_now(self) -> None:
        self.refresher.refresh(full=True)

    def get_system_commands(self, screen: Any) -> Any:
        """The command palette lists every action of the key bindings, with its key."""
        yield from super().get_system_commands(screen)
        for binding in keys.APP:
            if binding.action == "quit":
                continue
            yield SystemCommand(
                f"{binding.description} ({keys.key_name(keys.effective_key(binding, self.user_keys))})",
                binding.tooltip or binding.description,
                partial(self.run_action, binding.action),
            )

    # -- actions (one function each, in console.ui.actions, imported on the first key) -----------

    action_submit = _Action("jobs", "submit")
    action_cancel_job = _Action("jobs", "cancel_job")
    action_rerun = _Action("jobs", "rerun")
    action_save_log = _Action("jobs", "save_log")
    action_reschedule = _Action("schedules", "reschedule")
    action_toggle_suspend = _Action("schedules", "toggle_suspend")
    action_trigger = _Action("schedules", "trigger")
    action_ssh = _Action("shell", "open_shell")
    action_expose_port = _Action("expose", "expose_port")
    action_incident = _Action("oncall", "incident")
    action_bulk = _Action("oncall", "bulk")
    action_versions = _Action("adapters", "versions")


def describe_error(error: BaseException | None) -> str:
    """One line for a failed call: the exception, and what the server said when it said more."""
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
