"""The jobs pane's table: one row per job, updated in place by job id.

Rows are never rebuilt: a refresh updates changed cells, adds new jobs and removes vanished ones,
then re-sorts (active jobs first, newest first) and puts the cursor back on the job it was on.
Whenever the highlighted job changes, the table posts :class:`JobsTable.JobSelected` — the hook
the log pane, the metrics panel and the cost widgets listen to.

The table holds the newest few hundred jobs; the history is its `source` (the console's local
cache, `console.cache.JobCache`), which answers the filter over every job and the next page when
the cursor or the scroll nears the last row. Without a source it shows what it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from rich.text import Text
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable

from console.inputs import format_duration
from console.jobs import JobFilter, JobRow, clean_log_line, format_clock, format_cost
from console.kinds import KIND_SHORT
from console.stages import CANCELED, COMPLETED, DELETED, ERROR, RUNNING, SCHEDULING
from console.ui.widgets.keyed_table import KeyedTable

if TYPE_CHECKING:
    from console.ui.oncall_marks import OnCallMark

STAGE_STYLES = {
    RUNNING: "bold green",
    SCHEDULING: "yellow",
    COMPLETED: "dim",
    ERROR: "bold red",
    CANCELED: "magenta",
    DELETED: "dim",
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
MAX_ROWS = 500
"""Rows the table holds before the user pages further: every active job and the newest finished
ones up to this many (a DataTable of 10,000 rows costs seconds to build and hundreds of MB)."""
PAGE_ROWS = 500
"""Rows read from the source each time the cursor or the scroll nears the last row."""
PAGE_MARGIN = 20
"""How close to the last row the cursor gets before the next page is read."""


def kind_cell(row: JobRow) -> str:
    """What the job trains, short: `sft`, `dpo`, and an embedding run with its encoder as its
    `encoder` label says (`emb cross`; the narrow column shows `emb`, the detail line all of it)."""
    short = KIND_SHORT.get(row.kind, row.kind)
    encoder = row.labels.get("encoder") if row.kind == "embedding" else None
    return f"{short} {encoder}" if encoder else short


class RowSource(Protocol):
    """Where the rows beyond the table come from (the local cache of every job)."""

    def page(self, job_filter: JobFilter | None = None, *, limit: int = ..., after: JobRow | None = None
             ) -> list[JobRow]: ...

    def count(self, job_filter: JobFilter | None = None) -> int: ...


def short_id(job_id: str) -> str:
    """The random tail of a job id (HF ids start with a timestamp, so heads look alike)."""
    return job_id[-8:]


def plain(value: object, style: str = "") -> Text:
    """Untrusted text as a Text (DataTable would read a str as markup)."""
    return Text(clean_log_line(str(value)), style=style, no_wrap=True, overflow="ellipsis")


def order(rows: Sequence[JobRow]) -> list[JobRow]:
    """The table's order: running, then queued, then finished jobs; newest first within each (the
    same order as the source's pages: ties by id, highest first)."""
    by_id = sorted(rows, key=lambda r: r.id, reverse=True)
    return sorted(by_id, key=_rank_and_age)


