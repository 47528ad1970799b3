"""The cost model: per-run estimates, padded timeouts, runs per month from cron, fleet projections
and calibration from real runs.

The heuristic is the reference's (§4): hours = 0.1 x model_B x (examples / 1000) x epochs x
hw_multiplier, cost = hours x $/hr; Unsloth is about 2x faster; every submission's timeout is the
estimate x the buffer (1.3). Runs per month come from the cron expression itself. No UI imports,
no network: fast enough to recompute a 1,000-tenant fleet on every keystroke.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from console import vram
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

# An average Gregorian month, in seconds: 365.2425 days / 12.
MONTH_SECONDS = 365.2425 * 86400 / 12

CADENCE_ALIASES: dict[str, str] = {
    "hourly": "0 * * * *",
    "daily": "0 0 * * *",
    "nightly": "0 0 * * *",
    "weekly": "0 0 * * 0",
    "monthly": "0 0 1 * *",
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}

# Limits on what-if and submission inputs: beyond them a number is a typo, not a plan.
LIMITS = {
    "model_b": (0.001, 2000.0),
    "examples": (1, 100_000_000),
    "epochs": (0.01, 1000.0),
    "tenants": (0, 1_000_000),
    "seats": (1, 100_000),
}
MAX_TIMEOUT_SECONDS = 7 * 86400  # a week; longer is certainly a mistake for a training job


class CostInputError(ValueError):
    """An input the cost model refuses; the message says which and what is expected."""


def _show_number(value: object) -> str:
    """A value for a message; a huge integer (a TOML file may hold any) is not spelled out."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
        return f"a {int(value.bit_length() * 0.30103) + 1}-digit number"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _finite_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)  # any int: compared exactly below


def check_range(name: str, value: float) -> float:
    lo, hi = LIMITS[name]
    if not _finite_number(value):
        raise CostInputError(
            f"{name} must be a number from {lo:g} to {hi:g}, got {_show_number(value)}"
        )
    if not lo <= value <= hi:
        raise CostInputError(f"{name} must be from {lo:g} to {hi:g}, got {_show_number(value)}")
    return value


# ---------------------------------------------------------------------------------------------
# Timeouts


_TIMEOUT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*([smhd]?)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_timeout(value: int | float | str) -> int:
    """Seconds from an HF Jobs timeout: 7200, "90m", "2h", "1.5h", "30s", "1d".

    Refuses zero, negatives, non-numbers and anything over a week, with a message saying why.
    """
    if isinstance(value, bool):
        raise CostInputError(f"timeout must be seconds or a duration like 90m / 2h, got {value!r}")
    if isinstance(value, int):
        if not 0 < value <= MAX_TIMEOUT_SECONDS:  # exact for any int, however large
            raise CostInputError(
                f"timeout must be from 1 second to 7 days, got {_show_number(value)}"
            )
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CostInputError(f"timeout must be a finite duration, got {value!r}")
        seconds = value
    elif isinstance(value, str):
        m = _TIMEOUT_RE.match(value)
        if not m:
            raise CostInputError(
                f"timeout {value!r} is not a duration: use seconds (7200) or a number with "
                "s, m, h or d (90m, 2h, 1.5h)"
            )
        seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2).lower()]
    else:
        raise CostInputError(
            f"timeout must be seconds or a duration like 90m / 2h, got {_show_number(value)}"
        )
    if seconds <= 0:
        raise CostInputError(f"timeout must be longer than zero, got {_show_number(value)}")
    if seconds > MAX_TIMEOUT_SECONDS:
        raise CostInputError(f"timeout {_show_number(value)} is over the 7-day limit")
    return max(1, math.ceil(seconds))


def format_duration(seconds: float) -> str:
    """1h25m, 45m, 30s, 2d3h: short and exact to the minute (seconds under 10 minutes)."""
    seconds = max(0, int(round(seconds)))
    days, rem = divmod(seconds, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes:02d}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs:02d}s" if secs and minutes < 10 else f"{minutes}m"
    return f"{secs}s"


MAX_TIMEOUT_OVERHEAD_S = 6 * 3600


