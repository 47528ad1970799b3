"""The cost model: per-run estimates, padded timeouts, what a real job is billed, and calibration
from real runs. What a whole fleet costs a month under a what-if's assumptions is
`console.scenario`, built on :func:`estimate_run`.

The heuristic is the reference's (§4): hours = 0.1 x model_B x (examples / 1000) x epochs x
hw_multiplier, cost = hours x $/hr; Unsloth is about 2x faster; every submission's timeout is the
estimate x the buffer (1.3). Runs per month come from the cron expression itself
(`console.cron`); checked inputs and timeouts as people write them are `console.inputs`. No UI
imports, no network: fast enough to recompute a 1,000-tenant fleet on every keystroke.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from console import vram
from console.inputs import CostInputError, check_range, finite_number, format_duration, show_number
from console.kinds import GRPO_GENERATIONS, GRPO_WORK_PER_COMPLETION
from console.prices import (
    BASE_HOURS_PER_B_PER_1K_EXAMPLES,
    DEFAULT_TIMEOUT_BUFFER,
    DEFAULT_TIMEOUT_OVERHEAD_S,
    EXPOSED_PORT_PRICE_PER_HOUR,
    UNSLOTH_SPEEDUP,
    PriceBook,
    shipped_price_book,
)

# ---------------------------------------------------------------------------------------------
# Timeouts


MAX_TIMEOUT_OVERHEAD_S = 6 * 3600


def padded_timeout_seconds(
    hours: float, buffer: float = DEFAULT_TIMEOUT_BUFFER, overhead_s: float = DEFAULT_TIMEOUT_OVERHEAD_S
) -> int:
    """The timeout a submission sets: (estimated training time + the fixed overhead of install,
    downloads and push) x buffer, rounded up to a whole minute."""
    if not math.isfinite(buffer) or not 1.0 <= buffer <= 5.0:
        raise CostInputError(f"timeout buffer must be from 1.0 to 5.0, got {buffer!r}")
    if not finite_number(overhead_s) or not 0 <= overhead_s <= MAX_TIMEOUT_OVERHEAD_S:
        raise CostInputError(
            f"timeout overhead must be from 0 to {MAX_TIMEOUT_OVERHEAD_S} seconds, got {show_number(overhead_s)}"
        )
    seconds = (hours * 3600 + overhead_s) * buffer
    return max(60, math.ceil(seconds / 60) * 60)


# ---------------------------------------------------------------------------------------------
# Per-run estimate


@dataclass(frozen=True)
class RunSpec:
    """What one training run is: the inputs of the heuristic.

    `max_steps` (when given) ends the run after that many optimizer steps of `batch_size` examples
    each, whatever the epochs say (the Trainer's `max_steps` overrides `num_train_epochs`): the run
    then passes max_steps x batch_size examples through the model, where the reference's §4
    heuristic counts examples x epochs (:meth:`examples_seen`)."""

    model_b: float
    examples: int
    epochs: float
    flavor: str
    unsloth: bool = False
    max_steps: int | None = None
    batch_size: int = vram.DEFAULT_BATCH_SIZE
    done_fraction: float = 0.0
    """The share already trained: a run resumed from a checkpoint trains only the rest."""
    kind: str = "sft"
    """What the run trains (`kinds.TRAINING_KINDS`): GRPO costs more per example (:meth:`work`)."""

    def validate(self) -> RunSpec:
        check_range("model_b", self.model_b)
        check_range("examples", self.examples)
        check_range("epochs", self.epochs)
        if self.max_steps is not None and (
            type(self.max_steps) is not int or not 1 <= self.max_steps <= 10_000_000
        ):
            raise CostInputError(f"max_steps must be a whole number from 1 to 10000000, got {self.max_steps!r}")
        if not (isinstance(self.done_fraction, int | float) and 0.0 <= self.done_fraction < 1.0):
            raise CostInputError(f"done fraction must be from 0 to below 1, got {self.done_fraction!r}")
        if type(self.batch_size) is not int or not 1 <= self.batch_size <= 65536:
            raise CostInputError(f"batch size must be a whole number from 1 to 65536, got {self.batch_size!r}")
        return self

    def work(self) -> float:
        """The heuristic's examples term in SFT examples' worth of GPU time. The §4 heuristic is
        per SFT example (one forward and backward pass); a GRPO example is a prompt sampled
        :data:`GRPO_GENERATIONS` times, token by token, each completion then trained on, so each
        completion counts :data:`GRPO_WORK_PER_COMPLETION` (its generation about one SFT example,
        its training pass one more): 4 x 2 = 8 per prompt. A GRPO run's `max_steps` batches count
        completions, not prompts (`grpo_lora.py`). Every other kind counts its examples once."""
        if self.kind != "grpo":
            return self.examples_seen()
        completions = (self.max_steps * self.batch_size if self.max_steps
                       else self.examples * self.epochs * GRPO_GENERATIONS)
        return completions * GRPO_WORK_PER_COMPLETION

    def examples_seen(self) -> float:
        """Examples the run trains on, repeats counted: examples x epochs, or with `max_steps`
        max_steps x batch_size (the heuristic's `examples/1000 x epochs` term)."""
        if self.max_steps:
            return float(self.max_steps * self.batch_size)
        return self.examples * self.epochs


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
    # examples x epochs, or max_steps x batch when the run stops there; GRPO's generation counted
    hours = BASE_HOURS_PER_B_PER_1K_EXAMPLES * spec.model_b * (spec.work() / 1000.0)
    hours = hours * multiplier * calibration_factor * (1.0 - spec.done_fraction)
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



def timeout_rule(est: Estimate, buffer: float) -> str:
    """The padded timeout in words: `(1h12m training + 5m overhead) x 1.3 = 1h40m`."""
    unsloth = " (without Unsloth)" if est.unsloth else ""
    return (
        f"({format_duration(est.timeout_basis_hours * 3600)} training{unsloth} + "
        f"{format_duration(est.timeout_overhead_s)} set-up and push) x {buffer:g} = "
        f"{format_duration(est.timeout_seconds)}"
    )


def resumed_timeout(
    est: Estimate, buffer: float, *, steps_done: int, steps_total: int | None, ran_seconds: float | None
) -> tuple[int, str]:
    """The timeout of a run resumed from a checkpoint, and its rule in words: the padded estimate
    of what is left (`est`, from a RunSpec with its `done_fraction`), or, when the killed run showed
    itself slower, what is left at the pace it measured (its running time per step, set-up
    included), padded the same way: a resumed run is never given the timeout that just killed it."""
    rule = timeout_rule(est, buffer)
    timeout = est.timeout_seconds
    if steps_total and ran_seconds and steps_done > 0 and steps_total > steps_done:
        left_h = (steps_total - steps_done) * (ran_seconds / steps_done) / 3600
        measured = padded_timeout_seconds(left_h, buffer, est.timeout_overhead_s)
        if measured > timeout:
            timeout = measured
            rule = (
                f"({format_duration(left_h * 3600)} for steps {steps_done + 1}-{steps_total} at the "
                f"{format_duration(ran_seconds)}/{steps_done} steps the killed run took + "
                f"{format_duration(est.timeout_overhead_s)} set-up and push) x {buffer:g} = {format_duration(timeout)}"
            )
    return timeout, rule


def billed_seconds(running_seconds: float, granularity: str = "minute", *, timeout_s: float | None = None) -> float:
    """The running time a bill counts: rounded up to whole minutes ("minute", reference §3: "Billed
    per minute, only while Starting/Running"), or exact ("second"). Nothing run, nothing billed.

    `timeout_s` (the most the job may run: its timeout x its attempts): a job never runs past its
    timeout, the Jobs API kills it there (reference §1: "Reaching timeout kills the job"), so a
    running time measured past it (a kill seen a second late: 2m01s on a 2m timeout) is billed as
    the timeout, and only then rounded up: 2 minutes, not 3."""
    seconds = max(0.0, running_seconds) if math.isfinite(running_seconds) else 0.0
    if timeout_s is not None and math.isfinite(timeout_s) and timeout_s > 0:
        seconds = min(seconds, float(timeout_s))
    if granularity == "second":
        return seconds
    return math.ceil(seconds / 60 - 1e-9) * 60.0  # 1080.0000000000002 s is 18 minutes, not 19


def job_cost(
    running_seconds: float,
    flavor: str,
    prices: PriceBook | None = None,
    *,
    timeout_s: float | None = None,
    exposed_ports: int = 0,
) -> float:
    """What a job that ran this long on `flavor` costs: the one function every cost of a real job
    comes from (jobs table, job details, cancel confirmation, ledger entries, money in flight,
    `console ledger`, the Costs tab). The price book says the flavor's price and how running time
    is billed (`billing.granularity`); the running time billed is at most `timeout_s`
    (:func:`billed_seconds`). Each of the job's `exposed_ports` adds a flat
    `EXPOSED_PORT_PRICE_PER_HOUR` for the same billed time (reference §3: "Exposed ports add a flat
    $0.01/hr"). Estimates of runs not yet made are `estimate_run`'s hours x the same price,
    unrounded, as the reference's §4 tables compute them."""
    prices = prices or shipped_price_book()
    per_hour = prices.price_per_hour(flavor) + max(0, int(exposed_ports)) * EXPOSED_PORT_PRICE_PER_HOUR
    return billed_seconds(running_seconds, prices.granularity, timeout_s=timeout_s) / 3600.0 * per_hour


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
    current = estimate_run(spec, prices, calibration_factor=factor_for(calibration, spec.flavor))
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
                calibration_factor=factor_for(calibration, fl.name),
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
    max_steps: int | None = None
    batch_size: int = vram.DEFAULT_BATCH_SIZE


@dataclass(frozen=True)
class FlavorCalibration:
    flavor: str
    factor: float  # observed hours / heuristic hours (geometric mean over runs)
    runs: int
    heuristic_error_pct: float  # mean |heuristic - observed| / observed, in percent
    calibrated_error_pct: float  # the same after applying the factor
    low: float = 0.0  # the smallest observed / heuristic ratio of one run
    high: float = 0.0  # the largest


@dataclass(frozen=True)
class Calibration:
    per_flavor: dict[str, FlavorCalibration]
    overall_factor: float | None
    runs: int

    low: float = 0.0
    high: float = 0.0
    """The smallest and largest observed / heuristic ratio over all runs."""

    def factor_for(self, flavor: str) -> float:
        if flavor in self.per_flavor:
            return self.per_flavor[flavor].factor
        return self.overall_factor or 1.0

    def spread(self) -> str:
        """How far apart all the runs are, in words (`runs x0.12 to x0.81`); empty for fewer than two."""
        return f"runs x{self.low:.3g} to x{self.high:.3g}" if self.runs >= 2 else ""

    def spread_for(self, flavor: str) -> str:
        """How far apart the runs behind `flavor`'s factor are, in words: `runs x0.12 to x0.81`
        (a factor blended from runs that far apart predicts neither); empty for fewer than two."""
        own = self.per_flavor.get(flavor)
        runs, low, high = (own.runs, own.low, own.high) if own else (self.runs, self.low, self.high)
        if runs < 2:
            return ""
        return f"runs x{low:.3g} to x{high:.3g}"


def factor_for(calibration: Calibration | None, flavor: str) -> float:
    """The calibration factor of runs on `flavor` (1.0: the reference heuristic as is)."""
    return 1.0 if calibration is None else calibration.factor_for(flavor)


def calibrate(observations: Iterable[Observation]) -> Calibration:
    """Fit, per flavor, the factor by which real running time differs from the heuristic.

    The factor is the geometric mean of observed / predicted (running time errors are multiplicative);
    a flavor with no runs of its own falls back to the fit over all runs. Each run is kept as two
    floats (100,000 runs are 1.6 MB, not a tuple each).
    """
    by_flavor: dict[str, tuple[array[float], array[float]]] = {}  # observed hours, predicted hours
    heuristic: dict[RunSpec, float | None] = {}  # a fleet's runs come in a few shapes
    for ob in observations:
        if ob.running_seconds <= 0:
            continue
        spec = RunSpec(ob.model_b, int(ob.examples), ob.epochs, ob.flavor, ob.unsloth, ob.max_steps, ob.batch_size)
        if spec not in heuristic:
            try:
                heuristic[spec] = estimate_run(spec).hours
            except CostInputError:
                heuristic[spec] = None
        predicted = heuristic[spec]
        if predicted is None or predicted <= 0:
            continue
        observed, expected = by_flavor.setdefault(ob.flavor, (array("d"), array("d")))
        observed.append(ob.running_seconds / 3600.0)
        expected.append(predicted)
    per: dict[str, FlavorCalibration] = {}
    all_logs: array[float] = array("d")
    for flavor, (observed, expected) in by_flavor.items():
        logs = array("d", (math.log(obs / pred) for obs, pred in zip(observed, expected, strict=True)))
        all_logs.extend(logs)
        factor = math.exp(sum(logs) / len(logs))
        per[flavor] = FlavorCalibration(
            flavor=flavor,
            factor=factor,
            runs=len(logs),
            heuristic_error_pct=_mape(observed, expected, 1.0),
            calibrated_error_pct=_mape(observed, expected, factor),
            low=math.exp(min(logs)),
            high=math.exp(max(logs)),
        )
    overall = math.exp(sum(all_logs) / len(all_logs)) if all_logs else None
    low, high = (math.exp(min(all_logs)), math.exp(max(all_logs))) if all_logs else (0.0, 0.0)
    return Calibration(per, overall, len(all_logs), low, high)


def _mape(observed: Sequence[float], expected: Sequence[float], factor: float) -> float:
    errors = (abs(pred * factor - obs) / obs for obs, pred in zip(observed, expected, strict=True))
    return 100.0 * sum(errors) / len(observed)
