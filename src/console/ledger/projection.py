"""The schedules' money and the spend by tenant, made once and shared by every summary that asks.

At 10,000 tenants the costs pane and the on-call watcher each summarize the ledger against the
same 10,000 schedules, often within the same second: each made its own 10,000 `ScheduleMoney` and
10,000 `TenantSpend` (seconds of CPU at start, and two copies held). A `SharedProjection` (one per
`Ledger`, `Ledger.projection`) keeps the last ones made, with what they were made of: the same
schedule objects, the same prices, the same minute (a cron's firings left are counted from its
minute: `console.money.remaining_firings`) and the same ledger totals (`Ledger.spend_totals`
returns one object per ledger version and month). A summary asked of the same gets the same lists;
anything else makes them anew, one at a time (the second asker waits for the first's answer).

Imports the forecasts only: no SQLite, no Textual, no console.ui.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from console.ledger.entries import LedgerEntry
from console.ledger.forecast import (
    ScheduleForecast,
    SpendTotals,
    TenantSpend,
    project_schedules,
    tenant_spend,
)
from console.prices import PriceBook


class SharedProjection:
    """The last schedules' money and spend by tenant made, and what they were made of."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._schedules_of: tuple[tuple[Any, ...], PriceBook, datetime, SpendTotals] | None = None
        self._schedules: list[ScheduleForecast] = []
        self._tenants_of: SpendTotals | None = None
        self._tenants: list[TenantSpend] = []
        self.made = 0
        """How many times the schedules' money was made (diagnostics, tests)."""

    def get(self, scheduled: Iterable[Any], now: datetime, prices: PriceBook, totals: SpendTotals,
            history: Callable[[], Iterable[LedgerEntry]]) -> tuple[list[ScheduleForecast], list[TenantSpend]]:
        """The schedules' money at `now` (`forecast.project_schedules`, an unlabelled schedule's
        observed cost read from `history()`) and the spend by tenant of `totals`
        (`forecast.tenant_spend`): the lists made last when made of the same. `totals` stands for
        the ledger's version too: `Ledger.spend_totals` makes a new one when an entry is recorded."""
        schedules = tuple(scheduled)
        minute = now.astimezone(UTC).replace(second=0, microsecond=0)
        with self._lock:
            made = self._schedules_of
            if made is None or not (_same_objects(made[0], schedules) and made[1] == prices
                                    and made[2] == minute and made[3] is totals):
                self._schedules = project_schedules(schedules, now, prices, history())
                self._schedules_of = (schedules, prices, minute, totals)
                self.made += 1
            if self._tenants_of is not totals:
                self._tenants = tenant_spend(totals)
                self._tenants_of = totals
            return self._schedules, self._tenants


def _same_objects(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))