def padded_timeout_seconds(
    hours: float, buffer: float = DEFAULT_TIMEOUT_BUFFER, overhead_s: float = DEFAULT_TIMEOUT_OVERHEAD_S
) -> int:
    """The timeout a submission sets: (estimated training time + the fixed overhead of install,
    downloads and push) x buffer, rounded up to a whole minute."""
    if not math.isfinite(buffer) or not 1.0 <= buffer <= 5.0:
        raise CostInputError(f"timeout buffer must be from 1.0 to 5.0, got {buffer!r}")
    if not _finite_number(overhead_s) or not 0 <= overhead_s <= MAX_TIMEOUT_OVERHEAD_S:
        raise CostInputError(
            f"timeout overhead must be from 0 to {MAX_TIMEOUT_OVERHEAD_S} seconds, got {_show_number(overhead_s)}"
        )
    seconds = (hours * 3600 + overhead_s) * buffer
    return max(60, math.ceil(seconds / 60) * 60)


# ---------------------------------------------------------------------------------------------
# Per-run estimate


@dataclass(frozen=True)
class RunSpec:
    """What one training run is: the inputs of the heuristic."""

    model_b: float
    examples: int
    epochs: float
    flavor: str
    unsloth: bool = False

    def validate(self) -> RunSpec:
        check_range("model_b", self.model_b)
        check_range("examples", self.examples)
        check_range("epochs", self.epochs)
        return self


@dataclass(frozen=True)
class Estimate:
    flavor: str
    hours: float
    cost_usd: float
    timeout_seconds: int
    price_per_hour: float
    multiplier: float
    multiplier_source: str
    unsloth: bool
    calibration_factor: float = 1.0  # observed / heuristic; 1.0 = the reference heuristic as is
    timeout_overhead_s: float = DEFAULT_TIMEOUT_OVERHEAD_S
    """Seconds added to the estimate before the buffer (install, downloads, Hub push)."""
    timeout_basis_hours: float = 0.0
    """The training time the timeout is padded from: the estimate without any Unsloth speed-up
    (a timeout never assumes a speed-up the job may not get; a longer one costs nothing)."""

    def to_dict(self) -> dict:
        return asdict(self)


def estimate_run(
    spec: RunSpec,
    prices: PriceBook | None = None,
    *,
    timeout_buffer: float = DEFAULT_TIMEOUT_BUFFER,
    timeout_overhead_s: float = DEFAULT_TIMEOUT_OVERHEAD_S,
    calibration_factor: float = 1.0,
) -> Estimate:
    """Hours, cost and padded timeout of one run (reference §4 heuristic).

    Unsloth (~2x faster, reference §2) halves the hours and the cost, not the timeout: the timeout
    is (the estimate without Unsloth + `timeout_overhead_s`) x `timeout_buffer`."""
    spec.validate()
    prices = prices or shipped_price_book()
    try:
        flavor = prices.get(spec.flavor)
    except KeyError as exc:
        raise CostInputError(str(exc.args[0])) from None
    if not flavor.is_gpu:
        raise CostInputError(
            f"{spec.flavor} is a CPU flavor: the training heuristic covers GPU flavors only "
            "(CPU flavors are for dataset preflight, ~$0.01)"
        )
    try:
        multiplier, source = prices.multiplier(spec.flavor)
    except KeyError as exc:
        raise CostInputError(str(exc.args[0])) from None
    if not math.isfinite(calibration_factor) or calibration_factor <= 0:
        raise CostInputError(f"calibration factor must be positive, got {calibration_factor!r}")
    hours = (
        BASE_HOURS_PER_B_PER_1K_EXAMPLES
        * spec.model_b
        * (spec.examples / 1000.0)
        * spec.epochs
        * multiplier
        * calibration_factor
    )
    basis = hours
    if spec.unsloth:
        hours /= UNSLOTH_SPEEDUP
    return Estimate(
        flavor=spec.flavor,
        hours=hours,
        cost_usd=hours * flavor.price_per_hour,  # an expectation, as the reference's §4 tables compute it
        timeout_seconds=padded_timeout_seconds(basis, timeout_buffer, timeout_overhead_s),
        price_per_hour=flavor.price_per_hour,
        multiplier=multiplier,
        multiplier_source=source,
        unsloth=spec.unsloth,
        calibration_factor=calibration_factor,
        timeout_overhead_s=timeout_overhead_s,
        timeout_basis_hours=basis,
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
        ):  # anything unusual: the full checks, which say why
            RunSpec(model_b, examples, epochs, spec.flavor, spec.unsloth).validate()
        known = flavors.get(spec.flavor)
        if known is None:
            unit = estimate_run(RunSpec(1.0, 1000, 1.0, spec.flavor), prices)
            factor = _factor(calibration, spec.flavor)
            if not math.isfinite(factor) or factor <= 0:
                raise CostInputError(f"calibration factor must be positive, got {factor!r}")
            known = flavors[spec.flavor] = (unit.multiplier, factor, unit.price_per_hour)
        rate = rates.get(cron)
        if rate is None:
            rate = rates[cron] = runs_per_month(cron)
        multiplier, factor, price = known
        # estimate_run's arithmetic, in its order
        hours = BASE_HOURS_PER_B_PER_1K_EXAMPLES * model_b * (examples / 1000.0) * epochs * multiplier * factor
        if spec.unsloth:
            hours /= UNSLOTH_SPEEDUP
        total += hours * price * rate
    return total


