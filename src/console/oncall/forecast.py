"""Burn and timeout forecast of a running job: what it has cost, what it costs if it runs to its
timeout, and whether it will finish before the timeout kills it.

The reference's first trap after a missing Hub push is the job killed on its timeout: the
minutes are billed and the unpushed work is lost. So for each running job this compares the time
it still needs (the steps left at its Trackio step rate) with the time left before its timeout,
and flags the job that will be killed first, with by how much.

Money comes from `console.costs.job_cost` only (through `console.jobs.job_row`, the jobs table's
own row). The timeout is the job's `timeout` label (every job the console starts carries one), or
a `timeout` the Jobs API gives. Progress is `RunMetrics.step` / `max_steps`, and the rate is
measured over its recent steps (`RunMetrics.step_rate`).

Pure: the caller reads the job and its Trackio run. No Textual, no console.ui, console.server or
console.backend, no network.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from console import jobspec
from console.costs import job_cost
from console.inputs import format_duration
from console.jobs import format_cost, job_row
from console.prices import PriceBook, shipped_price_book
from console.stages import RUNNING
from console.trackio_metrics import RunMetrics


@dataclass(frozen=True)
class JobForecast:
    """One running job's burn and timeout forecast (money in USD, times in seconds)."""

    job_id: str
    tenant: str
    flavor: str
    stage: str
    running_seconds: float | None
    cost_so_far_usd: float | None
    """What the job has billed so far (`costs.job_cost` of its running time)."""
    timeout_seconds: float | None
    cost_at_timeout_usd: float | None
    """What it bills if it runs until its timeout kills it."""
    time_left_s: float | None
    """Seconds before the timeout (None without a timeout)."""
    step: int | None = None
    max_steps: int | None = None
    step_rate: float | None = None
    """Steps per second (Trackio, recent steps; else the average since the job started)."""
    rate_basis: str = ""
    """recent (Trackio's recent steps) | average (steps / running time) | "" (no rate)."""
    eta_s: float | None = None
    """Seconds from now until the last step at the current rate."""
    cost_to_finish_usd: float | None = None
    """What the job will have billed when it finishes at this rate (None when it will not)."""
    overrun_s: float | None = None
    """Positive: the timeout comes this many seconds before the last step (the job is killed)."""
    steps_at_timeout: int | None = None
    """The step the job will have reached when its timeout kills it (only when it will)."""

    @property
    def will_time_out(self) -> bool:
        return self.overrun_s is not None and self.overrun_s > 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["will_time_out"] = self.will_time_out
        return d

    def short(self) -> str:
        """A few words for a narrow column: `ETA 4m ok`, `OVERRUN 3m`, `ETA ?`."""
        if self.will_time_out:
            assert self.overrun_s is not None
            return f"OVERRUN {format_duration(self.overrun_s)}"
        if self.eta_s is not None:
            return f"ETA {format_duration(self.eta_s)}"
        return "ETA ?"

    def line(self) -> str:
        """One line: cost so far, cost at the timeout, ETA against the time left, the verdict."""
        parts = [f"{format_cost(self.cost_so_far_usd)} so far"]
        if self.cost_at_timeout_usd is not None:
            parts.append(f"{format_cost(self.cost_at_timeout_usd)} at timeout")
        if self.step is not None and self.max_steps:
            parts.append(f"step {self.step}/{self.max_steps}")
        if self.eta_s is not None:
            parts.append(f"ETA {format_duration(self.eta_s)}")
        if self.time_left_s is not None:
            parts.append(f"timeout in {format_duration(max(0.0, self.time_left_s))}")
        if self.will_time_out:
            assert self.overrun_s is not None
            reach = f" at step {self.steps_at_timeout}" if self.steps_at_timeout is not None else ""
            parts.append(
                f"WILL TIME OUT{reach}: {format_duration(self.overrun_s)} short, "
                f"{format_cost(self.cost_at_timeout_usd)} billed for unfinished work"
            )
        elif self.cost_to_finish_usd is not None:
            parts.append(f"finishes for about {format_cost(self.cost_to_finish_usd)}")
        return "; ".join(parts)


def job_timeout_seconds(job: Any) -> float | None:
    """The job's timeout: a `timeout` the Jobs API gives, else the console's `timeout` label."""
    spec = getattr(job, "job_spec", None) or job
    value = getattr(spec, "timeout", None)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    labelled = jobspec.label_number(jobspec.labels_of(job).get("timeout"))
    return labelled if labelled and labelled > 0 else None


def forecast_job(
    job: Any,
    metrics: RunMetrics | None = None,
    *,
    now: datetime | None = None,
    prices: PriceBook | None = None,
) -> JobForecast:
    """The forecast of one job (`JobInfo`) with its Trackio run's metrics (None when unread)."""
    now = now or datetime.now(UTC)
    prices = prices or shipped_price_book()
    row = job_row(job, now=now, prices=prices)
    running = row.running_seconds
    timeout = job_timeout_seconds(job)
    priced = row.flavor in prices
    cost_at_timeout = job_cost(timeout, row.flavor, prices) if timeout and priced else None
    time_left = timeout - (running or 0.0) if timeout else None

    step = metrics.step if metrics is not None and metrics.found else None
    max_steps = metrics.max_steps if metrics is not None and metrics.found else None
    rate, basis = None, ""
    if metrics is not None and metrics.step_rate:
        rate, basis = metrics.step_rate, "recent"
    elif step and running:
        rate, basis = step / running, "average"

    eta = cost_to_finish = overrun = reach = None
    if rate and step is not None and max_steps and row.stage == RUNNING:
        remaining = max(0, max_steps - step)
        since_last = 0.0
        if basis == "recent" and metrics is not None and metrics.last_step_at is not None:
            since_last = max(0.0, now.timestamp() - metrics.last_step_at)
        eta = max(0.0, remaining / rate - since_last)
        if time_left is not None:
            overrun = eta - time_left
            if overrun > 0:
                reach = min(max_steps, step + int(rate * max(0.0, time_left + since_last)))
        if priced and (overrun is None or overrun <= 0):
            cost_to_finish = job_cost((running or 0.0) + eta, row.flavor, prices)
    return JobForecast(
        job_id=row.id,
        tenant=row.tenant,
        flavor=row.flavor,
        stage=row.stage,
        running_seconds=running,
        cost_so_far_usd=row.cost_usd,
        timeout_seconds=timeout,
        cost_at_timeout_usd=cost_at_timeout,
        time_left_s=time_left,
        step=step,
        max_steps=max_steps,
        step_rate=rate,
        rate_basis=basis,
        eta_s=eta,
        cost_to_finish_usd=cost_to_finish,
        overrun_s=overrun,
        steps_at_timeout=reach,
    )
