"""The costs pane and the on-call watcher summarize one ledger against the same schedules, often
within the same second: at 10,000 tenants each made its own 10,000 schedules' money and 10,000
tenants' spend. The ledger's one projection makes them once per schedules, prices, minute and
ledger version; every summary of the same shares the same objects, and the money is the same."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.ledger.test_schedule_forecast import entry, sj

from console.ledger import Ledger, ledger_summary
from console.ledger.forecast import month_of, summarize
from console.prices import shipped_price_book

PRICES = shipped_price_book()
NOW = datetime(2026, 12, 14, 12, 0, 5, tzinfo=UTC)


def _unshared(ledger: Ledger, schedules, now):
    """The summary made from scratch, as `summarize` folds it without the shared projection."""
    calibration, _ = ledger.calibration_from_store()
    return summarize((), totals=ledger.spend_totals(month_of(now)), history=ledger.history(), now=now,
                     calibration=calibration, scheduled_jobs=schedules, prices=PRICES, budget_usd=50.0)


def test_the_pane_and_the_watcher_share_one_projection_of_the_same_schedules(tmp_path):
    ledger = Ledger(tmp_path / "ledger.db")
    ledger.record([entry(1.5, tenant="acme"), entry(2.25, tenant="globex")])
    held = [sj(id=f"sj-{i}", labels={"app": "console", "tenant": f"t{i}"}, schedule=f"{i} 3 * * *")
            for i in range(50)] + [sj(id="sj-acme")]
    pane = ledger_summary(ledger, now=NOW, scheduled_jobs=list(held), prices=PRICES, budget_usd=50.0)
    watcher = ledger_summary(ledger, now=NOW + timedelta(seconds=40), scheduled_jobs=list(held), prices=PRICES,
                             budget_usd=50.0)
    assert watcher.schedules is pane.schedules and watcher.by_tenant is pane.by_tenant
    assert ledger.projection.made == 1
    fresh = _unshared(ledger, held, NOW)
    assert pane.schedules == fresh.schedules and pane.by_tenant == fresh.by_tenant
    assert (pane.projection_usd, watcher.projection_usd) == (fresh.projection_usd, fresh.projection_usd)

    # the next minute, a recorded job, a changed schedule: each is a projection of its own
    later = NOW + timedelta(minutes=1)
    assert ledger_summary(ledger, now=later, scheduled_jobs=held, prices=PRICES).schedules is not pane.schedules
    ledger.record([entry(4.0, tenant="acme")])
    recorded = ledger_summary(ledger, now=later, scheduled_jobs=held, prices=PRICES, budget_usd=50.0)
    assert recorded.by_tenant is not pane.by_tenant
    assert recorded.by_tenant == _unshared(ledger, held, later).by_tenant
    moved = held[:-1] + [sj(id="sj-acme", suspend=True)]
    suspended = ledger_summary(ledger, now=later, scheduled_jobs=moved, prices=PRICES, budget_usd=50.0)
    assert suspended.schedules == _unshared(ledger, moved, later).schedules
    assert next(f for f in suspended.schedules if f.scheduled_job_id == "sj-acme").suspended
