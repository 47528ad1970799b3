"""Workers read only what they are given and hand back a result the UI thread applies: no thread
worker reads or assigns the state the UI thread owns (the refresher's jobs, runs, schedules,
outcomes and connection; the costs pane's schedules, prices and active jobs).

Each owned attribute is replaced, for the test, by a guard that notes every read or write made
from any thread but the app's; a real app then runs its refreshes (a whole read, a read of the
schedules) and the costs pane its read of the backend, and the guard must have noted nothing."""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.ui.conftest import console_labels, wait_for

from console.ledger import Ledger
from console.server.core import new_id
from console.server.jobs.store import JobRecord
from console.ui.app import ConsoleApp
from console.ui.refresh import Refresher
from console.ui.widgets.costs import LedgerPane

REFRESHER_STATE = ("job_infos", "job_rows", "active_ids", "latest", "scheduled", "scheduled_read",
                   "fleet_rows", "outcomes", "newest_success", "outcomes_missing", "connected",
                   "synced", "refresh_count", "last_refresh", "snapshot_at")
LEDGER_PANE_STATE = ("scheduled", "prices", "_active", "summary", "refreshes")


class _UIThreadOnly:
    """An attribute that notes (in `off_thread`) each read or write from a thread other than `ui`."""

    def __init__(self, name: str, ui: int, off_thread: list[str]) -> None:
        self.name, self.ui, self.off_thread = name, ui, off_thread

    def _check(self, how: str) -> None:
        if threading.get_ident() != self.ui:
            self.off_thread.append(f"{how} {self.name} in {threading.current_thread().name}")

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        self._check("read")
        try:
            return obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None

    def __set__(self, obj: Any, value: Any) -> None:
        self._check("wrote")
        obj.__dict__[self.name] = value


def _guard(monkeypatch, cls: type, names: tuple[str, ...]) -> list[str]:
    off_thread: list[str] = []
    ui = threading.get_ident()  # the test runs on the app's event loop: the UI thread
    for name in names:
        monkeypatch.setattr(cls, name, _UIThreadOnly(name, ui, off_thread), raising=False)
    return off_thread


def _finished_runs(backend, tenants: list[str]) -> None:
    """One finished training run per tenant, none of them scheduled (the fleet reads each one's
    request from its run), straight into the server's store."""
    now = time.time()
    records = [JobRecord(
        id=new_id(), namespace=backend.namespace, created_at=now - 600 + i, stage="COMPLETED",
        spec={"dockerImage": "python:3.12", "command": ["python", "-c", "pass"], "flavor": "t4-small",
              "labels": console_labels(tenant)},
        labels=console_labels(tenant), started_at=now - 590 + i, finished_at=now - 500 + i,
    ) for i, tenant in enumerate(tenants)]
    backend._server.service.store.insert_jobs_bulk(records)


async def test_refresh_and_oncall_workers_never_touch_the_refreshers_state(backend, cfg, monkeypatch):
    """A whole read and a read of the schedules derive the fleet in the worker (every tenant's
    request read from its last run) from what the refresh was given, and an on-call pass reads
    the schedules it was given: the refresher's own state is read and written on the UI thread
    only."""
    from tests.ui.conftest import schedule_python

    off_thread = _guard(monkeypatch, Refresher, REFRESHER_STATE)
    _finished_runs(backend, ["acme", "globex"])
    app = ConsoleApp(cfg, backend, refresh_seconds=3600, stream_metrics=False, watch_seconds=1.0,
                     first_watch_seconds=0.3, start_tab="fleet")
    async with app.run_test(size=(100, 30)) as pilot:
        refresher = app.refresher
        await wait_for(pilot, lambda: refresher.synced and {"acme", "globex"} <= set(refresher.fleet_rows),
                       timeout=60, what="the fleet from a whole read")
        assert refresher.fleet_rows["acme"].last_stage == "COMPLETED"
        schedule_python(backend, tenant="initech")
        count = refresher.refresh_count
        refresher.refresh(scheduled=True)  # as an action that touched the schedules asks
        await wait_for(pilot, lambda: refresher.refresh_count > count and "initech" in refresher.fleet_rows,
                       timeout=60, what="the fleet from a read of the schedules")
        assert {"acme", "globex"} <= set(refresher.fleet_rows)
        passes = app.oncall.passes
        await wait_for(pilot, lambda: app.oncall.passes > passes, timeout=60,
                       what="an on-call pass with the schedules read")
        assert app.oncall.last_report is not None
    assert off_thread == []


async def test_the_costs_panes_backend_read_hands_its_result_to_the_ui_thread(backend, cfg, tmp_path,
                                                                             monkeypatch):
    """`record_from` lists the jobs and schedules in a worker; the schedules, prices and running
    jobs it read are taken by the pane on the UI thread (where `ingest` changes them too)."""
    from tests.ui.conftest import run_python, schedule_python

    off_thread = _guard(monkeypatch, LedgerPane, LEDGER_PANE_STATE)
    schedule_python(backend, tenant="acme")
    running = run_python(backend, "import time; time.sleep(60)", tenant="acme")
    pane = LedgerPane(Ledger(tmp_path / "ledger.sqlite"), cfg, id="ledger")

    from textual.app import App

    class Host(App):
        def compose(self):
            yield pane

    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: pane.refreshes >= 1, what="the first summary")
        pane.record_from(backend.api, backend.namespace)
        await wait_for(pilot, lambda: pane.scheduled is not None and running.id in pane._active,
                       timeout=60, what="the backend read taken by the pane")
        assert pane.prices is not None and len(pane.scheduled) == 1
        await wait_for(pilot, lambda: pane.refreshes >= 2, what="the summary of that read")
    backend.api.cancel_job(job_id=running.id, namespace=backend.namespace)
    assert off_thread == []
