"""The fleet rows a refresh hands to the snapshot (kept for the next start's first frame) are
never changed after they are handed over: an outcome read later gives its tenant a new row, so
the rows being written, on the snapshot's thread, are never half old and half new (a loss of
one run beside the adapter of another in the reopened frame)."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import asdict

from tests.oncall.conftest import wait_stage
from tests.ui.conftest import console_labels, wait_for

from console.cache import snapshot
from console.ui.app import ConsoleApp


async def test_an_outcome_read_later_leaves_the_rows_handed_to_the_snapshot_unchanged(backend, cfg, monkeypatch):
    code = ("print('progress step=1/1 loss=0.75', flush=True)\n"
            "print('saved adapter=acme/adapter-1', flush=True)\n"
            "print('VERDICT: PASS last_loss=0.75', flush=True)\n")
    run = backend.api.run_job(image="python:3.12", command=[sys.executable, "-u", "-c", code], flavor="t4-small",
                              labels=console_labels("acme"), timeout=120, namespace=backend.namespace)
    assert await asyncio.to_thread(wait_stage, backend, run.id) == "COMPLETED"

    handed: list[tuple[list, list[dict]]] = []
    save_fleet = snapshot.save_fleet

    def keeping(cache, rows):
        handed.append((rows, [asdict(r) for r in rows]))
        save_fleet(cache, rows)

    monkeypatch.setattr(snapshot, "save_fleet", keeping)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None,
                     start_tab="fleet")
    async with app.run_test(size=(80, 24)) as pilot:
        refresher = app.refresher
        await wait_for(pilot, lambda: "acme" in refresher.fleet_rows
                       and refresher.fleet_rows["acme"].last_loss == 0.75, timeout=60, what="acme's outcome")
        assert refresher.fleet_rows["acme"].adapter == "acme/adapter-1"
        assert app.fleet_table.rows_by_tenant["acme"].last_loss == 0.75
        # the next whole read finds the fleet unchanged since the outcome, and still keeps the
        # outcome for the next start (a snapshot that skips unchanged rows must not skip this one)
        done = refresher._last_full
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: refresher._last_full > done, timeout=60, what="a whole re-read applied")
        await wait_for(pilot, lambda: not any(w.is_running for w in app.workers), timeout=60,
                       what="the snapshot written")
        kept = {r.tenant: r for r in snapshot.load_fleet(refresher.cache) or []}
        assert kept["acme"].last_loss == 0.75 and kept["acme"].adapter == "acme/adapter-1"
    assert handed, "no fleet rows were handed to the snapshot"
    assert handed[0][1][0]["last_loss"] is None  # the first whole read knew no outcome yet
    for rows, as_handed in handed:
        assert [asdict(r) for r in rows] == as_handed, "rows handed to the snapshot changed afterwards"
