"""The fleet pane's table: one row per tenant, derived from HF Jobs (see `console.fleet`).

Columns: tenant, base model, flavor, schedule (in words) and next run, last run's stage and age,
last loss, where the adapter went, $/run and $/month. Tenants whose last run failed, whose schedule
is suspended or whose adapter is older than its cadence are flagged in the first column and
coloured. Rows update in place by tenant id; :class:`FleetTable.TenantSelected` is posted when the
highlighted tenant changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from console.fleet import TenantRow
from console.jobs import format_age, format_clock, format_cost
from console.ui.widgets.jobs_table import STAGE_STYLES, plain
from console.ui.widgets.keyed_table import KeyedTable

COLUMNS = (
    ("tenant", "Tenant", 10),
    ("last", "Last run", 10),
    ("age", "Age", 6),
    ("loss", "Loss", 12),
    ("next", "Next run", 9),
    ("per_run", "$/run", 6),
    ("monthly", "$/mo", 7),
    ("schedule", "Schedule", 28),
    ("flavor", "Flavor", 10),
    ("model", "Base model", 14),
    ("adapter", "Adapter", 24),
)


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

    @dataclass
    class TenantSelected(Message):
        tenant: str | None
        row: TenantRow | None

    @dataclass
    class TenantOpened(Message):
        """Enter on a tenant: show its jobs."""

        tenant: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row")
        self.column_keys = tuple(key for key, _, _ in COLUMNS)
        self.rows_by_tenant: dict[str, TenantRow] = {}

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    @property
    def selected_row(self) -> TenantRow | None:
        return self.rows_by_tenant.get(self._selected) if self._selected else None

    def _cells_for(self, row: TenantRow, now: datetime) -> tuple[Text, ...]:
        mark, style = _flag(row)
        tenant = Text(no_wrap=True, overflow="ellipsis")
        tenant.append(mark, style=style)
        tenant.append(plain(row.tenant, style if row.failed or row.stale else ""))
        if row.schedule:
            words = row.schedule_words or row.schedule
            schedule = plain(f"{row.schedule} ({words})", "yellow" if row.suspended else "")
        else:
            schedule = plain("ad hoc", "dim")
        if row.suspended:
            next_run = plain("suspended", "yellow")
        else:
            next_run = plain(format_clock(row.next_run, now) if row.next_run else "-")
        loss = "-" if row.last_loss is None else f"{row.last_loss:.3g}"
        if row.loss_trend:
            loss = f"{loss} {row.loss_trend}"
        adapter = row.adapter or "-"
        if len(adapter) > 24:
            adapter = "…" + adapter[-23:]
        return (
            tenant,
            plain(row.last_stage or "never", STAGE_STYLES.get(row.last_stage or "", "dim")),
            plain(
                format_age(row.last_at, now).removesuffix(" ago"),
                "bold yellow" if row.stale else "",
            ),
            plain(loss),
            next_run,
            plain(format_cost(row.cost_per_run)),
            plain(format_cost(row.monthly_usd)),
            schedule,
            plain(row.flavor or "-"),
            plain(row.base_model or "-"),
            plain(adapter),
        )

    def update_rows(self, rows: list[TenantRow], now: datetime) -> None:
        wanted = {r.tenant: r for r in rows}
        keep = self._selected
        with self.app.batch_update():
            for tenant in self.drop_rows_except(wanted):
                del self.rows_by_tenant[tenant]
            added = False
            for row in rows:
                shown = row.tenant in self.rows_by_tenant
                added |= self.put_row(row.tenant, self._cells_for(row, now), shown=shown)
                self.rows_by_tenant[row.tenant] = row
            if added:
                self.sort("tenant", key=lambda cell: cell.plain[1:])
            self.move_cursor_to(keep)
        self.announce_selection()

    def refresh_rows(self, rows: list[TenantRow], now: datetime) -> None:
        """Redraw the changed cells of these tenants only (e.g. when an outcome arrives)."""
        with self.app.batch_update():
            for row in rows:
                if row.tenant not in self.rows_by_tenant:
                    continue
                self.put_row(row.tenant, self._cells_for(row, now), shown=True)
                self.rows_by_tenant[row.tenant] = row

    def selection_message(self, key: str | None) -> TenantSelected:
        return self.TenantSelected(key, self.rows_by_tenant.get(key or ""))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value:
            self.post_message(self.TenantOpened(event.row_key.value))
