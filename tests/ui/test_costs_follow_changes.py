"""A change moves every projection at once: after a pause (or resume, reschedule, trigger) the app
re-reads the schedules and the Costs tab projects from them straight away, not after the pacing that
keeps quiet refreshes light: the tab's month agrees with the header's "refreshed 0s ago"."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from tests.ledger.jobjson import scheduled, tenant_labels
from tests.ui.test_hidden_panes import Host, _until

from console.config import Config
from console.ledger import Ledger
from console.ui.widgets.costs import LedgerPane

NOW = datetime(2026, 12, 9, 10, tzinfo=UTC)


async def test_a_paused_schedule_leaves_the_projection_at_once_though_the_last_summary_was_slow(tmp_path):
    pane = LedgerPane(Ledger(tmp_path / "ledger.sqlite"), Config(namespace="ops", plan="pro"), id="ledger",
                      clock=lambda: NOW)
    running = [scheduled("s1", "0 */6 * * *", labels=tenant_labels("acme")),
               scheduled("s2", "0 3 * * 1", labels=tenant_labels("globex"))]
    async with Host(pane).run_test(size=(120, 30)) as pilot:
        pane.ingest([], running, now=NOW)
        await _until(pilot, lambda: pane.summary is not None and len(pane.summary.schedules) == 2
                     and not pane.updating)
        before = pane.summary.scheduled_remaining_usd
        assert before > 0
        pane._took, pane._done_at = 60.0, time.monotonic()  # as if a summary took a minute: paced 3 min
        paused = [scheduled("s1", "0 */6 * * *", labels=tenant_labels("acme"), suspend=True), running[1]]
        refreshes = pane.refreshes
        pane.ingest([], paused, now=NOW)
        await _until(pilot, lambda: pane.refreshes > refreshes, tries=250)  # 5 s, not 3 minutes
        acme = next(f for f in pane.summary.schedules if f.scheduled_job_id == "s1")
        assert acme.suspended and acme.remaining_usd == 0.0
        assert pane.summary.scheduled_remaining_usd == pytest.approx(before - acme.would_be_remaining_usd)
        # the same schedules again move nothing: that refresh keeps its pace
        pane._took, pane._done_at = 60.0, time.monotonic()
        pane.ingest([], list(paused), now=NOW)
        await pilot.pause()
        assert pane.updating and pane._pace_timer is not None and not pane._busy  # its turn is timed, not now
        assert pane.refreshes == refreshes + 1
