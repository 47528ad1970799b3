"""The jobs pane's table: one row per job, updated in place by job id.

Rows are never rebuilt: a refresh updates changed cells, adds new jobs and removes vanished ones,
then re-sorts (active jobs first, newest first) and puts the cursor back on the job it was on.
Whenever the highlighted job changes, the table posts :class:`JobsTable.JobSelected` — the hook
the log pane, the metrics panel and the cost widgets listen to.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from console.costs import format_duration
from console.jobs import JobFilter, JobRow, clean_log_line, format_clock, format_cost, sort_key
from console.ui.widgets.keyed_table import KeyedTable

STAGE_STYLES = {
    "RUNNING": "bold green",
    "SCHEDULING": "yellow",
    "COMPLETED": "dim",
    "ERROR": "bold red",
    "CANCELED": "magenta",
    "DELETED": "dim",
}
COLUMNS = (
    ("id", "ID", 8),
    ("tenant", "Tenant", 9),
    ("kind", "Kind", 4),
    ("stage", "Stage", 10),
    ("flavor", "Flavor", 10),
    ("started", "Started", 9),
    ("running", "Ran", 6),
    ("cost", "Cost", 6),
    ("message", "Message", 60),
)
KIND_SHORT = {"validate": "val"}
MAX_ROWS = 500
"""Rows the table holds: every active job and the newest finished ones up to this many. The
filter searches every job; older ones are a filter away (a DataTable of 10,000 rows costs
seconds to build and hundreds of MB)."""


def short_id(job_id: str) -> str:
    """The random tail of a job id (HF ids start with a timestamp, so heads look alike)."""
    return job_id[-8:]


def plain(value: object, style: str = "") -> Text:
    """Untrusted text as a Text (DataTable would read a str as markup)."""
    return Text(clean_log_line(str(value)), style=style, no_wrap=True, overflow="ellipsis")


class JobsTable(KeyedTable):
    """Live list of jobs (id, tenant, kind, stage, flavor, started, running time, cost so far)."""

    @dataclass
    class JobSelected(Message):
        """The highlighted job changed (job_id None when the table is empty)."""

        job_id: str | None
        row: JobRow | None

    @dataclass
    class JobOpened(Message):
        """Enter on a job: show its logs."""

        job_id: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self.rows_by_id: dict[str, JobRow] = {}
        self.all_rows: dict[str, JobRow] = {}
        self.job_filter = JobFilter()
        self.column_keys = tuple(key for key, _, _ in COLUMNS)
        self.max_rows = MAX_ROWS
        self.matching = 0
        """Jobs that match the filter (the table shows at most `max_rows` of them)."""

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    @property
    def selected_job_id(self) -> str | None:
        return self._selected

    @property
    def selected_row(self) -> JobRow | None:
        return self.rows_by_id.get(self._selected) if self._selected else None

    def _cells_for(self, row: JobRow, now: datetime) -> tuple[Text, ...]:
        ran = format_duration(row.running_seconds) if row.running_seconds is not None else "-"
        return (
            plain(short_id(row.id)),
            plain(row.tenant),
            plain(KIND_SHORT.get(row.kind, row.kind)),
            plain(row.stage, STAGE_STYLES.get(row.stage, "")),
            plain(row.flavor),
            plain(format_clock(row.started_at or row.created_at, now)),
            plain(ran),
            plain(format_cost(row.cost_usd)),
            plain(row.message or "", "red" if row.stage == "ERROR" else "dim"),
        )

    def set_filter(self, job_filter: JobFilter, now: datetime) -> None:
        self.job_filter = job_filter
        self.update_rows(list(self.all_rows.values()), now)

    def update_rows(self, rows: list[JobRow], now: datetime) -> None:
        """Make the table show `rows` (filtered), by key: update, add, remove, re-sort."""
        self.all_rows = {r.id: r for r in rows}
        matching = sorted((r for r in rows if self.job_filter.matches(r)), key=sort_key)
        self.matching = len(matching)
        wanted = matching[: max(self.max_rows, sum(1 for r in matching if r.active))]
        wanted_ids = {r.id for r in wanted}
        keep = self._selected
        with self.app.batch_update():
            for job_id in self.drop_rows_except(wanted_ids):
                del self.rows_by_id[job_id]
            order_changed = False
            for row in wanted:
                shown = row.id in self.rows_by_id
                order_changed |= self.put_row(row.id, self._cells_for(row, now), shown=shown)
                self.rows_by_id[row.id] = row
            current = [k.value for k in self.rows]
            desired = [r.id for r in wanted]
            if order_changed or current != desired:
                rank = {job_id: i for i, job_id in enumerate(desired)}
                self._sort_by_rank(rank)
            self.move_cursor_to(keep)
        self.announce_selection()

    def apply_changes(self, changed: list[JobRow], gone: list[str], now: datetime) -> None:
        """Like `update_rows`, for a refresh that brought only `changed` rows and `gone` ids.

        Work is proportional to the change, not to the history: unchanged rows are not touched,
        and the table is re-sorted only when a row arrives or moves between active and finished.
        """
        for job_id in gone:
            self.all_rows.pop(job_id, None)
        keep = self._selected
        reorder = False
        with self.app.batch_update():
            for job_id in gone:
                if job_id in self.rows_by_id:
                    self.drop_row(job_id)
                    del self.rows_by_id[job_id]
            for row in changed:
                self.all_rows[row.id] = row
                shown = row.id in self.rows_by_id
                if not self.job_filter.matches(row):
                    if shown:
                        self.drop_row(row.id)
                        del self.rows_by_id[row.id]
                    continue
                if shown and sort_key(self.rows_by_id[row.id])[0] != sort_key(row)[0]:
                    reorder = True
                reorder |= self.put_row(row.id, self._cells_for(row, now), shown=shown)
                self.rows_by_id[row.id] = row
            if reorder:
                ordered = sorted(self.rows_by_id.values(), key=sort_key)
                for row in ordered[self.max_rows :]:
                    if not row.active:  # the oldest finished rows make room for new jobs
                        self.drop_row(row.id)
                        del self.rows_by_id[row.id]
                ordered = [r for r in ordered if r.id in self.rows_by_id]
                self._sort_by_rank({r.id: i for i, r in enumerate(ordered)})
            if changed or gone:
                self.matching = (
                    len(self.all_rows)
                    if self.job_filter.empty
                    else sum(1 for r in self.all_rows.values() if self.job_filter.matches(r))
                )
            self.move_cursor_to(keep)
        self.announce_selection()

    def _sort_by_rank(self, rank: dict[str, int]) -> None:
        # DataTable.sort orders by column values; order by our own rank through the id column.
        by_short = {short_id(job_id): r for job_id, r in rank.items()}
        self.sort("id", key=lambda cell: by_short.get(cell.plain, 1 << 30))

    def selection_message(self, key: str | None) -> JobSelected:
        return self.JobSelected(key, self.rows_by_id.get(key) if key else None)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value:
            self.post_message(self.JobOpened(event.row_key.value))

    def select_job(self, job_id: str) -> bool:
        if job_id not in self.rows_by_id:
            return False
        self.move_cursor(row=self.get_row_index(job_id), animate=False)
        self.announce_selection()
        return True