def timeout_rule(est: Estimate, buffer: float) -> str:
    """The padded timeout in words: `(1h12m training + 5m overhead) x 1.3 = 1h40m`."""
    unsloth = " (without Unsloth)" if est.unsloth else ""
    return (
        f"({format_duration(est.timeout_basis_hours * 3600)} training{unsloth} + "
        f"{format_duration(est.timeout_overhead_s)} set-up and push) x {buffer:g} = "
        f"{format_duration(est.timeout_seconds)}"
    )


def billed_seconds(running_seconds: float, granularity: str = "minute") -> float:
    """The running time a bill counts: rounded up to whole minutes ("minute", reference §1: "per
    minute while Starting/Running"), or exact ("second"). Nothing run, nothing billed."""
    seconds = max(0.0, running_seconds) if math.isfinite(running_seconds) else 0.0
    if granularity == "second":
        return seconds
    return math.ceil(seconds / 60 - 1e-9) * 60.0  # 1080.0000000000002 s is 18 minutes, not 19


def job_cost(running_seconds: float, flavor: str, prices: PriceBook | None = None) -> float:
    """What a job that ran this long on `flavor` costs: the one function every cost of a real job
    comes from (jobs table, job details, cancel confirmation, ledger entries, money in flight,
    `console ledger`, the Costs tab). The price book says the flavor's price and how running time
    is billed (`billing.granularity`). Estimates of runs not yet made are `estimate_run`'s hours x
    the same price, unrounded, as the reference's §4 tables compute them."""
    prices = prices or shipped_price_book()
    return billed_seconds(running_seconds, prices.granularity) / 3600.0 * prices.price_per_hour(flavor)


def cheaper_flavors_that_fit(
    spec: RunSpec,
    prices: PriceBook | None = None,
    *,
    calibration: Calibration | None = None,
    run: vram.RunShape | None = None,
) -> list[Estimate]:
    """GPU flavors whose GPU memory holds the run (`console.vram`; `run` says how it trains, by
    default LoRA of a `spec.model_b` model at the recipes' batch and length), cheapest run first,
    cheaper than `spec`'s."""
    prices = prices or shipped_price_book()
    current = estimate_run(spec, prices, calibration_factor=_factor(calibration, spec.flavor))
    run = run or vram.RunShape(spec.model_b, unsloth=spec.unsloth)
    fitting = {f.flavor for f in vram.fitting_flavors(run, prices)}
    out = []
    for fl in prices.gpu_flavors():
        if fl.name == spec.flavor or fl.name not in fitting:
            continue
        try:
            est = estimate_run(
                RunSpec(spec.model_b, spec.examples, spec.epochs, fl.name, spec.unsloth),
                prices,
                calibration_factor=_factor(calibration, fl.name),
            )
        except CostInputError:
            continue
        if est.cost_usd < current.cost_usd - 1e-12:
            out.append(est)
    return sorted(out, key=lambda e: (e.cost_usd, e.hours))


def flavor_fits(flavor: str, model_b: float, prices: PriceBook | None = None, *, full: bool = False) -> bool:
    """Whether LoRA (or a full fine-tune) of a `model_b` model fits the flavor's GPU memory."""
    prices = prices or shipped_price_book()
    run = vram.RunShape(model_b, method="full" if full else "lora")
    return vram.fit(run, prices.get(flavor)).fits


# ---------------------------------------------------------------------------------------------
# Cron


