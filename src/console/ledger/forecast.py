"""The cost pane's numbers: the month's spend and what the scheduled jobs will still cost by its end.

The summary answers the pane's questions: spend by tenant and by month, month to date, wasted
spend (timeouts), the plan floor, the projection to month end from the scheduled jobs, and whether
that projection is over the configured budget. Months are UTC calendar months.

Imports the entries, the calibration, console.costs and console.prices: no SQLite, no Textual, no
console.ui or console.server, no network, no training stack.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from console.costs import (
    Calibration,
    CostInputError,
    RunSpec,
    count_firings,
    estimate_run,
    job_cost,
)
from console.jobspec import exposed_ports_of, run_limit_seconds
from console.ledger.calibration import estimate_calibration
from console.ledger.entries import (
    NO_TENANT,
    LedgerEntry,
    flavor_of,
    label_bool,
    label_float,
    running_seconds_of,
)
from console.prices import PLANS, PriceBook, plan_floor_usd, shipped_price_book


def month_of(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m")


def month_end(now: datetime) -> datetime:
    """The first instant of the next month (UTC)."""
    now = now.astimezone(UTC)
    if now.month == 12:
        return datetime(now.year + 1, 1, 1, tzinfo=UTC)
    return datetime(now.year, now.month + 1, 1, tzinfo=UTC)


def remaining_firings(cron: str, now: datetime, end: datetime | None = None) -> int:
    """How many times a cron fires from `now` (exclusive) to the end of the month (UTC)."""
    # A cron fires on whole minutes: from `now` or from the start of its minute, the count is the
    # same, and 10,000 schedules summarized within a minute share their crons' counts.
    minute = now.astimezone(UTC).replace(second=0, microsecond=0)
    return _firings_after_minute(cron, minute, end or month_end(now))


@lru_cache(maxsize=8192)
def _firings_after_minute(cron: str, minute: datetime, end: datetime) -> int:
    return count_firings(cron, minute, end)


@dataclass(frozen=True, slots=True)
class ScheduleForecast:
    """What one scheduled job will still cost this month (slotted: one per schedule)."""

    scheduled_job_id: str
    tenant: str
    kind: str
    flavor: str
    schedule: str
    remaining_runs: int
    per_run_usd: float
    remaining_usd: float
    basis: str
    """calibrated (heuristic x factor from N runs) | heuristic | observed (mean of past runs) |
    unknown (no labels to estimate from and no past runs)"""


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
    calibration: Calibration | None = None,
    history: Iterable[LedgerEntry] | ObservedCosts = (),
) -> ScheduleForecast | None:
    """The month-end forecast of one `ScheduledJobInfo` (None when suspended or unreadable).

    `history`: the finished runs an unlabelled schedule's cost is observed from, as entries or
    as an :class:`ObservedCosts` built once for many schedules."""
    if getattr(sj, "suspend", False):
        return None
    spec = getattr(sj, "job_spec", None)
    labels = {str(k): str(v) for k, v in (getattr(spec, "labels", None) or {}).items()}
    flavor = flavor_of(spec)
    schedule = getattr(sj, "schedule", None) or ""
    try:
        runs = remaining_firings(schedule, now)
    except (CostInputError, ValueError, KeyError):
        return None
    tenant = labels.get("tenant") or NO_TENANT
    kind = labels.get("kind") or ""
    model_b, epochs = label_float(labels, "model_b"), label_float(labels, "epochs")
    examples = label_float(labels, "examples")
    per_run, basis = 0.0, "unknown"
    if model_b and examples and epochs:
        factor = calibration.factor_for(flavor) if calibration and calibration.runs else 1.0
        try:
            est = estimate_run(
                RunSpec(model_b, int(examples), epochs, flavor, bool(label_bool(labels, "unsloth")),
                        kind=kind or "sft"),
                prices,
                calibration_factor=factor,
            )
            per_run = est.cost_usd
            basis = "calibrated" if factor != 1.0 else "heuristic"
        except CostInputError:
            pass
    if basis == "unknown":
        observed = history if isinstance(history, ObservedCosts) else ObservedCosts(history)
        past = observed.costs(getattr(sj, "id", None), tenant, kind, flavor)
        if past:
            per_run, basis = sum(past) / len(past), "observed"
    return ScheduleForecast(
        scheduled_job_id=str(getattr(sj, "id", "")),
        tenant=tenant,
        kind=kind,
        flavor=flavor,
        schedule=schedule,
        remaining_runs=runs,
        per_run_usd=per_run,
        remaining_usd=per_run * runs,
        basis=basis,
    )


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
    scheduled_remaining_usd: float
    projection_usd: float
    """Month to date + in flight + the schedules' remaining firings + the plan floor."""
    budget_usd: float | None
    calibration_runs: int
    unknown_jobs: list[str] = field(default_factory=list)
    """Finished jobs whose running time the Jobs API did not say (no durations, no finish time):
    not costed, in no total above, listed so that they are not forgotten."""

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
) -> LedgerSummary:
    """The pane's numbers for the month containing `now`.

    `totals` (for that month) and `history` (what an unlabelled schedule's observed cost is read
    from) replace the fold over `entries` when the ledger answered them itself."""
    now = now or datetime.now(UTC)
    prices = prices or shipped_price_book()
    month = month_of(now)
    if calibration is None:
        calibration, _ = estimate_calibration(entries)
    if totals is None or totals.month != month:
        totals = spend_totals(entries, month)
    history = entries if history is None else history
    tenants, by_month = totals.tenants, totals.by_month
    mtd, wasted, wasted_runs = totals.month_to_date, totals.wasted, totals.wasted_runs
    in_flight = 0.0
    for job in active_jobs:
        secs, _ = running_seconds_of(job, now)
        flavor = flavor_of(job)
        if secs is not None and flavor in prices:
            in_flight += job_cost(secs, flavor, prices, timeout_s=run_limit_seconds(job),
                                  exposed_ports=exposed_ports_of(job))
    observed = ObservedCosts(history)
    forecasts = [
        f
        for sj in scheduled_jobs
        if (f := forecast_schedule(sj, now, prices, calibration=calibration, history=observed))
        is not None
    ]
    remaining = sum(f.remaining_usd for f in forecasts)
    floor = plan_floor_usd(plan, seats) if plan in PLANS else 0.0
    return LedgerSummary(
        month=month,
        entries=totals.entries,
        month_to_date_usd=mtd,
        in_flight_usd=in_flight,
        by_tenant=sorted(
            (TenantSpend(name, int(v[0]), v[1], v[2], v[3]) for name, v in tenants.items()),
            key=lambda t: (-t.month_usd, -t.total_usd, t.tenant),
        ),
        by_month=dict(sorted(by_month.items())),
        wasted_usd=wasted,
        wasted_runs=wasted_runs,
        plan=plan,
        seats=seats,
        plan_floor_usd=floor,
        schedules=sorted(forecasts, key=lambda f: (-f.remaining_usd, f.tenant)),
        scheduled_remaining_usd=remaining,
        projection_usd=mtd + in_flight + remaining + floor,
        budget_usd=budget_usd,
        calibration_runs=calibration.runs,
        unknown_jobs=list(totals.unknown),
    )
