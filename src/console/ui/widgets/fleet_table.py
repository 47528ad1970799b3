"""The fleet pane's table: one row per tenant, derived from HF Jobs (see `console.fleet`).

Columns: tenant, last run's stage and age, last loss, next run, $/run and $/month, kind (what the
row trains: `sft`, `dpo`, `kto`, `emb` with its encoder, `bld` the builder model with `full` or
`lora`; after the money, so 80 columns still show $/month), schedule (in words), flavor, base model,
where the adapter went, and the live adapter version (`ui.live_versions`). Tenants whose last run failed, whose
schedule is suspended or whose adapter is older than its cadence are flagged in the first column and
coloured; a schedule whose runs failed `notify.schedule_failures` times in a row (the on-call
pass's `failing`, :meth:`FleetTable.show_failing`) leads its Schedule cell with `FAIL 3x`.
Rows update in place by tenant id; :class:`FleetTable.TenantSelected` is posted when the
highlighted tenant changes. The builder model is a row of its own, after the tenants (as
`console fleet show` lists it).

`J` shows the fleet as it was at a past time (:meth:`FleetTable.show_past`, rows from
`console.fleet.past`): the table is marked (`as of 03:00 UTC` in its border, the `-past` style),
ages count to that time, the Live cells are the versions the console saw live then, and the
present's news is kept but not drawn until `esc` (:meth:`FleetTable.show_present`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from rich.text import Text
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable

from console.fleet import TenantRow
from console.jobs import clean_log_line, format_age, format_clock, format_cost, format_month
from console.ui import keys
from console.ui.widgets.jobs_table import KIND_SHORT, STAGE_STYLES, plain
from console.ui.widgets.keyed_table import KeyedTable

AGE_TICK_SECONDS = 1.0
"""How often the rows on screen are redrawn against the clock (their Age column)."""
ADAPTER_WIDTH = 24
NOT_SEEN = "not seen"
"""The Live cell of the past (`show_past`) where the console had not read the tenant's live tag by then."""
"""Columns of the Adapter cell."""

COLUMNS = (
    ("tenant", "Tenant", 10),
    ("last", "Last run", 10),
    ("age", "Age", 6),
    ("loss", "Loss", 12),
    ("next", "Next run", 9),
    ("per_run", "$/run", 6),
    ("monthly", "$/mo", 7),
    ("kind", "Kind", 9),
    ("schedule", "Schedule", 28),
    ("flavor", "Flavor", 10),
    ("model", "Base model", 14),
    ("adapter", "Adapter", ADAPTER_WIDTH),
    ("live", "Live", 20),
)


def kind_cell(row: TenantRow) -> str:
    """What the row trains, short: `sft`, `dpo`, `kto`, `emb cross`, `bld full`."""
    short = KIND_SHORT.get(row.kind, row.kind)
    req = row.request
    if row.kind == "embedding":
        return f"{short} {(req.encoder if req else None) or 'bi'}"
    if row.is_builder:
        return f"{short} {'full' if req is not None and req.full else 'lora'}"
    return short


_FAILING = re.compile(r"FAIL \d+x ")
"""How a Schedule cell of a schedule failing in a row begins."""
PREFLIGHT_FAILED = "preflight FAIL "
"""How a Schedule cell begins when the tenant's last dataset preflight failed (`TenantRow.preflight_failed`)."""


def adapter_name(adapter: str | None, width: int = ADAPTER_WIDTH) -> str:
    """Where a tenant's weights went, by name: the Hub repo id of `hf://org/name`, the run's folder
    of a local path (`/data/artifacts/acme-6b10...` -> `acme-6b10...`); cut at the end, so the
    name's start (the tenant, the org) stays; `-` when no run said."""
    if not adapter:
        return "-"
    name = adapter.removeprefix("hf://") if adapter.startswith("hf://") else adapter.rstrip("/").rsplit("/", 1)[-1]
    return name if len(name) <= width else name[: width - 1] + "…"


def _flag(row: TenantRow) -> tuple[str, str]:
    if row.failed:
        return "!", "bold red"
    if row.suspended:
        return "=", "yellow"
    if row.stale:
        return "~", "bold yellow"
    return " ", ""


