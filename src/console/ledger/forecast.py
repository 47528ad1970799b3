"""The cost pane's numbers: the month's spend and what the scheduled jobs will still cost by its end.

The summary answers the pane's questions: spend by tenant and by month, month to date, wasted
spend (timeouts), the plan floor, the projection to month end from the scheduled jobs, and whether
that projection is over the configured budget. Months are UTC calendar months. What a schedule
adds is `console.money`'s (the one projection every money surface shows).

Imports the entries, the calibration, console.costs and console.prices: no SQLite, no Textual, no
console.ui or console.server, no network, no training stack.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from console.costs import Calibration, job_cost
from console.jobspec import exposed_ports_of, run_limit_seconds
from console.ledger.calibration import estimate_calibration
from console.ledger.entries import LedgerEntry, flavor_of, running_seconds_of
from console.money import ScheduleMoney, schedule_money
from console.prices import PLANS, PriceBook, plan_floor_usd, shipped_price_book


def month_of(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m")


ScheduleForecast = ScheduleMoney
"""What one scheduled job costs this month (`console.money.ScheduleMoney`: the one projection)."""


class ObservedCosts:
    """The known costs of finished runs, found by schedule and by (tenant, kind, flavor): what an
    unlabelled schedule's cost per run is observed from. Indexed once, on the first question, so
    that 10,000 schedules read 100,000 entries once rather than once each, and a labelled fleet
    (whose schedules never ask) never reads them."""

    def __init__(self, history: Iterable[LedgerEntry]) -> None:
        self._history: Iterable[LedgerEntry] | None = history
        self._costs: list[float] = []
        self._by_schedule: dict[Any, list[int]] = {}
        self._by_kind: dict[tuple[str, str, str], list[int]] = {}

    def _index(self) -> None:
        history, self._history = self._history, None
        for e in history or ():
            if not e.known:
                continue
            i = len(self._costs)
            self._costs.append(e.cost_usd)
            self._by_schedule.setdefault(e.scheduled_job_id, []).append(i)
            self._by_kind.setdefault((e.tenant, e.kind, e.flavor), []).append(i)

    def costs(self, schedule_id: Any, tenant: str, kind: str, flavor: str) -> list[float]:
        """The costs of the runs of that schedule or of that tenant, kind and flavor, in the
        history's order, each run once."""
        if self._history is not None:
            self._index()
        a = self._by_schedule.get(schedule_id, [])
        b = self._by_kind.get((tenant, kind, flavor), [])
        found = sorted(set(a).union(b)) if a and b else (a or b)
        return [self._costs[i] for i in found]


def forecast_schedule(
    sj: Any,
    now: datetime,
    prices: PriceBook,
    *,
    history: Iterable[LedgerEntry] | ObservedCosts = (),
    cron: str | None = None,
    suspended: bool | None = None,
) -> ScheduleForecast | None:
    """The money of one `ScheduledJobInfo` at `now` (`console.money.schedule_money`, the one
    projection; None when its cron is unreadable). A suspended schedule adds $0 (its would-be
    figures are kept beside).

    `history`: the finished runs an unlabelled schedule's cost is observed from, as entries or
    as an :class:`ObservedCosts` built once for many schedules."""
    observed = history if isinstance(history, ObservedCosts) else ObservedCosts(history)
    return schedule_money(sj, now, prices, cron=cron, suspended=suspended, observed=observed.costs)


@dataclass(frozen=True, slots=True)
class TenantSpend:
    tenant: str
    runs: int
    month_usd: float
    total_usd: float
    wasted_usd: float


