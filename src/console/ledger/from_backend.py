"""The ledger against a live backend: its prices, one read of its jobs, and the summary a config asks for.

The backend is an ``HfApi`` pointed at huggingface.co or the embedded server; the caller passes it
in. These calls block on HTTP: the UI runs them in thread workers.

Imports the store, the forecasts and console.prices: never huggingface_hub itself, no Textual, no
console.ui or console.server, no training stack.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console.ledger.forecast import LedgerSummary, month_of, summarize
from console.ledger.store import Ledger, RecordResult
from console.prices import PriceBook, shipped_price_book


def live_prices(api: Any, granularity: str = "minute") -> PriceBook:
    """Prices from the backend's `list_jobs_hardware`, else the shipped table; billed per
    `granularity` (the config's `billing.granularity`)."""
    from console.prices import price_book_from_hardware

    try:
        return price_book_from_hardware(api.list_jobs_hardware()).billed_by(granularity)
    except Exception:  # an older server, or no network: the shipped prices still cost the jobs
        return shipped_price_book(granularity)


@dataclass(frozen=True)
class Snapshot:
    """One read of the backend: what the ledger recorded and what the summary needs."""

    recorded: RecordResult
    scheduled_jobs: list[Any]
    prices: PriceBook
    fetched_at: datetime
    seconds: float


def record_from_api(
    ledger: Ledger, api: Any, *, namespace: str | None = None, granularity: str = "minute"
) -> Snapshot:
    """List jobs and scheduled jobs, record every newly finished job, return what was read.

    Blocking (HTTP): call it from a thread worker in the UI.
    """
    t0 = time.monotonic()
    prices = live_prices(api, granularity)
    jobs = list(api.list_jobs(namespace=namespace))
    result = ledger.record_finished(jobs, prices)
    try:
        scheduled = list(api.list_scheduled_jobs(namespace=namespace))
    except Exception:  # a projection without schedules is still a ledger
        scheduled = []
    return Snapshot(result, scheduled, prices, datetime.now(UTC), time.monotonic() - t0)


def ledger_summary(
    ledger: Ledger,
    *,
    now: datetime | None = None,
    plan: str = "pro",
    seats: int = 1,
    budget_usd: float | None = None,
    scheduled_jobs: Iterable[Any] = (),
    active_jobs: Iterable[Any] = (),
    prices: PriceBook | None = None,
) -> LedgerSummary:
    """The summary of every entry of `ledger`: `summarize` with the totals and the calibration
    asked of SQLite, and the entries read only if an unlabelled schedule needs them (and not
    kept). The one way the costs pane, the on-call watcher and `console ledger` summarize a
    ledger file: a fleet's ledger holds 100,000 entries, 75 MB as objects. The schedules' money
    and the spend by tenant are the ledger's `SharedProjection`: made once for every summary of
    the same schedules, prices, minute and ledger version."""
    now = now or datetime.now(UTC)
    calibration, _ = ledger.calibration_from_store()
    totals = ledger.spend_totals(month_of(now))
    prices = prices or shipped_price_book()
    return summarize(
        (),
        totals=totals,
        projected=ledger.projection.get(scheduled_jobs, now, prices, totals, ledger.history),
        now=now,
        calibration=calibration,
        plan=plan,
        seats=seats,
        budget_usd=budget_usd,
        scheduled_jobs=scheduled_jobs,
        active_jobs=active_jobs,
        prices=prices,
    )


def summary_for_config(ledger: Ledger, cfg: Any, snapshot: Snapshot | None = None,
                       *, now: datetime | None = None) -> LedgerSummary:
    """The summary with the config's plan, seats and budget (and a snapshot's schedules)."""
    return ledger_summary(
        ledger,
        now=now,
        plan=cfg.plan,
        seats=cfg.seats,
        budget_usd=cfg.monthly_budget_usd,
        scheduled_jobs=snapshot.scheduled_jobs if snapshot else (),
        active_jobs=snapshot.recorded.active if snapshot else (),
        prices=snapshot.prices if snapshot else None,
    )