def normalize_cron(expr: str) -> str:
    """A cadence word (weekly, monthly, daily, @weekly...) or a cron expression, checked."""
    if not isinstance(expr, str) or not expr.strip():
        raise CostInputError("cadence must be a cron expression (e.g. '0 3 * * 1') or weekly / monthly")
    return _normalize_cron(expr)


@lru_cache(maxsize=4096)
def _normalize_cron(expr: str) -> str:
    text = " ".join(expr.split())
    text = CADENCE_ALIASES.get(text.lower(), text)
    fields = text.split(" ")
    if len(fields) != 5:
        raise CostInputError(
            f"cron {expr!r} must have 5 fields (minute hour day-of-month month day-of-week), "
            f"or be weekly / monthly / daily"
        )
    from croniter import croniter

    if not croniter.is_valid(text):
        raise CostInputError(f"cron {expr!r} is not a valid cron expression")
    try:
        croniter(text, datetime(2027, 1, 1, tzinfo=UTC)).get_next(datetime)
    except Exception:  # croniter raises several types for impossible schedules
        raise CostInputError(f"cron {expr!r} never fires") from None
    return text


_WINDOW_START = datetime(2027, 1, 1, tzinfo=UTC)
_WINDOW_DAYS = 4 * 365 + 1


@lru_cache(maxsize=4096)
def runs_per_month(expr: str) -> float:
    """Average runs per month of a cron expression, counted from the expression itself.

    Counts the firings over four years from 2027-01-01 (a whole leap cycle of weekdays is not
    needed for the averages to settle to well under 1%). Plain numeric fields are counted on the
    calendar, day by day (well under a millisecond for any schedule); `L` and `#` forms are
    counted by stepping through the firings.
    """
    text = normalize_cron(expr)
    end = _WINDOW_START + timedelta(days=_WINDOW_DAYS)
    if _calendar_fields(text) is None:
        return _rate_by_stepping(text, _WINDOW_START, end)
    count = count_firings(text, _WINDOW_START - timedelta(microseconds=1), end)
    return count / (_WINDOW_DAYS * 86400) * MONTH_SECONDS


def count_firings(expr: str, after: datetime, end: datetime) -> int:
    """How many times a cron fires after `after` (exclusive) and before `end` (exclusive), UTC.

    The same count as stepping croniter from `after`, but day by day on the calendar: a month's
    remaining runs of a every-15-minutes schedule cost a few dozen steps, not thousands.
    """
    text = normalize_cron(expr)
    after, end = after.astimezone(UTC), end.astimezone(UTC)
    if end <= after:
        return 0
    fields = _calendar_fields(text)
    if fields is None:
        from croniter import croniter

        it = croniter(text, after)
        count = 0
        while it.get_next(datetime) < end:
            count += 1
        return count
    slots, day_matches = fields
    count = 0
    day = after.date()
    last = end.date()
    one = timedelta(days=1)
    while day <= last:
        if day_matches(day):
            if day == after.date() or day == last:
                base = datetime(day.year, day.month, day.day, tzinfo=UTC)
                count += sum(1 for h, m in slots if after < base + timedelta(hours=h, minutes=m) < end)
            else:
                count += len(slots)
        day += one
    return count


@lru_cache(maxsize=4096)
def _calendar_fields(text: str) -> tuple[tuple[tuple[int, int], ...], Callable[[date], bool]] | None:
    """A normalized cron as its (hour, minute) slots and a day test, or None for the `L` and `#`
    forms that only croniter's stepping knows.

    Day matching follows cron (and croniter): when both day-of-month and day-of-week are
    restricted, a day matches if either does.
    """
    from croniter import croniter

    try:
        fields, nth = croniter.expand(text)
    except Exception:
        return None
    if nth or any(not isinstance(v, int) for f in fields for v in f if v != "*"):
        return None
    minutes, hours, doms, months, dows = fields
    mins = range(60) if minutes == ["*"] else sorted(set(minutes))
    hrs = range(24) if hours == ["*"] else sorted(set(hours))
    slots = tuple((h, m) for h in hrs for m in mins)
    dom_any, dow_any = doms == ["*"], dows == ["*"]
    dom_set, month_set = frozenset(doms), frozenset(months)
    dow_set = frozenset(d % 7 for d in dows) if not dow_any else frozenset()
    any_month = months == ["*"]
    either = not (dom_any or dow_any)

    def matches(day: date) -> bool:
        if not any_month and day.month not in month_set:
            return False
        dom_ok = dom_any or day.day in dom_set
        dow_ok = dow_any or (day.isoweekday() % 7) in dow_set
        return (dom_ok or dow_ok) if either else (dom_ok and dow_ok)

    return slots, matches


