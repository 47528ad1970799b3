"""What the scheduled training fleet costs per month, for the what-if explorer's "current" column.

Schedule by schedule (tenants may differ): each schedule's $/month (`console.money`, what its
fleet row says), and the same calibrated by the ledger's runs; and one representative scenario
to start the what-if from.
Every training kind counts (`kinds.TRAINING_KINDS`); the builder model's schedule is its own
part (`builder_usd`), costed with its own size, flavor and cadence (reference §4(a)), and it is the
representative scenario's builder rather than one more tenant.

Imports the entries, console.costs and console.prices: no SQLite, no Textual, no console.ui or
console.server, no network, no training stack.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console.costs import Calibration, RunSpec, estimate_run
from console.cron import normalize_cron
from console.inputs import CostInputError
from console.ledger.entries import NO_TENANT
from console.money import run_request, schedule_money
from console.prices import PLANS, PriceBook, plan_floor_usd, shipped_price_book
from console.vram import DEFAULT_BATCH_SIZE


@dataclass(frozen=True)
class FleetCosts:
    """What the scheduled fleet costs per month, schedule by schedule (tenants may differ)."""

    tenants: int
    schedules: int
    runs_per_month: float
    gpu_usd: float
    """Training runs per month x their heuristic cost, summed over the schedules."""
    gpu_calibrated_usd: float
    """The same with the ledger's calibration factors."""
    plan_floor_usd: float
    representative: Any
    """A one-recipe `scenario.Scenario` close to the fleet (the what-if's starting point), with the
    builder model as its builder when there is one."""
    builder_usd: float = 0.0
    """The builder model's part of `gpu_usd`: its runs per month x its own run's cost."""
    builder_calibrated_usd: float = 0.0
    builder_schedules: int = 0

    @property
    def tenants_usd(self) -> float:
        return self.gpu_usd - self.builder_usd

    @property
    def monthly_usd(self) -> float:
        return self.gpu_usd + self.plan_floor_usd

    @property
    def monthly_calibrated_usd(self) -> float:
        return self.gpu_calibrated_usd + self.plan_floor_usd


def _most_common(values: Sequence[Any], default: Any) -> Any:
    if not values:
        return default
    counts: dict[Any, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return max(counts, key=lambda v: (counts[v], -values.index(v)))


def _median(values: Sequence[float], default: float) -> float:
    if not values:
        return default
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def fleet_costs(
    scheduled_jobs: Iterable[Any],
    *,
    plan: str = "pro",
    seats: int = 1,
    default_flavor: str = "l4x1",
    prices: PriceBook | None = None,
    calibration: Calibration | None = None,
    timeout_buffer: float | None = None,
    now: datetime | None = None,
) -> FleetCosts:
    """The scheduled training fleet's monthly cost and a representative scenario for the what-if:
    each schedule's $/month is `console.money`'s (what its fleet row shows)."""
    from console.scenario import Scenario

    prices = prices or shipped_price_book()
    tenants: set[str] = set()
    specs: list[RunSpec] = []
    cadences: list[str] = []
    rpm_total = gpu = gpu_cal = 0.0
    builder_usd = builder_cal = 0.0
    builder: tuple[RunSpec, str] | None = None
    builders = 0
    n = 0
    now = now or datetime.now(UTC)
    for sj in scheduled_jobs:
        req = run_request(sj)
        if req is None or getattr(sj, "suspend", False):
            continue  # a suspended schedule adds $0 (console.money)
        money = schedule_money(sj, now, prices)
        if money is None or not money.known:
            continue
        run = req.run_spec()
        try:
            cadence = normalize_cron(getattr(sj, "schedule", "") or "")
            factor = calibration.factor_for(run.flavor) if calibration and calibration.runs else 1.0
            cal = estimate_run(run, prices, calibration_factor=factor).cost_usd * money.runs_per_month
        except CostInputError:
            continue
        base = money.month_usd
        n += 1
        rpm_total += money.runs_per_month
        gpu += base
        gpu_cal += cal
        if req.kind == "builder":
            builders += 1
            builder_usd += base
            builder_cal += cal
            builder = builder or (run, cadence)
            continue
        tenants.add(req.tenant or NO_TENANT)
        specs.append(run)
        cadences.append(cadence)
    floor = plan_floor_usd(plan, seats) if plan in PLANS else 0.0
    kwargs: dict[str, Any] = {}
    if timeout_buffer is not None:
        kwargs["timeout_buffer"] = timeout_buffer
    if builder is not None:
        kwargs["builder"], kwargs["builder_cadence"] = builder
    representative = Scenario(
        tenants=max(1, len(tenants)),
        cadence=_most_common(cadences, "weekly"),
        run=RunSpec(
            _median([s.model_b for s in specs], 3.0),
            int(_median([float(s.examples) for s in specs], 1000.0)),
            _median([s.epochs for s in specs], 3.0),
            _most_common([s.flavor for s in specs], default_flavor),
            _most_common([s.unsloth for s in specs], False),
            _most_common([s.max_steps for s in specs], None),
            _most_common([s.batch_size for s in specs], DEFAULT_BATCH_SIZE),
        ),
        plan=plan if plan in PLANS else "pro",
        seats=seats,
        **kwargs,
    )
    return FleetCosts(
        len(tenants), n, rpm_total, gpu, gpu_cal, floor, representative, builder_usd, builder_cal, builders
    )
