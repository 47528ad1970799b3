"""The fleet as HF Jobs says it is: one row per tenant, from scheduled jobs and job labels alone.

Every training kind has rows (`kinds.TRAINING_KINDS`: a tenant's SFT, DPO, KTO or embedding
runs; the builder model), each with its kind; the builder model is a row of its own, costed with
its own size, flavor and cadence (reference §4(a)), and listed after the tenants.

:func:`derive_fleet` rebuilds the fleet from HF Jobs — scheduled jobs and the labels on jobs
(``app=console``, ``tenant=``, ``env=``...) — with each tenant's last run, its stage and age, and
what a run costs. Any console anywhere gets the same answer: the TOML config holds preferences,
never the fleet.

Imports console.jobspec, console.costs, console.prices and the run outcomes: no Textual, no
console.ui or console.server, no network, no training stack.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console import jobspec
from console.cron import MONTH_SECONDS, describe_cron, runs_per_month
from console.fleet.outcome import RunOutcome
from console.inputs import CostInputError
from console.jobspec import TrainingRequest
from console.kinds import KIND_LABELS, TRAINING_KINDS
from console.money import run_cost, schedule_money
from console.prices import PriceBook, shipped_price_book
from console.stages import CANCELED, COMPLETED, ERROR


@dataclass(slots=True)
class TenantRow:
    """One tenant in the fleet pane (slotted: 10,000 of them are kept)."""

    tenant: str
    kind: str = "sft"
    """The row's runs: sft | dpo | kto | embedding | builder (`KIND_LABELS` in words)."""
    env: str = ""
    base_model: str = ""
    flavor: str = ""
    model_b: float | None = None
    examples: int | None = None
    epochs: float | None = None
    schedule: str | None = None
    schedule_words: str = ""
    next_run: datetime | None = None
    suspended: bool = False
    scheduled_job_id: str | None = None
    last_job_id: str | None = None
    last_stage: str | None = None
    last_retry: str | None = None
    """`retry 1 of 2` when the last run is a retry of one before it (`console.oncall.retry`)."""
    last_at: datetime | None = None
    last_success_at: datetime | None = None
    last_loss: float | None = None
    loss_trend: str = ""
    adapter: str | None = None
    cost_per_run: float | None = None
    monthly_usd: float | None = None
    """$/month (`console.money`): runs a month x $/run; $0 while suspended."""
    would_be_monthly_usd: float | None = None
    """What the schedule costs a month while it runs (a suspended one's would-be $/month)."""
    left_this_month_usd: float | None = None
    """Its firings left this month x $/run ($0 while suspended)."""
    stale: bool = False
    preflight_failed: bool = False
    """The tenant's last dataset preflight job (`fleet apply`'s or the submit form's) failed: its
    scheduled runs would fail on this data (`fleet apply` keeps its schedule suspended)."""
    preflight_job_id: str | None = None
    """The tenant's last dataset preflight job (why it failed: `fleet.preflight.failure_reason`)."""
    request: TrainingRequest | None = None

    @property
    def is_builder(self) -> bool:
        return self.kind == "builder"

    @property
    def kind_label(self) -> str:
        return KIND_LABELS.get(self.kind, self.kind)

    @property
    def failed(self) -> bool:
        return self.last_stage == ERROR

    @property
    def flags(self) -> list[str]:
        out = []
        if self.failed:
            out.append("failed")
        if self.suspended:
            out.append("suspended")
        if self.stale:
            out.append("stale")
        if self.preflight_failed:
            out.append("preflight")
        return out


def _when(info: Any) -> datetime:
    for attr in ("finished_at", "started_at", "created_at"):
        value = getattr(info, attr, None)
        if value is not None:
            return value
    return datetime.fromtimestamp(0, UTC)


def _training_tenant(info: Any) -> str | None:
    """The tenant (or builder) of a console training job or schedule, whatever its kind; None for
    anything else (dataset checks, other apps' jobs)."""
    labels = jobspec.labels_of(info)
    if labels.get("app") != "console" or not labels.get("tenant"):
        return None
    if labels.get("kind", "sft") not in TRAINING_KINDS:
        return None
    return labels["tenant"]


def _checked_tenant(info: Any) -> str | None:
    """The tenant of a console dataset preflight job (kind=validate), else None."""
    labels = jobspec.labels_of(info)
    if labels.get("app") != "console" or labels.get("kind") != "validate":
        return None
    return labels.get("tenant") or None


def _created(job: Any) -> datetime:
    return job.created_at or datetime.fromtimestamp(0, UTC)


