"""What a schedule change costs: $/month before -> after, said before it is saved.

A tenant moved from weekly to daily goes from $0.75 to $5.26 a month, and the dialog says so first.
The figures are the one projection's (`console.money`, through `console.ledger.forecast_schedule`):
the run its job spec describes, else the mean of the schedule's past runs, times the runs a month
of each cron.

Pure: the caller passes the `ScheduledJobInfo`. No Textual, no console.ui, console.server or
console.backend, no network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from console.cron import describe_cron, normalize_cron
from console.jobs import format_cost
from console.jobspec import labels_of
from console.ledger import LedgerEntry, ObservedCosts, forecast_schedule
from console.prices import PriceBook, shipped_price_book


@dataclass(frozen=True)
class RescheduleCost:
    """A schedule's monthly cost under its cron now and under the new one."""

    scheduled_job_id: str
    tenant: str
    before_cron: str
    after_cron: str
    per_run_usd: float
    basis: str
    """calibrated | heuristic | observed | unknown (see `ScheduleForecast.basis`)."""
    runs_before: float
    """Runs a month under the current cron."""
    runs_after: float
    before_usd_month: float
    after_usd_month: float
    suspended: bool = False
    """A suspended schedule costs nothing until resumed; the figures are what it costs then."""

    @property
    def delta_usd_month(self) -> float:
        return self.after_usd_month - self.before_usd_month

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["delta_usd_month"] = self.delta_usd_month
        return d

    def line(self) -> str:
        """`$0.75/month -> $5.26/month (+$4.51): 4.35 -> 30.4 runs at $0.17 (heuristic)`."""
        if self.basis == "unknown":
            return (
                f"{self.runs_before:.3g} -> {self.runs_after:.3g} runs a month; cost per run "
                "unknown (no size labels and no past runs)"
            )
        sign = "+" if self.delta_usd_month >= 0 else "-"
        text = (
            f"{format_cost(self.before_usd_month)}/month -> {format_cost(self.after_usd_month)}/month "
            f"({sign}{format_cost(abs(self.delta_usd_month))}): {self.runs_before:.3g} -> "
            f"{self.runs_after:.3g} runs at {format_cost(self.per_run_usd)} ({self.basis})"
        )
        return text + ("; suspended: $0 until resumed" if self.suspended else "")

    def describe_after(self) -> str:
        return describe_cron(self.after_cron)


def reschedule_cost(
    sj: Any,
    new_cron: str,
    *,
    prices: PriceBook | None = None,
    history: Sequence[LedgerEntry] = (),
    now: datetime | None = None,
) -> RescheduleCost:
    """The monthly cost of `sj` (a `ScheduledJobInfo`) under its cron and under `new_cron`:
    `console.money`'s $/month of each (read as if the schedule ran; a suspended one adds $0 until
    resumed, and says so).

    Raises `console.inputs.CostInputError` (one line) when `new_cron` is not a valid cron.
    """
    prices = prices or shipped_price_book()
    now = now or datetime.now(UTC)
    after = normalize_cron(new_cron)
    before = str(getattr(sj, "schedule", None) or "")
    observed = ObservedCosts(history)
    then = forecast_schedule(sj, now, prices, history=observed, cron=after, suspended=False)
    was = forecast_schedule(sj, now, prices, history=observed, cron=before, suspended=False) if before else None
    per_run = then.per_run_usd if then is not None else 0.0
    basis = then.basis if then is not None else "unknown"
    runs_after = then.runs_per_month if then is not None else 0.0
    runs_before = was.runs_per_month if was is not None else 0.0  # a cron this console cannot read: 0
    return RescheduleCost(
        scheduled_job_id=str(getattr(sj, "id", "")),
        tenant=labels_of(sj).get("tenant", "-"),
        before_cron=before,
        after_cron=after,
        per_run_usd=per_run,
        basis=basis,
        runs_before=runs_before,
        runs_after=runs_after,
        before_usd_month=was.month_usd if was is not None else 0.0,
        after_usd_month=then.month_usd if then is not None else 0.0,
        suspended=bool(getattr(sj, "suspend", False)),
    )