class FleetTable(KeyedTable):
    """Tenants, their schedules, last runs and costs."""

    BINDINGS = keys.FLEET_TABLE

    @dataclass
    class TenantSelected(Message):
        tenant: str | None
        row: TenantRow | None

    @dataclass
    class TenantOpened(Message):
        """Enter on a tenant: show its jobs."""

        tenant: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", fixed_columns=1)  # the Tenant stays as it scrolls
        self.column_keys = tuple(key for key, _, _ in COLUMNS)
        self.rows_by_tenant: dict[str, TenantRow] = {}
        self._tenant_of_job: dict[str, str] = {}
        """Each tenant's last run (job id -> tenant): which rows a job's news is for."""
        self._pending: tuple[list[TenantRow], datetime] | None = None
        """Rows given while the table was hidden, drawn when it shows."""
        self.reasons: dict[str, str] = {}
        """Failed job id -> why, in a word or two (`show_reasons`): the Last run cell of a tenant
        whose last run failed says it instead of ERROR."""
        self._now: datetime | None = None
        self.failing: dict[str, int] = {}
        """Scheduled job id -> its runs failed in a row, for the schedules the on-call pass flags."""
        self.live: dict[str, tuple[str, datetime | None]] = {}
        """tenant -> its live adapter version (`a1b2c3d4 PASS`, or `-`) and when it was made
        (`show_live`, from `ui.live_versions`): the Live cell, its age counting up."""
        self.past: datetime | None = None
        """The time the table shows the fleet as of (`show_past`); None: the present."""
        self.past_live: dict[str, tuple[str, datetime | None]] = {}
        """tenant -> the Live cell the console saw last by `past`."""

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)
        self.set_interval(AGE_TICK_SECONDS, self.tick)

    def tick(self) -> None:
        """Redraw the rows on screen against the clock: the Age column counts up between
        refreshes (only the cells whose text changed are rewritten; rows scrolled away wait)."""
        if self._pending is not None or not self.row_count or not self.is_on_screen or self.past is not None:
            return
        clock = getattr(self.app, "clock", None)
        now = clock() if callable(clock) else datetime.now(UTC)
        top = int(self.scroll_offset.y)
        with self.app.batch_update():
            for i in range(top, min(self.row_count, top + self.size.height + 1)):
                tenant = self.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value
                row = self.rows_by_tenant.get(tenant or "")
                if row is not None:
                    self._put(row, now, True)

    @property
    def selected_row(self) -> TenantRow | None:
        return self.rows_by_tenant.get(self._selected) if self._selected else None

    def _values(self, row: TenantRow, now: datetime) -> tuple[str, ...]:
        """The row's cells as plain strings; each cell's style follows from them (the flag mark
        leads the tenant cell, the stage names itself, "suspended" and "ad hoc" say so)."""
        mark, _ = _flag(row)
        if row.schedule:
            schedule = f"{row.schedule} ({row.schedule_words or row.schedule})"
        else:
            schedule = "ad hoc"
        failures = None if self.past is not None else self.failing.get(row.scheduled_job_id or "")
        if failures:
            schedule = f"FAIL {failures}x {schedule}"
        if row.preflight_failed:
            schedule = PREFLIGHT_FAILED + schedule
        if row.suspended:
            next_run = "suspended"
        else:
            next_run = format_clock(row.next_run, now) if row.next_run else "-"
        loss = "-" if row.last_loss is None else f"{row.last_loss:.3g}"
        if row.loss_trend:
            loss = f"{loss} {row.loss_trend}"
        adapter = adapter_name(row.adapter)
        age = format_age(row.last_at, now).removesuffix(" ago")
        last = row.last_stage or "never"
        if row.failed and row.last_job_id in self.reasons:
            last = self.reasons[row.last_job_id]
        if row.last_retry:
            last = f"{last} ({row.last_retry})"
        if self.past is None:
            live, made = self.live.get(row.tenant, ("", None))
        else:  # the version the console saw live then; none kept: it did not look by then
            live, made = self.past_live.get(row.tenant, (NOT_SEEN, None))
        if made is not None:
            live = f"{live} {format_age(made, now).removesuffix(' ago')}"
        return (
            mark + row.tenant,
            last,
            ("~" if row.stale else "") + age,
            loss,
            next_run,
            format_cost(row.cost_per_run),
            format_month(row.monthly_usd, row.suspended),
            kind_cell(row),
            schedule + ("=" if row.suspended else ""),
            row.flavor or "-",
            row.base_model or "-",
            adapter,
            live,
        )

    @staticmethod
    def _render(row: TenantRow, values: tuple[str, ...]) -> tuple[Text, ...]:
        mark, style = _flag(row)
        tenant = Text(no_wrap=True, overflow="ellipsis")
        tenant.append(mark, style=style)
        tenant.append(plain(row.tenant, style if row.failed or row.stale else ""))
        schedule_text = values[8].removesuffix("=") if row.suspended else values[8]
        preflight = row.preflight_failed and schedule_text.startswith(PREFLIGHT_FAILED)
        schedule_text = schedule_text.removeprefix(PREFLIGHT_FAILED) if preflight else schedule_text
        failing = _FAILING.match(schedule_text)
        schedule = plain(schedule_text[failing.end():] if failing else schedule_text,
                         "yellow" if row.suspended else "" if row.schedule else "dim")
        if failing:
            schedule = Text.assemble(plain(failing.group(0), "bold red"), schedule)
        if preflight:
            schedule = Text.assemble(plain(PREFLIGHT_FAILED, "bold red"), schedule)
        return (
            tenant,
            plain(values[1], STAGE_STYLES.get(row.last_stage or "", "dim")),
            plain(values[2].removeprefix("~") if row.stale else values[2], "bold yellow" if row.stale else ""),
            plain(values[3]),
            plain(values[4], "yellow" if row.suspended else ""),
            plain(values[5]),
            plain(values[6]),
            plain(values[7], "cyan" if row.is_builder else ""),
            schedule,
            plain(values[9]),
            plain(values[10]),
            plain(values[11]),
            plain(values[12], "bold red" if " FAIL" in values[12] or " partial" in values[12] else ""),
        )

    def _put(self, row: TenantRow, now: datetime, shown: bool) -> bool:
        self._now = now
        values = self._values(row, now)
        return self.put_row(row.tenant, values, lambda: self._render(row, values), shown=shown)

    def update_rows(self, rows: list[TenantRow], now: datetime) -> None:
        """Show the fleet `rows`. While the table is not on screen only the rows are kept; they
        are drawn when it shows (`draw_pending`): a hidden pane does no per-tenant rendering.
        While the past is shown the present is not drawn (`show_present` asks for it again)."""
        if self.past is None:
            self._take(rows, now)

    def _take(self, rows: list[TenantRow], now: datetime) -> None:
        self.rows_by_tenant = {r.tenant: r for r in rows}
        self._tenant_of_job = {r.last_job_id: r.tenant for r in rows if r.last_job_id}
        self._pending = (rows, now)
        if self.is_on_screen:
            self.draw_pending()

    def draw_pending(self) -> None:
        """Draw the rows kept while the table was hidden (nothing when there are none)."""
        if self._pending is None or not self.is_mounted:
            return
        rows, now = self._pending
        self._pending = None
        wanted = {r.tenant for r in rows}
        keep = self.key_at_cursor()  # the tenant the cursor is on stays, wherever the sort puts it
        with self.app.batch_update():
            self.drop_rows_except(wanted)
            added = False
            for row in rows:
                added |= self._put(row, now, row.tenant in self._cells)
            if added:  # by tenant, the builder model last
                builder = KIND_SHORT["builder"] + " "
                self.sort("kind", "tenant", key=lambda c: (c[0].plain.startswith(builder), c[1].plain[1:]))
            self.move_cursor_to(keep)
        self.announce_selection()

    def refresh_rows(self, rows: list[TenantRow], now: datetime) -> None:
        """Redraw the changed cells of these tenants only (e.g. when an outcome arrives)."""
        if self.past is not None:
            return
        for row in rows:
            if row.tenant in self.rows_by_tenant:
                self.rows_by_tenant[row.tenant] = row
                if row.last_job_id:
                    self._tenant_of_job[row.last_job_id] = row.tenant
        if self._pending is not None:
            return  # drawn with the rest when the table shows
        with self.app.batch_update():
            for row in rows:
                if row.tenant in self._cells:
                    self._put(row, now, True)

    def show_reasons(self, reasons: dict[str, str]) -> None:
        """Say why the tenants' last runs failed (failed job id -> a word or two)."""
        new = {k: v for k, v in reasons.items() if self.reasons.get(k) != v}
        if not new:
            return
        self.reasons.update(new)
        rows = [r for job_id in new if (r := self.rows_by_tenant.get(self._tenant_of_job.get(job_id, "")))
                is not None and r.failed and r.last_job_id == job_id]
        if rows:
            self.refresh_rows(rows, self._now or datetime.now(UTC))

    def show_failing(self, failing: dict[str, int]) -> None:
        """Flag the schedules whose runs failed in a row (scheduled job id -> how many), and clear
        the ones no longer failing."""
        if failing == self.failing:
            return
        changed = {k for k in set(failing) | set(self.failing) if failing.get(k) != self.failing.get(k)}
        self.failing = dict(failing)
        rows = [r for r in self.rows_by_tenant.values() if r.scheduled_job_id in changed]
        if rows and self.past is None:
            self.refresh_rows(rows, self._now or datetime.now(UTC))

    def show_live(self, live: dict[str, tuple[str, datetime | None]]) -> None:
        """Show these tenants' live adapter versions (tenant -> cell text and when it was made)."""
        new = {k: v for k, v in live.items() if self.live.get(k) != v}
        if not new:
            return
        self.live.update(new)
        rows = [r for t in new if (r := self.rows_by_tenant.get(t)) is not None]
        if rows and self.past is None:
            self.refresh_rows(rows, self._now or datetime.now(UTC))

    def show_past(self, rows: list[TenantRow], at: datetime, live: dict[str, tuple[str, datetime | None]]) -> None:
        """Show the fleet as it was at `at` (rows from `console.fleet.past`; `live`: the Live
        cells the console saw by then), marked as the past until `show_present`."""
        self.past = at
        self.past_live = dict(live)
        self.add_class("-past")
        self.border_title = f"as of {at:%Y-%m-%d %H:%M} UTC: the past, read-only (esc: now)"
        self._take(rows, at)

    def show_present(self, rows: list[TenantRow], now: datetime) -> None:
        """Back to the present: the rows the refresher holds now."""
        self.past = None
        self.past_live = {}
        self.remove_class("-past")
        self.border_title = None
        self.update_rows(rows, now)

    def action_past(self) -> None:
        """`J`: ask for a time and show the fleet as of then (`console.ui.past`)."""
        from console.ui.past import ask_past

        ask_past(self.app)

    def action_present(self) -> None:
        """`esc`: back to the present (nothing when it shows already)."""
        from console.ui.past import back_to_present

        back_to_present(self.app)

    def on_show(self) -> None:
        self.draw_pending()

    def shown(self) -> None:
        """The app opened the fleet tab (Textual's Show is not always sent when an ancestor's
        display changes): draw what came while hidden."""
        self.draw_pending()

    def detail_text(self, key: str, values: tuple[str, ...]) -> Text:
        """`acme: live a1b2c3d4 PASS 2h; last run COMPLETED 3h ago, loss 1.23; next Mon 10:00; ...`:
        the tenant's row whole (its live version first: the table's last column), wrapped."""
        (_tenant, last, age, loss, next_run, per_run, monthly, kind, schedule, flavor, model, adapter,
         live) = values
        row = self.rows_by_tenant.get(key)
        _, style = _flag(row) if row is not None else (" ", "")
        text = Text(no_wrap=False, overflow="fold")
        if self.past is not None:
            text.append(f"as of {self.past:%Y-%m-%d %H:%M} UTC: ", style="bold reverse yellow")
        text.append(clean_log_line(key), style=style or "bold")
        text.append(": live ")
        text.append(clean_log_line(live or "-"), style="bold red" if " FAIL" in live or " partial" in live else "bold")
        schedule = schedule.removesuffix("=")
        text.append(clean_log_line(
            f"; last run {last} {age.removeprefix('~')} ago, loss {loss}; next {next_run}; {schedule}; "
            f"{kind} on {flavor}, {per_run}/run, {monthly}/mo; base {model}; adapter {adapter}"))
        return text

    def selection_message(self, key: str | None) -> TenantSelected:
        return self.TenantSelected(key, self.rows_by_tenant.get(key or ""))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value:
            self.post_message(self.TenantOpened(event.row_key.value))
