"""Paint first, then refresh; the history in the local cache, paged in on scroll.

A start paints the last picture the console kept (job rows, fleet, ledger summary), marked as a
snapshot with its age, before huggingface_hub or the server are imported; fresh data replaces it.
The jobs table holds the newest jobs and pages the rest in from the cache; the filter searches
every job. Hidden panes keep their rows and draw them when shown.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

from tests.jobwait import wait_stage
from tests.ui.conftest import console_labels, run_python, schedule_python, wait_for, wait_thread

from console.server.core import new_id
from console.server.jobs.store import JobRecord
from console.ui.app import ConsoleApp
from console.ui.widgets.status_line import StatusLine


class HeldBackend:
    """The test's backend, connected only when the test lets it (the first frame comes first)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self.kind, self.namespace, self.url = backend.kind, backend.namespace, ""
        self.asked = threading.Event()
        self.let_go = threading.Event()
        self.connected = False

    def ensure_connected(self) -> None:
        self.asked.set()
        self.let_go.wait(60)
        self.url = self._backend.url
        self.connected = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


def _status(app: ConsoleApp) -> str:
    return app.query_one(StatusLine).render_text().plain


async def test_the_snapshot_is_painted_marked_with_its_age_then_replaced(backend, cfg):
    schedule_python(backend, tenant="acme")
    first = run_python(backend, "print('one')", tenant="acme")
    await wait_thread(wait_stage, backend, first.id, ("COMPLETED",))
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.refresher.synced and first.id in app.jobs_table.rows_by_id)
        await wait_for(pilot, lambda: "acme" in app.refresher.fleet_rows, what="the fleet")
    second = run_python(backend, "print('two')", tenant="globex")
    await wait_thread(wait_stage, backend, second.id, ("COMPLETED",))

    held = HeldBackend(backend)
    app = ConsoleApp(cfg, held, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, held.asked.is_set, what="the first refresh")
        # painted from the cache before the backend was even connected
        assert first.id in app.jobs_table.rows_by_id and second.id not in app.jobs_table.rows_by_id
        assert app.refresher.snapshot_at is not None and app.refresher.refresh_count == 0
        text = _status(app)
        assert "SNAPSHOT" in text and " old" in text and "refreshing" in text
        await pilot.press("1")  # the fleet as it was kept
        assert app.fleet_table.rows_by_tenant["acme"].schedule == "0 3 * * 1"
        assert app.fleet_table.rows_by_tenant["acme"].last_job_id == first.id
        await wait_for(pilot, lambda: app.fleet_table.row_count == 1, what="the kept fleet drawn")
        await pilot.press("2")
        held.let_go.set()
        await wait_for(pilot, lambda: second.id in app.jobs_table.rows_by_id, what="the fresh job")
        await wait_for(pilot, lambda: app.refresher.synced, what="the catch-up")
        text = _status(app)
        assert "SNAPSHOT" not in text and "refreshed" in text
        assert app.refresher.snapshot_at is None
        assert "globex" in app.refresher.fleet_rows


async def test_a_refresh_that_starts_as_the_console_closes_keeps_nothing_for_the_next_start(backend, cfg):
    """A refresh timer can fire while the app shuts down, after its workers were cancelled: what
    that late read finds is not the console's picture (the next start paints the cache as it was
    at quit, then catches up), so it writes nothing."""
    first = run_python(backend, "print('one')", tenant="acme")
    await wait_thread(wait_stage, backend, first.id, ("COMPLETED",))
    app = ConsoleApp(cfg, backend, refresh_seconds=30, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.refresher.synced and first.id in app.jobs_table.rows_by_id)
    second = run_python(backend, "import time; time.sleep(60)", tenant="globex")
    await wait_thread(wait_stage, backend, second.id, ("RUNNING",))
    app.refresher.refresh()  # as the refresh timer does when it fires in the shutdown window
    deadline = time.monotonic() + 20
    while any(w.is_running for w in app.workers) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not any(w.is_running for w in app.workers)
    cache = app.refresher.cache
    assert cache.row(first.id) is not None and cache.row(second.id) is None
    backend.api.cancel_job(job_id=second.id, namespace=backend.namespace)


def _bulk_history(backend, count: int, tenants: int = 3) -> list[str]:
    """`count` finished jobs straight into the server's store (as a long history), oldest first."""
    start = time.time() - 86400
    ids = []

    def records():
        for n in range(count):
            tenant = f"t{n % tenants}"
            labels = console_labels(tenant)
            job_id = new_id()[:8] + f"{n:016x}"
            ids.append(job_id)
            yield JobRecord(
                id=job_id, namespace=backend.namespace, created_at=start + n * 10, stage="COMPLETED",
                spec={"dockerImage": "python:3.12", "command": ["python", "-c", "pass"],
                      "flavor": "t4-small", "labels": labels},
                labels=labels, started_at=start + n * 10 + 1, finished_at=start + n * 10 + 5,
                message="needle in the history" if n == 0 else None,
            )

    backend._server.service.store.insert_jobs_bulk(records())
    return ids


