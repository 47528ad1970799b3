"""What a fleet costs a month under stated assumptions: the what-if's model.

A :class:`Scenario` (N tenants on one recipe and cadence, an optional builder model, a plan and its
seats) is priced by :func:`project`: tenants x runs a month x `costs.estimate_run`'s cost of one
run, + the builder, + the plan floor (reference §3, §4). :func:`fleet_projection` is the same sum
over a fleet's own (run, cron) pairs, fast enough to recompute on every keystroke. Every cost comes
from `console.costs`, the one cost model; no UI imports, no network.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from console.costs import Calibration, Estimate, RunSpec, estimate_run, factor_for, timeout_rule
from console.cron import normalize_cron, runs_per_month
from console.inputs import LIMITS, CostInputError, check_range
from console.prices import (
    BASE_HOURS_PER_B_PER_1K_EXAMPLES,
    DEFAULT_TIMEOUT_BUFFER,
    DEFAULT_TIMEOUT_OVERHEAD_S,
    PLANS,
    UNSLOTH_SPEEDUP,
    PriceBook,
    plan_floor_usd,
    shipped_price_book,
)


def fleet_projection(
    fleet: Iterable[tuple[RunSpec, str]],
    prices: PriceBook | None = None,
    *,
    epochs_delta: float = 0.0,
    calibration: Calibration | None = None,
) -> float:
    """A fleet's monthly cost: each tenant's run (`estimate_run`'s cost) x its cron's runs per
    month, summed over (run, cron) pairs: what the what-if recomputes when one assumption moves
    (`epochs_delta`: every run's epochs moved by that much).

    The same number as calling `estimate_run` per tenant (the same arithmetic in the same order;
    the same refusals), without building an `Estimate` per tenant: prices, multipliers and runs
    per month are read once per flavor and cron, so 10,000 tenants take a few milliseconds.
    """
    prices = prices or shipped_price_book()
    flavors: dict[str, tuple[float, float, float]] = {}
    rates: dict[str, float] = {}
    total = 0.0
    m_lo, m_hi = LIMITS["model_b"]
    x_lo, x_hi = LIMITS["examples"]
    e_lo, e_hi = LIMITS["epochs"]
    numbers = (int, float)
    for spec, cron in fleet:
        model_b, examples, epochs = spec.model_b, spec.examples, spec.epochs + epochs_delta
        if not (
            type(model_b) in numbers and m_lo <= model_b <= m_hi
            and type(examples) in numbers and x_lo <= examples <= x_hi
            and type(epochs) in numbers and e_lo <= epochs <= e_hi
            and spec.max_steps is None
        ):  # anything unusual (or a run counted in steps): the full checks, which say why
            RunSpec(model_b, examples, epochs, spec.flavor, spec.unsloth, spec.max_steps, spec.batch_size).validate()
        known = flavors.get(spec.flavor)
        if known is None:
            unit = estimate_run(RunSpec(1.0, 1000, 1.0, spec.flavor), prices)
            factor = factor_for(calibration, spec.flavor)
            if not math.isfinite(factor) or factor <= 0:
                raise CostInputError(f"calibration factor must be positive, got {factor!r}")
            known = flavors[spec.flavor] = (unit.multiplier, factor, unit.price_per_hour)
        rate = rates.get(cron)
        if rate is None:
            rate = rates[cron] = runs_per_month(cron)
        multiplier, factor, price = known
        # estimate_run's arithmetic, in its order
        hours = BASE_HOURS_PER_B_PER_1K_EXAMPLES * model_b * (examples / 1000.0) * epochs
        if spec.max_steps:
            hours = BASE_HOURS_PER_B_PER_1K_EXAMPLES * model_b * (spec.max_steps * spec.batch_size / 1000.0)
        hours = hours * multiplier * factor
        if spec.unsloth:
            hours /= UNSLOTH_SPEEDUP
        total += hours * price * rate
    return total


@dataclass(frozen=True)
class Scenario:
    """A fleet's assumptions: N tenants on one recipe and cadence, an optional builder model, a plan."""

    tenants: int = 1
    cadence: str = "weekly"
    run: RunSpec = field(default_factory=lambda: RunSpec(3, 1000, 3, "l4x1"))
    plan: str = "pro"
    seats: int = 1
    builder: RunSpec | None = None
    builder_cadence: str = "weekly"
    timeout_buffer: float = DEFAULT_TIMEOUT_BUFFER
    timeout_overhead_s: float = DEFAULT_TIMEOUT_OVERHEAD_S


@dataclass(frozen=True)
class Projection:
    scenario: Scenario
    per_run: Estimate
    runs_per_month: float
    tenants_usd: float
    builder_usd: float
    builder_per_run: Estimate | None
    plan_floor_usd: float
    monthly_usd: float
    plan_can_run_jobs: bool
    price_source: str

    def to_dict(self) -> dict:
        s = self.scenario
        return {
            "tenants": s.tenants,
            "cadence": normalize_cron(s.cadence),
            "model_b": s.run.model_b,
            "examples": s.run.examples,
            "epochs": s.run.epochs,
            "flavor": s.run.flavor,
            "unsloth": s.run.unsloth,
            "max_steps": s.run.max_steps,
            "batch_size": s.run.batch_size,
            "plan": s.plan,
            "seats": s.seats,
            "hours_per_run": self.per_run.hours,
            "cost_per_run_usd": self.per_run.cost_usd,
            "timeout_seconds": self.per_run.timeout_seconds,
            "timeout_rule": timeout_rule(self.per_run, s.timeout_buffer),
            "timeout_overhead_s": self.per_run.timeout_overhead_s,
            "timeout_buffer": s.timeout_buffer,
            "price_per_hour": self.per_run.price_per_hour,
            "multiplier": self.per_run.multiplier,
            "multiplier_source": self.per_run.multiplier_source,
            "calibration_factor": self.per_run.calibration_factor,
            "runs_per_month": self.runs_per_month,
            "tenants_monthly_usd": self.tenants_usd,
            "builder_monthly_usd": self.builder_usd,
            "plan_floor_usd": self.plan_floor_usd,
            "monthly_usd": self.monthly_usd,
            "plan_can_run_jobs": self.plan_can_run_jobs,
            "prices": self.price_source,
        }


def project(
    scenario: Scenario,
    prices: PriceBook | None = None,
    *,
    calibration: Calibration | None = None,
) -> Projection:
    """tenants x runs/month x cost/run + builder + plan floor (seats x plan price)."""
    prices = prices or shipped_price_book()
    check_range("tenants", scenario.tenants)
    check_range("seats", scenario.seats)
    if scenario.plan not in PLANS:
        raise CostInputError(f"unknown plan {scenario.plan!r}; plans: {', '.join(PLANS)}")
    per_run = estimate_run(
        scenario.run,
        prices,
        timeout_buffer=scenario.timeout_buffer,
        timeout_overhead_s=scenario.timeout_overhead_s,
        calibration_factor=factor_for(calibration, scenario.run.flavor),
    )
    rpm = runs_per_month(scenario.cadence)
    tenants_usd = scenario.tenants * rpm * per_run.cost_usd
    builder_est = None
    builder_usd = 0.0
    if scenario.builder is not None:
        builder_est = estimate_run(
            scenario.builder,
            prices,
            timeout_buffer=scenario.timeout_buffer,
            timeout_overhead_s=scenario.timeout_overhead_s,
            calibration_factor=factor_for(calibration, scenario.builder.flavor),
        )
        builder_usd = runs_per_month(scenario.builder_cadence) * builder_est.cost_usd
    floor = plan_floor_usd(scenario.plan, scenario.seats)
    return Projection(
        scenario=scenario,
        per_run=per_run,
        runs_per_month=rpm,
        tenants_usd=tenants_usd,
        builder_usd=builder_usd,
        builder_per_run=builder_est,
        plan_floor_usd=floor,
        monthly_usd=tenants_usd + builder_usd + floor,
        plan_can_run_jobs=PLANS[scenario.plan].can_run_jobs,
        price_source=prices.describe(),
    )


def plan_refusal(plan: str) -> str | None:
    """Why this plan cannot run Jobs, or None when it can (reference §3 "Paid-plan requirement")."""
    p = PLANS.get(plan)
    if p is None:
        return f"unknown plan {plan!r}; plans: {', '.join(PLANS)}"
    if p.can_run_jobs:
        return None
    return (
        f"the {plan} plan cannot run HF Jobs (they need a positive credit balance, in practice "
        "PRO, Team or Enterprise); set plan = \"pro\" or higher in the config"
    )
