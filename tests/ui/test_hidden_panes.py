"""Work proportional to what is visible and what changed: keyed tables build cells only for rows
whose values changed, and the fleet and costs panes draw per-tenant rows only while shown."""

from __future__ import annotations

from contextlib import asynccontextmanager
from datetime import UTC, datetime

from rich.text import Text
from tests.ledger.jobjson import job, tenant_labels
from tests.ui.conftest import wait_for
from textual.app import App, ComposeResult

from console.config import Config
from console.fleet import TenantRow
from console.ledger import Ledger
from console.ui.widgets.costs import LedgerPane
from console.ui.widgets.fleet_table import FleetTable
from console.ui.widgets.keyed_table import KeyedTable

NOW = datetime(2026, 12, 2, 10, tzinfo=UTC)


class Host(App):
    def __init__(self, *widgets) -> None:
        super().__init__()
        self.widgets = widgets

    def compose(self) -> ComposeResult:
        yield from self.widgets


async def _until(pilot, condition, tries: int = 300) -> None:
    """`wait_for` with a deadline of `tries` fiftieths of a second."""
    await wait_for(pilot, condition, timeout=tries * 0.02)


async def test_a_row_is_rendered_only_when_its_values_changed():
    table = KeyedTable(id="t")
    table.column_keys = ("a", "b")
    renders: list[str] = []

    def render(key, values):
        def make():
            renders.append(key)
            return [Text(v) for v in values]
        return make

    async with Host(table).run_test() as pilot:
        table.add_column("A", key="a")
        table.add_column("B", key="b")
        for key in ("x", "y"):
            table.put_row(key, (key, "1"), render(key, (key, "1")), shown=False)
        assert renders == ["x", "y"]
        for key in ("x", "y"):  # the same values again: nothing is built
            table.put_row(key, (key, "1"), render(key, (key, "1")), shown=True)
        assert renders == ["x", "y"]
        table.put_row("y", ("y", "2"), render("y", ("y", "2")), shown=True)
        assert renders == ["x", "y", "y"]
        await pilot.pause()
        assert table.get_cell("y", "b").plain == "2"


async def test_a_hidden_fleet_table_keeps_its_rows_and_draws_them_when_shown():
    fleet = FleetTable(id="fleet")
    async with Host(fleet).run_test(size=(100, 20)) as pilot:
        fleet.display = False
        await _until(pilot, lambda: not fleet.is_on_screen)
        rows = [TenantRow(tenant=f"t{i:04d}", schedule="0 3 * * 1") for i in range(300)]
        fleet.update_rows(rows, NOW)
        assert len(fleet.rows_by_tenant) == 300 and fleet.row_count == 0  # nothing drawn
        fleet.display = True
        fleet.shown()
        await _until(pilot, lambda: fleet.row_count == 300)
        assert fleet.selected_row is not None and fleet.selected_row.tenant == "t0000"
        await _until(pilot, lambda: fleet.is_on_screen)
        rows[5].last_stage = "ERROR"
        fleet.update_rows(rows, NOW)  # on screen: drawn at once, one row changed
        assert fleet.get_cell("t0005", "last").plain == "ERROR"
        assert fleet.get_cell("t0005", "tenant").plain == "!t0005"


@asynccontextmanager
async def _hidden_costs_pane(tmp_path):
    """A costs pane that has summarized its empty ledger once, then was hidden."""
    pane = LedgerPane(Ledger(tmp_path / "ledger.sqlite"), Config(namespace="ops"), id="ledger")
    async with Host(pane).run_test(size=(100, 30)) as pilot:
        await _until(pilot, lambda: pane.refreshes >= 1)
        pane.display = False
        await _until(pilot, lambda: not pane.is_on_screen)
        yield pilot, pane


async def test_a_hidden_costs_pane_summarizes_but_draws_tenants_only_when_shown(tmp_path):
    async with _hidden_costs_pane(tmp_path) as (pilot, pane):
        jobs = [job(f"j{i}", ran=600 * (i + 1), labels=tenant_labels(f"tenant{i}")) for i in range(40)]
        pane.ingest(jobs, [], now=NOW)  # finished jobs: news, summarized even while hidden
        await _until(pilot, lambda: pane.refreshes >= 2)
        table = pane.query_one("#ledger-tenants", KeyedTable)
        assert len(pane.summary.by_tenant) == 40 and table.row_count == 0
        pane.display = True
        pane.shown()  # what the app does when the costs tab opens (and Textual's Show, mostly)
        await _until(pilot, lambda: table.row_count == 40)
        assert [r.key.value for r in table.ordered_rows][0] == "tenant39"  # biggest spender first


def test_a_slow_summary_paces_the_next_one_harder_while_hidden():
    from console.ui.widgets.costs.ledger_pane import pace_wait

    # a summary of 10,000 schedules that took 2 s: hidden, the next waits 40 s after it; shown, 6 s
    assert pace_wait(2.0, since_done=0.0, shown=False) == 40.0
    assert pace_wait(2.0, since_done=0.0, shown=True) == 6.0
    assert pace_wait(2.0, since_done=10.0, shown=True) == 0.0  # long enough ago: at once
    assert pace_wait(0.005, since_done=0.2, shown=False) == 0.0  # a small fleet: not held back past 0.1 s


async def test_a_hidden_costs_pane_after_a_slow_summary_waits_and_catches_up_when_shown(tmp_path):
    async with _hidden_costs_pane(tmp_path) as (pilot, pane):
        pane._took = 1.0  # as if the last summary had taken a second (hidden: the next waits 20 s)
        jobs = [job(f"j{i}", ran=600 * (i + 1), labels=tenant_labels(f"tenant{i}")) for i in range(5)]
        pane.ingest(jobs, [], now=NOW)  # news, but held back
        await pilot.pause()
        assert pane.updating and pane._pace_timer is not None and not pane._busy  # timed (the hidden pace)
        assert pane.refreshes == 1 and pane.summary.entries == 0
        pane.display = True
        pane.shown()  # the costs tab opens: the shown pace (3 s after the last one) applies
        await _until(pilot, lambda: pane.refreshes >= 2, tries=600)
        assert pane.summary.entries == 5


async def test_a_hidden_costs_pane_waits_for_the_apps_first_reads_and_not_once_it_is_opened(tmp_path):
    reading = [True]  # the app's first reads (the whole list, every schedule) are under way
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.record_finished([job("j0", ran=600, labels=tenant_labels("acme"))], None, now=NOW)
    pane = LedgerPane(ledger, Config(namespace="ops"), id="ledger", hold=lambda: reading[0])
    pane.display = False  # mounted hidden, as in a tab not open
    looks = []
    paced = pane._paced
    pane._paced = lambda: (looks.append(1), paced())  # each time the held update looks again
    async with Host(pane).run_test(size=(100, 30)) as pilot:
        await _until(pilot, lambda: len(looks) >= 1, tries=500)  # it looked again, still held
        assert pane.refreshes == 0 and pane.summary is None  # held: nothing summarized yet
        reading[0] = False  # the reads are done: the held summary goes at the next look
        await _until(pilot, lambda: pane.refreshes >= 1, tries=200)
        assert pane.summary.entries == 1
    reading[0] = True
    pane = LedgerPane(ledger, Config(namespace="ops"), id="ledger", hold=lambda: reading[0])
    async with Host(pane).run_test(size=(100, 30)) as pilot:
        # on screen from the start (the user opened the costs tab): never held
        await _until(pilot, lambda: pane.refreshes >= 1, tries=100)
        assert pane.summary.entries == 1
