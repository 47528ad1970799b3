"""The one projection of money: what a run costs and what a schedule adds a month, from the job spec.

Every surface that shows money asks this module, and nothing else: the fleet rows ($/run, $/month),
the Costs tab and `console ledger` (what the schedules add this month, the projection), `console
watch` and the start-up toast, the bulk previews, the reschedule dialog and the what-if explorer's
"fleet now". Each figure has one meaning (docs/costs.md, "What the money figures mean"):

- **$/run**: the reference heuristic (§4, `costs.estimate_run`) of the run its job spec describes
  (`jobspec.read_request`: model size, examples, epochs, max_steps and the recipe's batch, kind,
  LoRA or full, Unsloth, flavor), or, for a schedule whose labels carry no size, the mean of its
  past runs (`observed`);
- **$/month**: the schedule's runs in an average month (`cron.runs_per_month`) x $/run;
- **left this month**: its firings from now to the end of the UTC month x $/run;
- a **suspended** schedule adds $0 to both: what it would cost is kept beside (`would_be_*`).

"Now" is always the caller's clock (the app's, or the command's: `CONSOLE_NOW`), never the wall
clock read here.

Imports console.jobspec, console.costs and console.prices: no SQLite, no Textual, no console.ui or
console.server, no network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from console import jobspec
from console.costs import estimate_run
from console.cron import count_firings, normalize_cron, runs_per_month
from console.inputs import CostInputError
from console.jobspec import TrainingRequest
from console.kinds import TRAINING_KINDS
from console.prices import PriceBook

NO_TENANT = "(none)"
COST_LABELS = ("model_b", "examples", "epochs")
"""The labels without which a job spec does not say its run's size (then its cost is observed)."""

Observed = Callable[[Any, str, str, str], list[float]]
"""(schedule id, tenant, kind, flavor) -> the known costs of its past runs (`ledger.ObservedCosts.costs`)."""


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


@lru_cache(maxsize=4096)
def _runs_per_month(cron: str) -> float:
    return runs_per_month(cron)


@lru_cache(maxsize=8192)
def _firings_after_minute(cron: str, minute: datetime, end: datetime) -> int:
    return count_firings(cron, minute, end)


def run_request(info: Any) -> TrainingRequest | None:
    """The run a console job or schedule describes (`jobspec.read_request`), when its labels say
    its size (:data:`COST_LABELS`) and its kind trains; else None."""
    labels = jobspec.labels_held(info)
    if any(not labels.get(name) for name in COST_LABELS):
        return None
    req = jobspec.read_request(info)
    if req is None or req.kind not in TRAINING_KINDS:
        return None
    return req


def run_cost(req: TrainingRequest | None, prices: PriceBook) -> float | None:
    """$/run of a training request (the heuristic of its run spec), or None when it cannot be costed."""
    if req is None or req.kind not in TRAINING_KINDS:
        return None
    try:
        return estimate_run(req.run_spec(), prices).cost_usd
    except CostInputError:
        return None


@dataclass(frozen=True, slots=True)
class ScheduleMoney:
    """What one schedule costs: per run, a month, and what is left of this month (slotted: one
    per schedule, 10,000 of them)."""

    scheduled_job_id: str
    tenant: str
    kind: str
    flavor: str
    schedule: str
    suspended: bool
    per_run_usd: float
    basis: str
    """heuristic (the job spec's run) | observed (mean of past runs) | unknown (neither)"""
    runs_per_month: float
    remaining_runs: int
    """Firings from now to the end of the month (whether suspended or not)."""
    would_be_month_usd: float
    """runs_per_month x per_run_usd: what it costs a month while it runs."""
    would_be_remaining_usd: float
    """remaining_runs x per_run_usd: what it costs to the end of this month while it runs."""

    @property
    def month_usd(self) -> float:
        """$/month: $0 while suspended."""
        return 0.0 if self.suspended else self.would_be_month_usd

    @property
    def remaining_usd(self) -> float:
        """Left this month: $0 while suspended."""
        return 0.0 if self.suspended else self.would_be_remaining_usd

    @property
    def known(self) -> bool:
        return self.basis != "unknown"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["month_usd"] = self.month_usd
        d["remaining_usd"] = self.remaining_usd
        return d


def schedule_money(
    sj: Any,
    now: datetime,
    prices: PriceBook,
    *,
    cron: str | None = None,
    suspended: bool | None = None,
    observed: Observed | None = None,
) -> ScheduleMoney | None:
    """The money of one `ScheduledJobInfo` (or `KeptSchedule`) at `now`; None when its cron is
    unreadable. `cron` / `suspended` ask "what if it ran on that cron / were (not) suspended" (the
    reschedule dialog, the resume preview); `observed` gives the costs of past runs of a schedule
    whose labels say no size."""
    schedule = cron if cron is not None else str(getattr(sj, "schedule", None) or "")
    try:
        text = normalize_cron(schedule)
        remaining = remaining_firings(text, now)
        rpm = _runs_per_month(text)
    except (CostInputError, ValueError, KeyError):
        return None
    labels = jobspec.labels_held(sj)
    spec = getattr(sj, "job_spec", None) or sj
    flavor = getattr(spec, "flavor", None)
    flavor = str(getattr(flavor, "value", flavor) or "cpu-basic")
    tenant = labels.get("tenant") or NO_TENANT
    kind = labels.get("kind") or ""
    per_run = run_cost(run_request(sj), prices)
    basis = "heuristic"
    if per_run is None:
        past = observed(getattr(sj, "id", None), tenant, kind, flavor) if observed is not None else []
        per_run, basis = (sum(past) / len(past), "observed") if past else (0.0, "unknown")
    if suspended is None:
        suspended = bool(getattr(sj, "suspend", False))
    return ScheduleMoney(
        scheduled_job_id=str(getattr(sj, "id", "")),
        tenant=tenant,
        kind=kind,
        flavor=flavor,
        schedule=schedule,
        suspended=suspended,
        per_run_usd=per_run,
        basis=basis,
        runs_per_month=rpm,
        remaining_runs=remaining,
        would_be_month_usd=per_run * rpm,
        would_be_remaining_usd=per_run * remaining,
    )