@dataclass(frozen=True)
class LedgerSummary:
    month: str
    entries: int
    month_to_date_usd: float
    """GPU/CPU time of this month's finished jobs."""
    in_flight_usd: float
    """Minutes already paid by jobs still running (not in the ledger until they end)."""
    by_tenant: list[TenantSpend]
    by_month: dict[str, float]
    wasted_usd: float
    """This month's spend on jobs killed on their timeout."""
    wasted_runs: int
    plan: str
    seats: int
    plan_floor_usd: float
    schedules: list[ScheduleForecast]
    """Every schedule (`console.money.ScheduleMoney`); a suspended one adds $0."""
    scheduled_remaining_usd: float
    """What the schedules add from now to the month's end: their firings left x $/run."""
    projection_usd: float
    """Month to date + in flight + the schedules' remaining firings + the plan floor."""
    budget_usd: float | None
    calibration_runs: int
    unknown_jobs: list[str] = field(default_factory=list)
    """Finished jobs whose running time the Jobs API did not say (no durations, no finish time):
    not costed, in no total above, listed so that they are not forgotten."""
    calibration_spread: str = ""
    """How far apart the runs behind the calibration are (`runs x0.9 to x1.6`): what the heuristic
    is worth against them (the calibration is reported, never folded into the projection)."""

    @property
    def scheduled_month_usd(self) -> float:
        """What the schedules cost in a month ($/month summed; suspended ones $0)."""
        return sum(f.month_usd for f in self.schedules)

    @property
    def unknown_runs(self) -> int:
        return len(self.unknown_jobs)

    @property
    def over_budget(self) -> bool:
        return self.budget_usd is not None and self.projection_usd > self.budget_usd

    @property
    def budget_warning(self) -> str | None:
        if not self.over_budget:
            return None
        assert self.budget_usd is not None
        return (
            f"projected ${self.projection_usd:,.2f} for {self.month} exceeds the monthly budget "
            f"${self.budget_usd:,.2f} by ${self.projection_usd - self.budget_usd:,.2f}"
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["schedules"] = [f.to_dict() for f in self.schedules]
        d["scheduled_month_usd"] = self.scheduled_month_usd
        d["unknown_runs"] = self.unknown_runs
        d["over_budget"] = self.over_budget
        d["budget_warning"] = self.budget_warning
        return d


@dataclass
class SpendTotals:
    """What the finished jobs add up to, for one month: the part of the summary that reads every
    entry (:func:`spend_totals` folds a list; `Ledger.spend_totals` asks SQLite the same)."""

    month: str
    entries: int = 0
    tenants: dict[str, list[float]] = field(default_factory=dict)
    """tenant -> [runs, this month, all time, wasted this month]"""
    by_month: dict[str, float] = field(default_factory=dict)
    month_to_date: float = 0.0
    wasted: float = 0.0
    wasted_runs: int = 0
    unknown: list[str] = field(default_factory=list)


def spend_totals(entries: Iterable[LedgerEntry], month: str) -> SpendTotals:
    """The totals of `entries` for `month` (unknown entries are listed, in no total)."""
    totals = SpendTotals(month)
    tenants, by_month = totals.tenants, totals.by_month
    for e in entries:
        totals.entries += 1
        if not e.known:
            totals.unknown.append(e.job_id)
            continue
        by_month[e.month] = by_month.get(e.month, 0.0) + e.cost_usd
        t = tenants.setdefault(e.tenant, [0, 0.0, 0.0, 0.0])
        t[0] += 1
        t[2] += e.cost_usd
        if e.month == month:
            totals.month_to_date += e.cost_usd
            t[1] += e.cost_usd
            if e.wasted:
                totals.wasted += e.cost_usd
                totals.wasted_runs += 1
                t[3] += e.cost_usd
    return totals


def project_schedules(scheduled_jobs: Iterable[Any], now: datetime, prices: PriceBook,
                      history: Iterable[LedgerEntry] | ObservedCosts) -> list[ScheduleForecast]:
    """Every schedule's money at `now`, the dearest left this month first (unreadable crons left out)."""
    observed = history if isinstance(history, ObservedCosts) else ObservedCosts(history)
    forecasts = [f for sj in scheduled_jobs if (f := forecast_schedule(sj, now, prices, history=observed)) is not None]
    return sorted(forecasts, key=lambda f: (-f.remaining_usd, f.tenant))


def tenant_spend(totals: SpendTotals) -> list[TenantSpend]:
    """The spend by tenant of `totals`, the dearest this month first."""
    return sorted(
        (TenantSpend(name, int(v[0]), v[1], v[2], v[3]) for name, v in totals.tenants.items()),
        key=lambda t: (-t.month_usd, -t.total_usd, t.tenant),
    )


def summarize(
    entries: Sequence[LedgerEntry],
    *,
    now: datetime | None = None,
    plan: str = "pro",
    seats: int = 1,
    budget_usd: float | None = None,
    scheduled_jobs: Iterable[Any] = (),
    active_jobs: Iterable[Any] = (),
    prices: PriceBook | None = None,
    calibration: Calibration | None = None,
    totals: SpendTotals | None = None,
    history: Iterable[LedgerEntry] | None = None,
    projected: tuple[list[ScheduleForecast], list[TenantSpend]] | None = None,
) -> LedgerSummary:
    """The pane's numbers for the month containing `now`.

    `totals` (for that month) and `history` (what an unlabelled schedule's observed cost is read
    from) replace the fold over `entries` when the ledger answered them itself; `projected` (the
    schedules' money and the spend by tenant, as :func:`project_schedules` and
    :func:`tenant_spend` make them of these) replaces making them again."""
    now = now or datetime.now(UTC)
    prices = prices or shipped_price_book()
    month = month_of(now)
    if calibration is None:
        calibration, _ = estimate_calibration(entries)
    if totals is None or totals.month != month:
        totals = spend_totals(entries, month)
    history = entries if history is None else history
    by_month = totals.by_month
    mtd, wasted, wasted_runs = totals.month_to_date, totals.wasted, totals.wasted_runs
    in_flight = 0.0
    for job in active_jobs:
        secs, _ = running_seconds_of(job, now)
        flavor = flavor_of(job)
        if secs is not None and flavor in prices:
            in_flight += job_cost(secs, flavor, prices, timeout_s=run_limit_seconds(job),
                                  exposed_ports=exposed_ports_of(job))
    if projected is None:
        schedules = project_schedules(scheduled_jobs, now, prices, history)
        by_tenant = tenant_spend(totals)
    else:
        schedules, by_tenant = projected
    remaining = sum(f.remaining_usd for f in schedules)
    floor = plan_floor_usd(plan, seats) if plan in PLANS else 0.0
    return LedgerSummary(
        month=month,
        entries=totals.entries,
        month_to_date_usd=mtd,
        in_flight_usd=in_flight,
        by_tenant=by_tenant,
        by_month=dict(sorted(by_month.items())),
        wasted_usd=wasted,
        wasted_runs=wasted_runs,
        plan=plan,
        seats=seats,
        plan_floor_usd=floor,
        schedules=schedules,
        scheduled_remaining_usd=remaining,
        projection_usd=mtd + in_flight + remaining + floor,
        budget_usd=budget_usd,
        calibration_runs=calibration.runs,
        unknown_jobs=list(totals.unknown),
        calibration_spread=calibration.spread(),
    )


def kept_like(summary: LedgerSummary, before: LedgerSummary | None) -> LedgerSummary:
    """`summary`, each schedule's money and each tenant's spend that equals `before`'s being the
    object `before` holds: a summary made again (after each whole re-read, each budget projection)
    keeps no new copy of what did not change, 10,000 of each at 10,000 tenants, made where a read
    has just let its parse objects go (BENCHMARKS.md, "Memory at rest, 10,000 tenants")."""
    if before is None:
        return summary
    money = {m.scheduled_job_id: m for m in before.schedules}
    spend = {t.tenant: t for t in before.by_tenant}
    return replace(
        summary,
        schedules=[old if (old := money.get(m.scheduled_job_id)) == m else m for m in summary.schedules],
        by_tenant=[old if (old := spend.get(t.tenant)) == t else t for t in summary.by_tenant],
    )