async def test_the_history_is_paged_in_on_scroll_and_the_filter_searches_every_job(backend, cfg):
    ids = _bulk_history(backend, 1300)
    app = ConsoleApp(cfg, backend, refresh_seconds=3600, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.jobs_table
        await wait_for(pilot, lambda: app.refresher.synced and table.total == 1300, timeout=60,
                       what="the whole list")
        assert table.row_count == 500 and table.matching == 1300
        assert ids[-1] in table.rows_by_id and ids[0] not in table.rows_by_id
        # in memory: each tenant's newest runs, not the history
        assert len(app.refresher.job_infos) <= 6 and len(app.refresher.job_rows) <= 6
        state = str(app.query_one("#jobs-filter-state").render())
        assert "newest 500 of 1300 jobs" in state
        table.focus()
        for _ in range(10):
            if table.row_count == 1300:
                break
            await pilot.press("ctrl+end")
            await pilot.pause(0.05)
        assert table.row_count == 1300 and set(table.rows_by_id) == set(ids)
        assert [r.key.value for r in table.ordered_rows] == ids[::-1]  # newest first, every job once
        app.query_one("#jobs-pane").set_filter("needle")
        await pilot.pause()
        assert list(table.rows_by_id) == [ids[0]] and table.matching == 1
        app.query_one("#jobs-pane").set_filter("tenant:t1")
        await pilot.pause()
        assert table.matching == table.row_count == len(ids[1::3]) == 433


async def test_hidden_panes_keep_their_rows_and_draw_them_when_shown(backend, cfg):
    for tenant in ("acme", "globex", "initech"):
        schedule_python(backend, tenant=tenant)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.refresher.synced and len(app.refresher.fleet_rows) == 3)
        await wait_for(pilot, lambda: "fleet" in app._mounted_tabs and "costs" in app._mounted_tabs,
                       what="the other tabs")
        fleet = app.fleet_table
        await wait_for(pilot, lambda: len(fleet.rows_by_tenant) == 3, what="the fleet rows kept")
        assert fleet.row_count == 0  # hidden: nothing drawn
        await pilot.press("1")
        await wait_for(pilot, lambda: fleet.row_count == 3, what="the fleet drawn")
        assert fleet.selected_row is not None and fleet.selected_row.tenant == "acme"
        done = run_python(backend, "print('x')", tenant="acme")
        await wait_thread(wait_stage, backend, done.id, ("COMPLETED",))
        from console.ui.widgets.costs import LedgerPane

        ledger = app.query_one(LedgerPane)
        tenants = ledger.query_one("#ledger-tenants")
        await wait_for(pilot, lambda: ledger.summary is not None and ledger.summary.entries == 1,
                       what="the finished job in the ledger")
        assert tenants.row_count == 0  # the costs tab is hidden: no per-tenant rows drawn
        await pilot.press("3")
        await wait_for(pilot, lambda: tenants.row_count == 1, what="the tenants drawn")


def test_the_first_frame_imports_neither_huggingface_hub_nor_the_server(tmp_path):
    """The real start path (`Connecting`, the app) against a cache with one job: when the first
    refresh starts (after the first frame), neither is imported and the job is on screen."""
    code = textwrap.dedent("""
        import asyncio, json, sys, threading
        from datetime import UTC, datetime
        from console.cache import JobCache, cache_path, snapshot
        from console.commands.tui import Connecting
        from console.config import Config
        from console.jobs import JobRow
        from console.ui.app import ConsoleApp

        cfg = Config(namespace="oncall")
        cache = JobCache(cache_path("local", "oncall"))
        now = datetime.now(UTC)
        cache.put([(JobRow("a" * 24, "acme", "sft", "COMPLETED", "l4x1", now, now, 60.0, 0.01), None)])
        snapshot.save_seen(cache, now)
        seen = {}

        class Probe(Connecting):
            def ensure_connected(self):
                seen["modules"] = sorted(m for m in sys.modules if m.split(".")[0] == "huggingface_hub"
                                         or m.startswith("console.server") or m.startswith("console.backend"))
                raise RuntimeError("the test ends here")

        async def main():
            app = ConsoleApp(cfg, Probe(cfg), refresh_seconds=3600, stream_metrics=False)
            async with app.run_test(size=(80, 24)) as pilot:
                for _ in range(200):
                    if "modules" in seen:
                        break
                    await pilot.pause(0.02)
                seen["rows"] = list(app.jobs_table.rows_by_id)
                seen["status"] = app.query_one("#status-line").render_text().plain

        asyncio.run(main())
        print(json.dumps(seen))
    """)
    env = dict(os.environ, CONSOLE_DATA_DIR=str(tmp_path / "data"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["modules"] == []
    assert seen["rows"] == ["a" * 24]
    assert "SNAPSHOT" in seen["status"]