def _rate_by_stepping(text: str, start: datetime, end: datetime) -> float:
    """The rate from croniter's own firings: over the window, or over the first 5,000 firings."""
    from croniter import croniter

    it = croniter(text, start - timedelta(seconds=1))
    count = 0
    last = start
    while True:
        nxt = it.get_next(datetime)
        if nxt >= end:
            break
        count += 1
        last = nxt
        if count >= 5000:
            span = (last - start).total_seconds() or 1.0
            return count / span * MONTH_SECONDS
    return count / (end - start).total_seconds() * MONTH_SECONDS


def next_runs(expr: str, n: int = 3, after: datetime | None = None) -> list[datetime]:
    text = normalize_cron(expr)
    from croniter import croniter

    it = croniter(text, after or datetime.now(UTC))
    return [it.get_next(datetime) for _ in range(max(0, n))]


@lru_cache(maxsize=4096)
def describe_cron(expr: str) -> str:
    """The schedule in words, e.g. 'At 03:00, only on Monday'."""
    text = normalize_cron(expr)
    try:
        from cron_descriptor import Options, get_description

        opts = Options()
        opts.use_24hour_time_format = True
        return get_description(text, opts)
    except Exception:
        return text


# ---------------------------------------------------------------------------------------------
# Fleet projection


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
        calibration_factor=_factor(calibration, scenario.run.flavor),
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
            calibration_factor=_factor(calibration, scenario.builder.flavor),
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


# ---------------------------------------------------------------------------------------------
# Calibration


@dataclass(frozen=True)
class Observation:
    """A real run: what it was and how long it ran (billed seconds)."""

    flavor: str
    model_b: float
    examples: int
    epochs: float
    running_seconds: float
    unsloth: bool = False


@dataclass(frozen=True)
class FlavorCalibration:
    flavor: str
    factor: float  # observed hours / heuristic hours (geometric mean over runs)
    runs: int
    heuristic_error_pct: float  # mean |heuristic - observed| / observed, in percent
    calibrated_error_pct: float  # the same after applying the factor


@dataclass(frozen=True)
class Calibration:
    per_flavor: dict[str, FlavorCalibration]
    overall_factor: float | None
    runs: int

    def factor_for(self, flavor: str) -> float:
        if flavor in self.per_flavor:
            return self.per_flavor[flavor].factor
        return self.overall_factor or 1.0


def _factor(calibration: Calibration | None, flavor: str) -> float:
    return 1.0 if calibration is None else calibration.factor_for(flavor)


def calibrate(observations: Iterable[Observation]) -> Calibration:
    """Fit, per flavor, the factor by which real running time differs from the heuristic.

    The factor is the geometric mean of observed / predicted (running time errors are multiplicative);
    a flavor with no runs of its own falls back to the fit over all runs.
    """
    by_flavor: dict[str, list[tuple[float, float]]] = {}
    for ob in observations:
        if ob.running_seconds <= 0:
            continue
        try:
            predicted = estimate_run(
                RunSpec(ob.model_b, int(ob.examples), ob.epochs, ob.flavor, ob.unsloth)
            ).hours
        except CostInputError:
            continue
        if predicted <= 0:
            continue
        by_flavor.setdefault(ob.flavor, []).append((ob.running_seconds / 3600.0, predicted))
    per: dict[str, FlavorCalibration] = {}
    all_logs: list[float] = []
    for flavor, pairs in by_flavor.items():
        logs = [math.log(obs / pred) for obs, pred in pairs]
        all_logs.extend(logs)
        factor = math.exp(sum(logs) / len(logs))
        per[flavor] = FlavorCalibration(
            flavor=flavor,
            factor=factor,
            runs=len(pairs),
            heuristic_error_pct=_mape(pairs, 1.0),
            calibrated_error_pct=_mape(pairs, factor),
        )
    overall = math.exp(sum(all_logs) / len(all_logs)) if all_logs else None
    return Calibration(per, overall, len(all_logs))


def _mape(pairs: Sequence[tuple[float, float]], factor: float) -> float:
    return 100.0 * sum(abs(pred * factor - obs) / obs for obs, pred in pairs) / len(pairs)
