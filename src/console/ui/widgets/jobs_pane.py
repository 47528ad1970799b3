"""The jobs pane: a `/` filter box over the live jobs table.

The filter language is `console.jobs.parse_filter`: `tenant:acme stage:running,error
label:env=prod` plus free words; it applies as you type, enter keeps it, escape clears it (in
the box or on the table). A `key:` that is none of tenant / stage / label is said in red.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Static

from console.jobs import JobRow, clean_log_line, filter_problem, parse_filter
from console.ui import keys
from console.ui.widgets.jobs_table import JobsTable, RowSource
from console.ui.widgets.quiet import update_if_changed

if TYPE_CHECKING:
    from textual.widget import AwaitMount


class JobsPane(Vertical):
    BINDINGS = keys.JOBS_FILTER

    def __init__(
        self, clock: Callable[[], datetime], *, id: str | None = None, source: RowSource | None = None
    ) -> None:
        """`source`: every job, for the filter and for paging (see `JobsTable`)."""
        super().__init__(id=id)
        self.clock = clock
        self.source = source

    def compose(self) -> ComposeResult:
        # the filter box is mounted when first opened or set (`_filter_box`): the first frame does not draw it;
        # the filter's state line is born hidden (hidden after its mount, the pane would be laid out again)
        state = Static(id="jobs-filter-state")
        state.display = False
        yield state
        table = JobsTable(id="jobs-table", source=self.source)
        table.detail = Static(id="job-line")  # the highlighted job whole, under the table
        yield table
        yield table.detail

    def _box(self) -> Input | None:
        """The filter box, if it was ever opened or set."""
        boxes = self.query("#jobs-filter").results(Input)
        return next(iter(boxes), None)

    def _filter_box(self) -> tuple[Input, AwaitMount | None]:
        """The filter box, mounted (hidden) above the table the first time it is wanted, and the
        mount to await when it was just made."""
        box = self._box()
        if box is not None:
            return box, None
        box = Input(placeholder="filter: tenant:acme stage:running label:env=prod words", id="jobs-filter",
                    compact=True)
        box.display = False
        return box, self.mount(box, before="#jobs-filter-state")

    @property
    def table(self) -> JobsTable:
        return self.query_one(JobsTable)

    def update_rows(self, rows: list[JobRow]) -> None:
        self.table.update_rows(rows, self.clock())
        self._show_state()

    def reload(self, *, limit: int | None = None) -> None:
        """Show the newest jobs from the source again (after the whole list was read)."""
        self.table.reload(self.clock(), limit=limit)
        self._show_state()

    def apply_changes(self, changed: list[JobRow], gone: list[str]) -> None:
        """Only what changed since the last refresh (see `JobsTable.apply_changes`)."""
        self.table.apply_changes(changed, gone, self.clock())
        self._show_state()

    async def open_filter(self) -> None:
        box, mounting = self._filter_box()
        if mounting is not None:
            await mounting
        box.display = True
        box.focus()

    def set_filter(self, text: str) -> None:
        if text or self._box() is not None:
            self._filter_box()[0].value = text
        self.table.set_filter(parse_filter(text), self.clock())
        self._show_state()

    def _show_state(self) -> None:
        state = self.query_one("#jobs-filter-state", Static)
        table = self.table
        text = table.job_filter.text.strip()
        box = self._box()
        box_open = box is not None and box.display
        capped = table.matching > table.row_count
        state.display = (bool(text) or capped) and not box_open
        if not text and capped:
            update_if_changed(
                state,
                Text(
                    f" newest {table.row_count} of {table.total} jobs (more as you scroll)  / to filter",
                    style="dim",
                    no_wrap=True,
                    overflow="ellipsis",
                )
            )
        problem = filter_problem(text)
        if problem:  # said even while the box is open: the user is typing it
            state.display = True
            update_if_changed(
                state,
                Text(
                    clean_log_line(f" {problem}"),
                    style="bold red",
                    no_wrap=True,
                    overflow="ellipsis",
                ),
            )
        elif text:
            shown = table.row_count
            update_if_changed(
                state,
                Text(
                    clean_log_line(
                        f" filter: {text}  ({shown} of {table.matching} matching, "
                        f"{table.total} jobs)  / to edit, esc to clear"
                    ),
                    style="magenta",
                    no_wrap=True,
                    overflow="ellipsis",
                )
            )

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "jobs-filter":
            event.stop()
            self.table.set_filter(parse_filter(event.value), self.clock())
            self._show_state()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "jobs-filter":
            event.stop()
            self.action_close_filter()

    def action_close_filter(self) -> None:
        box = self._box()
        if box is not None:
            box.display = False
        self.table.focus()
        self._show_state()

    def action_clear_filter(self) -> None:
        """esc: clear the filter (all jobs again) and close the box; enter keeps it."""
        box = self._box()
        if self.table.job_filter.text.strip() or (box is not None and box.value):
            self.set_filter("")
        self.action_close_filter()