def _rank_and_age(row: JobRow) -> tuple[int, float]:
    created = row.created_at.timestamp() if row.created_at else 0.0
    return ({RUNNING: 0, SCHEDULING: 1}.get(row.stage, 2), -created)


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

    def __init__(self, *, id: str | None = None, source: RowSource | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self.source = source
        self.rows_by_id: dict[str, JobRow] = {}
        self.job_filter = JobFilter()
        self.column_keys = tuple(key for key, _, _ in COLUMNS)
        self.max_rows = MAX_ROWS
        """Rows the table holds (grows by a page each time the user reaches the last row)."""
        self.matching = 0
        """Jobs that match the filter (the table shows the first `max_rows` of them)."""
        self.total = 0
        """Jobs known in all (the source's count)."""
        self._now: datetime | None = None
        self.oncall: dict[str, OnCallMark] = {}
        """Running job id -> what the on-call watcher says of it (`show_oncall`)."""
        self.reasons: dict[str, tuple[str, str]] = {}
        """Failed job id -> why, (a word or two for the Stage cell, the whole reason for the
        Message cell) (`show_reasons`)."""

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    @property
    def selected_job_id(self) -> str | None:
        return self._selected

    @property
    def selected_row(self) -> JobRow | None:
        return self.rows_by_id.get(self._selected) if self._selected else None

    def _mark(self, row: JobRow) -> OnCallMark | None:
        return self.oncall.get(row.id) if row.active else None

    def _values(self, row: JobRow, now: datetime) -> tuple[str, ...]:
        ran = format_duration(row.running_seconds) if row.running_seconds is not None else "-"
        mark = self._mark(row)
        message = row.message or ""
        stage = mark.stage if mark is not None and mark.stage else row.stage
        if mark is not None:
            message = f"{mark.line} | {message}" if message else mark.line
        elif row.stage == ERROR and row.id in self.reasons:
            stage, why = self.reasons[row.id]
            message = f"{why} | {message}" if message and message not in why else why
        if row.labels.get("retry_of") and (retry := _retry_words(row.labels)):  # a resumed run (`oncall.retry`)
            message = f"{retry} of {row.labels.get('retry_of')}" + (f" | {message}" if message else "")
        return (
            short_id(row.id),
            row.tenant,
            kind_cell(row),
            stage,
            row.flavor,
            format_clock(row.started_at or row.created_at, now),
            ran,
            format_cost(row.cost_usd),
            message,
        )

    def _render(self, row: JobRow, values: tuple[str, ...]) -> tuple[Text, ...]:
        mark = self._mark(row)
        stage_style = mark.style if mark is not None and mark.stage else STAGE_STYLES.get(row.stage, "")
        message_style = "red" if row.stage == ERROR else (mark.style or "dim") if mark is not None else "dim"
        styles = ("", "", "", stage_style, "", "", "", "", message_style)
        return tuple(plain(v, style) for v, style in zip(values, styles, strict=True))

    def _put(self, row: JobRow, now: datetime, shown: bool) -> bool:
        values = self._values(row, now)
        return self.put_row(row.id, values, lambda: self._render(row, values), shown=shown)

    def show_oncall(self, marks: dict[str, OnCallMark]) -> None:
        """Mark the active jobs as the latest on-call pass says (a stall, a timeout to come, a long
        wait in SCHEDULING)."""
        changed = {k for k in set(marks) | set(self.oncall) if marks.get(k) != self.oncall.get(k)}
        self.oncall = dict(marks)
        now = self._now or datetime.now(UTC)
        with self.app.batch_update():
            for job_id in changed:
                row = self.rows_by_id.get(job_id)
                if row is not None:
                    self._put(row, now, True)

    def show_reasons(self, reasons: dict[str, tuple[str, str]]) -> None:
        """Say why these failed jobs failed: a word or two in the Stage cell (`TIMEOUT`,
        `FAIL oom`, `exit 137`: legible at 80 columns), the whole reason in the Message cell."""
        new = {k: v for k, v in reasons.items() if self.reasons.get(k) != v}
        if not new:
            return
        self.reasons.update(new)
        now = self._now or datetime.now(UTC)
        with self.app.batch_update():
            for job_id in new:
                row = self.rows_by_id.get(job_id)
                if row is not None:
                    self._put(row, now, True)

    def oncall_mark(self, job_id: str) -> OnCallMark | None:
        """The mark a running job's row shows (None when it shows none)."""
        row = self.rows_by_id.get(job_id)
        return self._mark(row) if row is not None else None

    def set_filter(self, job_filter: JobFilter, now: datetime) -> None:
        """Show the jobs `job_filter` matches: a new filter opens on its top row (its newest running
        job, else its newest job); clearing the filter keeps the job the cursor is on."""
        self.job_filter = job_filter
        self.max_rows = MAX_ROWS
        self.reload(now, first=not job_filter.empty)

    def reload(self, now: datetime, *, limit: int | None = None, first: bool = False) -> None:
        """Show the first `max_rows` matching jobs of the source (the table's whole picture);
        `limit`: fewer, for a first frame (the rest come with the next reload or a scroll);
        `first`: the cursor goes to the top row (else it stays on its job)."""
        if self.source is None:
            self.update_rows(list(self.rows_by_id.values()), now, first=first)
            return
        rows = self.source.page(self.job_filter, limit=min(limit or self.max_rows, self.max_rows))
        self.total = self.source.count()
        self.matching = self.total if self.job_filter.empty else self.source.count(self.job_filter)
        self._show(rows, now, first=first)

    def update_rows(self, rows: list[JobRow], now: datetime, *, first: bool = False) -> None:
        """Make the table show `rows` (filtered), by key: update, add, remove, re-sort."""
        matching = order([r for r in rows if self.job_filter.matches(r)])
        self.matching = len(matching)
        self.total = len(rows)
        self._show(matching[: max(self.max_rows, sum(1 for r in matching if r.active))], now, first=first)

    def _show(self, wanted: list[JobRow], now: datetime, *, first: bool = False) -> None:
        self._now = now
        wanted_ids = {r.id for r in wanted}
        keep = None if first else self.key_at_cursor()
        with self.app.batch_update():
            for job_id in self.drop_rows_except(wanted_ids):
                del self.rows_by_id[job_id]
            order_changed = False
            for row in wanted:
                held = self.rows_by_id.get(row.id)
                if held == row:
                    row = held  # a reload's copy of an unchanged row is not kept: the one held stays
                order_changed |= self._put(row, now, held is not None)
                self.rows_by_id[row.id] = row
            current = [r.key.value for r in self.ordered_rows]  # as shown, not as added
            desired = [r.id for r in wanted]
            if order_changed or current != desired:
                self._sort_by_rank({job_id: i for i, job_id in enumerate(desired)})
            self._cursor_on(keep)
        self.announce_selection()

    def apply_changes(self, changed: list[JobRow], gone: list[str], now: datetime) -> None:
        """Like `update_rows`, for a refresh that brought only `changed` rows and `gone` ids.

        Work is proportional to the change, not to the history: unchanged rows are not touched,
        and the table is re-sorted only when a row arrives or moves between active and finished.
        The cursor stays on its job wherever the re-sort puts it.
        """
        self._now = now
        keep = self.key_at_cursor()
        reorder = False
        arrived = bool(gone)
        with self.app.batch_update():
            for job_id in gone:
                if job_id in self.rows_by_id:
                    self.drop_row(job_id)
                    del self.rows_by_id[job_id]
            for row in changed:
                shown = row.id in self.rows_by_id
                if not self.job_filter.matches(row):
                    if shown:
                        self.drop_row(row.id)
                        del self.rows_by_id[row.id]
                        arrived = True
                    continue
                if shown and _rank_and_age(self.rows_by_id[row.id])[0] != _rank_and_age(row)[0]:
                    reorder = True
                added = self._put(row, now, shown)
                reorder |= added
                arrived |= added
                self.rows_by_id[row.id] = row
            if reorder:
                ordered = order(list(self.rows_by_id.values()))
                for row in ordered[self.max_rows :]:
                    if not row.active:  # the oldest finished rows make room for new jobs
                        self.drop_row(row.id)
                        del self.rows_by_id[row.id]
                ordered = [r for r in ordered if r.id in self.rows_by_id]
                self._sort_by_rank({r.id: i for i, r in enumerate(ordered)})
            if arrived:
                self._recount()
            self._cursor_on(keep)
        self.announce_selection()

    def _cursor_on(self, key: str | None) -> None:
        """The cursor on job `key` wherever it is now; on the top row when there is no such job
        (none was selected, or it left the table: filtered out, or deleted)."""
        if key is not None and key in self.rows_by_id:
            self.move_cursor_to(key)
        elif self.row_count:
            self.move_cursor(row=0, animate=False)

    def _recount(self) -> None:
        if self.source is None:
            self.total = max(self.total, len(self.rows_by_id))
            self.matching = max(self.matching, len(self.rows_by_id))
            return
        self.total = self.source.count()
        self.matching = self.total if self.job_filter.empty else self.source.count(self.job_filter)

    # -- paging ------------------------------------------------------------------------------

    @property
    def more(self) -> bool:
        """The source holds matching jobs the table does not show yet."""
        return self.source is not None and self.matching > self.row_count

    def load_more(self) -> int:
        """Read the next page of matching jobs from the source; returns how many rows came."""
        if not self.more or self.source is None or not self.row_count:
            return 0
        last_key = self.coordinate_to_cell_key(Coordinate(self.row_count - 1, 0)).row_key.value
        last = self.rows_by_id.get(last_key or "")
        if last is None:
            return 0
        rows = [r for r in self.source.page(self.job_filter, limit=PAGE_ROWS, after=last)
                if r.id not in self.rows_by_id]
        if not rows:
            return 0
        now = self._now or datetime.now(UTC)
        self.max_rows += len(rows)
        with self.app.batch_update():
            for row in rows:  # they come after every row shown: appended in order, no re-sort
                self._put(row, now, False)
                self.rows_by_id[row.id] = row
        return len(rows)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        # (KeyedTable's handler, which announces the selection, runs too)
        if self.cursor_row >= self.row_count - PAGE_MARGIN:
            self.load_more()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new >= self.max_scroll_y - PAGE_MARGIN and self.more:
            self.call_later(self.load_more)

    def _sort_by_rank(self, rank: dict[str, int]) -> None:
        # DataTable.sort orders by column values; order by our own rank through the id column.
        by_short = {short_id(job_id): r for job_id, r in rank.items()}
        self.sort("id", key=lambda cell: by_short.get(cell.plain, 1 << 30))

    def detail_text(self, key: str, values: tuple[str, ...]) -> Text:
        """`cc33wayn wayne sft exit 1 on t4-small, ran 36s, $0.007: bad_data: ...`: the job's
        row whole, its Message cell (the failure reason, the on-call forecast with the cost at
        the timeout, the job's message) included, wrapped."""
        job_id, tenant, kind, stage, flavor, _started, ran, cost, message = values
        row = self.rows_by_id.get(key)
        mark = self._mark(row) if row is not None else None
        stage_style = mark.style if mark is not None and mark.stage else STAGE_STYLES.get(row.stage if row else "", "")
        text = Text(no_wrap=False, overflow="fold")
        text.append(clean_log_line(f"{job_id} {tenant} {kind} "), style="bold")
        text.append(clean_log_line(stage), style=stage_style)
        text.append(clean_log_line(f" on {flavor}, ran {ran}, {cost}"))
        if message:
            text.append(": ")
            text.append(clean_log_line(message), style="red" if row is not None and row.stage == ERROR else "")
        return text

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


def _retry_words(labels: dict[str, str]) -> str | None:
    from console.jobspec import retry_words  # the spec module loads with the first retried run

    return retry_words(labels)