def derive_fleet(
    scheduled: Iterable[Any],
    jobs: Iterable[Any],
    *,
    now: datetime | None = None,
    prices: PriceBook | None = None,
    outcomes: dict[str, RunOutcome] | None = None,
    request_of: Callable[[Any], TrainingRequest | None] = jobspec.read_request,
) -> list[TenantRow]:
    """The fleet, one row per tenant, from scheduled jobs and job labels (console jobs only).

    `outcomes` maps finished job ids to what their logs said (last loss, adapter), when known.
    `request_of` reads the training request of a tenant's last run, for a tenant with no
    schedule: given `RunMark`s (`console.cache.latest`), it finds the whole job.
    """
    prices = prices or shipped_price_book()
    now = now or datetime.now(UTC)
    outcomes = outcomes or {}
    rows: dict[str, TenantRow] = {}
    for sj in scheduled:
        tenant = _training_tenant(sj)
        if tenant is None:
            continue
        labels = jobspec.labels_of(sj)
        if tenant in rows and rows[tenant].scheduled_job_id:
            continue  # a duplicate schedule: the first wins here; `fleet apply` removes the rest
        req = jobspec.read_request(sj)
        row = rows.setdefault(tenant, TenantRow(tenant=tenant))
        row.env = labels.get("env", "")
        row.scheduled_job_id = sj.id
        row.schedule = sj.schedule
        row.suspended = bool(sj.suspend)
        row.next_run = None if sj.suspend else sj.status.next_job_run_at
        _fill_from_request(row, req, prices)
        money = schedule_money(sj, now, prices) if sj.schedule else None
        if money is not None:
            row.cost_per_run = money.per_run_usd if money.known else None
        if money is not None and money.known:
            row.monthly_usd = money.month_usd
            row.would_be_monthly_usd = money.would_be_month_usd
            row.left_this_month_usd = money.remaining_usd
        if sj.schedule:
            try:
                row.schedule_words = describe_cron(sj.schedule)
            except CostInputError:
                row.schedule_words = "(not a cron expression)"
    latest: dict[str, Any] = {}
    latest_success: dict[str, Any] = {}
    latest_check: dict[str, Any] = {}
    for job in jobs:
        checked = _checked_tenant(job)
        if checked is not None:
            prev = latest_check.get(checked)
            if prev is None or _created(job) > _created(prev):
                latest_check[checked] = job
        tenant = _training_tenant(job)
        if tenant is None:
            continue
        created = job.created_at or datetime.fromtimestamp(0, UTC)
        prev = latest.get(tenant)
        if prev is None or created > (prev.created_at or datetime.fromtimestamp(0, UTC)):
            latest[tenant] = job
        if job.status.stage == COMPLETED:
            best = latest_success.get(tenant)
            if best is None or _when(job) > _when(best):
                latest_success[tenant] = job
        if tenant not in rows:
            labels = jobspec.labels_of(job)
            row = TenantRow(tenant=tenant, kind=labels.get("kind", "sft"), env=labels.get("env", ""))
            rows[tenant] = row
    for tenant, job in latest.items():
        row = rows[tenant]
        row.last_job_id = job.id
        row.last_stage = job.status.stage
        row.last_retry = jobspec.retry_words(jobspec.labels_of(job))
        row.last_at = _when(job)
        if row.request is None:
            _fill_from_request(row, request_of(job), prices)
    for tenant, job in latest_success.items():
        row = rows[tenant]
        row.last_success_at = _when(job)
        outcome = outcomes.get(job.id)
        if outcome is not None:
            row.last_loss = outcome.last_loss
            row.adapter = outcome.adapter
            row.loss_trend = outcome.loss_trend
    for tenant, job in latest_check.items():
        if tenant in rows:
            row = rows[tenant]
            row.preflight_failed = job.status.stage == ERROR
            row.preflight_job_id = job.id
    for row in rows.values():
        row.stale = _is_stale(row, now)
    return sorted(rows.values(), key=lambda r: (r.is_builder, r.tenant))


def _fill_from_request(row: TenantRow, req: TrainingRequest | None, prices: PriceBook) -> None:
    if req is None:
        return
    row.request = req
    row.kind = req.kind
    row.base_model = req.base_model
    row.flavor = req.flavor
    row.model_b = req.model_b
    row.examples = req.examples
    row.epochs = req.epochs
    row.cost_per_run = run_cost(req, prices)


def cadence_seconds(schedule: str) -> float | None:
    try:
        rpm = runs_per_month(schedule)
    except CostInputError:
        return None
    return MONTH_SECONDS / rpm if rpm > 0 else None


def _is_stale(row: TenantRow, now: datetime) -> bool:
    """The adapter is older than the cadence (with 10% grace), or a schedule has never succeeded."""
    if not row.schedule or row.suspended:
        return False
    period = cadence_seconds(row.schedule)
    if period is None or not math.isfinite(period):
        return False
    if row.last_success_at is None:
        return row.last_stage in (ERROR, CANCELED)
    return (now - row.last_success_at).total_seconds() > period * 1.1
