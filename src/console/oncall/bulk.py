"""Bulk actions by filter: cancel, suspend, resume or trigger everything a filter matches, after
seeing exactly what changes and what it costs or saves, and typing how many.

The filter is the jobs pane's own language (`console.jobs.parse_filter`: `tenant:acme`,
`label:env=dev`, `stage:running`, bare words). :func:`plan_bulk` reads the backend once and lists
each job or schedule the action would change, with its money:

- cancel (running and queued jobs): what it has billed, and what cancelling saves: the cost of
  the rest of its run at its Trackio step rate when that is known, else up to its timeout;
- suspend (active schedules): the schedule's $/month saved, and what is left of this month;
- resume (suspended schedules): the $/month it will cost again;
- trigger (schedules): one run's cost.

:func:`apply_bulk` acts on exactly the planned ids (nothing is re-matched in between), and only
when the typed confirmation equals the count; a read-only console is refused before anything is
sent. Each item's outcome is reported on its own: one failure does not stop the rest.

Blocking (HTTP) through the `HfApi` the caller passes. No Textual, no console.ui, console.server
or console.backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from console import jobspec
from console.inputs import format_duration
from console.jobs import (
    ACTIVE_STAGES,
    JOB_STAGES,
    SCHEDULE_STAGES,
    JobRow,
    filter_problem,
    format_cost,
    job_row,
    parse_filter,
)
from console.ledger import LedgerEntry, ObservedCosts, forecast_schedule
from console.oncall.forecast import forecast_job
from console.prices import PriceBook, shipped_price_book
from console.stages import RUNNING
from console.trackio_metrics import MetricsReader

ACTIONS = ("cancel", "suspend", "resume", "trigger")


class BulkRefused(Exception):
    """A bulk action not carried out; the message says why in one line."""


@dataclass(frozen=True)
class BulkItem:
    """One job or schedule the action changes, with its money (USD; negative saves)."""

    target_id: str
    target: str
    """job | schedule"""
    tenant: str
    what: str
    """The job's stage, flavor and running time, or the schedule's cron and flavor."""
    delta_usd: float | None
    """What the action costs (positive) or saves (negative); None when unknown."""
    money: str
    """The same in words: `saves ~$0.40 (rest of its run)`, `+$5.26/month`."""


@dataclass(frozen=True)
class BulkPlan:
    """What one bulk action would change. `count` is what the confirmation must say."""

    action: str
    filter_text: str
    items: tuple[BulkItem, ...]
    read_only: bool = False
    per: str = ""
    """What the total is per: "" (once) or "month"."""

    @property
    def count(self) -> int:
        return len(self.items)

    @property
    def total_usd(self) -> float:
        return sum(i.delta_usd for i in self.items if i.delta_usd is not None)

    @property
    def unknown(self) -> int:
        return sum(1 for i in self.items if i.delta_usd is None)

    def total_line(self) -> str:
        verb = "saves" if self.total_usd < 0 else "costs"
        per = f"/{self.per}" if self.per else ""
        unknown = f" (+ {self.unknown} unknown)" if self.unknown else ""
        noun = "job" if self.action == "cancel" else "schedule"
        return (
            f"{self.action} {self.count} {noun}{'' if self.count == 1 else 's'}: "
            f"{verb} {format_cost(abs(self.total_usd))}{per}{unknown}"
        )

    def lines(self) -> list[str]:
        """The listing a confirmation shows: one line per item, then the total."""
        out = [
            f"{i.target_id[:24]:<24}  {i.tenant[:16]:<16}  {i.what}  {i.money}" for i in self.items
        ]
        out.append(self.total_line())
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "filter": self.filter_text,
            "count": self.count,
            "total_usd": self.total_usd,
            "per": self.per,
            "unknown": self.unknown,
            "read_only": self.read_only,
            "items": [asdict(i) for i in self.items],
        }


@dataclass(frozen=True)
class BulkOutcome:
    item: BulkItem
    ok: bool
    message: str


@dataclass(frozen=True)
class BulkResult:
    plan: BulkPlan
    outcomes: list[BulkOutcome] = field(default_factory=list)

    @property
    def done(self) -> int:
        return sum(1 for o in self.outcomes if o.ok)

    @property
    def failed(self) -> list[BulkOutcome]:
        return [o for o in self.outcomes if not o.ok]


def schedule_row(sj: Any) -> JobRow:
    """A scheduled job as a jobs-pane row, so the same filter matches it (stage SCHEDULED or
    SUSPENDED)."""
    labels = jobspec.labels_of(sj)
    spec = getattr(sj, "job_spec", None)
    return JobRow(
        id=str(sj.id),
        tenant=labels.get("tenant", "-"),
        kind=labels.get("kind", "-"),
        stage="SUSPENDED" if getattr(sj, "suspend", False) else "SCHEDULED",
        flavor=str(getattr(spec, "flavor", None) or ""),
        created_at=getattr(sj, "created_at", None),
        started_at=None,
        running_seconds=None,
        cost_usd=None,
        labels=labels,
    )


def _cancel_item(job: Any, metrics: Any, now: datetime, prices: PriceBook) -> BulkItem:
    row = job_row(job, now=now, prices=prices)
    fc = forecast_job(job, metrics, now=now, prices=prices)
    ran = format_duration(row.running_seconds) if row.running_seconds is not None else "-"
    what = f"{row.stage:<10} {row.flavor:<11} ran {ran:<7} billed {format_cost(row.cost_usd)}"
    so_far = fc.cost_so_far_usd or 0.0
    if fc.cost_to_finish_usd is not None:
        saves = fc.cost_to_finish_usd - so_far
        money = f"saves ~{format_cost(saves)} (rest of its run)"
    elif fc.cost_at_timeout_usd is not None:
        saves = max(0.0, fc.cost_at_timeout_usd - so_far)
        money = f"saves up to {format_cost(saves)} (until its timeout)"
    else:
        return BulkItem(row.id, "job", row.tenant, what, None, "saves ? (no timeout known)")
    return BulkItem(row.id, "job", row.tenant, what, -saves, money)


def _schedule_item(action: str, sj: Any, now: datetime, prices: PriceBook, history: ObservedCosts) -> BulkItem:
    row = schedule_row(sj)
    cron = str(getattr(sj, "schedule", None) or "")
    what = f"{row.stage:<10} {row.flavor:<11} {cron}"
    # the one projection (`console.money`), read as if the schedule ran: what it adds while it does
    fc = forecast_schedule(sj, now, prices, history=history, suspended=False)
    if fc is None:
        return BulkItem(row.id, "schedule", row.tenant, what, None, "cron unreadable")
    if not fc.known:
        return BulkItem(row.id, "schedule", row.tenant, what, None, "cost per run unknown")
    if action == "trigger":
        return BulkItem(row.id, "schedule", row.tenant, what, fc.per_run_usd,
                        f"+{format_cost(fc.per_run_usd)} (one run, {fc.basis})")
    monthly, left = fc.month_usd, fc.remaining_usd
    if action == "suspend":
        return BulkItem(row.id, "schedule", row.tenant, what, -monthly,
                        f"saves {format_cost(monthly)}/month ({format_cost(left)} left this month)")
    return BulkItem(row.id, "schedule", row.tenant, what, monthly,
                    f"+{format_cost(monthly)}/month ({format_cost(left)} left this month)")


def plan_bulk(
    api: Any,
    action: str,
    filter_text: str,
    *,
    namespace: str | None = None,
    prices: PriceBook | None = None,
    now: datetime | None = None,
    read_only: bool = False,
    reader: MetricsReader | None = None,
    project: str = "console",
    history: Sequence[LedgerEntry] = (),
) -> BulkPlan:
    """What `action` would change among the jobs / schedules `filter_text` matches.

    An empty filter is refused: "everything" must be said (`stage:running` for every running
    job). `reader` (Trackio) refines what a cancel saves; without it, up to the timeout.
    """
    if action not in ACTIONS:
        raise BulkRefused(f"unknown action {action!r}: one of {', '.join(ACTIONS)}")
    filt = parse_filter(filter_text)
    if filt.empty:
        raise BulkRefused("a bulk action needs a filter (e.g. tenant:acme, label:env=dev, stage:running)")
    if problem := filter_problem(filter_text, (*JOB_STAGES, *SCHEDULE_STAGES)):
        raise BulkRefused(problem)  # a typo must not widen or empty what a bulk action changes
    now = now or datetime.now(UTC)
    prices = prices or shipped_price_book()
    items: list[BulkItem] = []
    if action == "cancel":
        jobs = [j for j in api.list_jobs(namespace=namespace) if j.status.stage in ACTIVE_STAGES]
        for job in sorted(jobs, key=lambda j: (jobspec.labels_of(j).get("tenant", ""), j.id)):
            row = job_row(job, now=now, prices=prices)
            if not filt.matches(row):
                continue
            metrics = None
            run = jobspec.trackio_run_name(job.id, row.labels)
            if reader is not None and run and row.stage == RUNNING:
                try:
                    metrics = reader.run_metrics(project, run)
                except Exception:  # the saving is then the timeout's bound
                    metrics = None
            items.append(_cancel_item(job, metrics, now, prices))
        return BulkPlan(action, filter_text, tuple(items), read_only=read_only)
    schedules = list(api.list_scheduled_jobs(namespace=namespace))
    observed = ObservedCosts(history)  # indexed once for every schedule below
    for sj in sorted(schedules, key=lambda s: (jobspec.labels_of(s).get("tenant", ""), s.id)):
        suspended = bool(getattr(sj, "suspend", False))
        if (action == "suspend" and suspended) or (action == "resume" and not suspended):
            continue
        if not filt.matches(schedule_row(sj)):
            continue
        items.append(_schedule_item(action, sj, now, prices, observed))
    per = "" if action == "trigger" else "month"
    return BulkPlan(action, filter_text, tuple(items), read_only=read_only, per=per)


def check_confirmation(plan: BulkPlan, confirmation: str | int | None) -> None:
    """Raise BulkRefused unless the plan may be applied with this typed confirmation."""
    if plan.read_only:
        raise BulkRefused(f"read-only: bulk {plan.action} refused (nothing was sent)")
    if plan.count == 0:
        raise BulkRefused(f"nothing to {plan.action}: no match for {plan.filter_text!r}")
    typed = str(confirmation).strip() if confirmation is not None else ""
    if typed != str(plan.count):
        shown = repr(typed) if typed else "nothing"
        raise BulkRefused(
            f"{plan.action} of {plan.count} refused: the confirmation must be the count "
            f"{plan.count}, got {shown} (nothing was sent)"
        )


def apply_bulk(api: Any, plan: BulkPlan, confirmation: str | int | None, *,
               namespace: str | None = None) -> BulkResult:
    """Carry out the plan on exactly its items, once `confirmation` equals its count."""
    check_confirmation(plan, confirmation)
    outcomes = []
    for item in plan.items:
        try:
            if plan.action == "cancel":
                api.cancel_job(job_id=item.target_id, namespace=namespace)
                message = f"cancelled {item.target_id}"
            elif plan.action == "suspend":
                api.suspend_scheduled_job(scheduled_job_id=item.target_id, namespace=namespace)
                message = f"suspended {item.target_id}"
            elif plan.action == "resume":
                api.resume_scheduled_job(scheduled_job_id=item.target_id, namespace=namespace)
                message = f"resumed {item.target_id}"
            else:
                job = api.trigger_scheduled_job(scheduled_job_id=item.target_id, namespace=namespace)
                message = f"triggered {item.target_id}: job {job.id}"
            outcomes.append(BulkOutcome(item, True, message))
        except Exception as exc:  # reported per item; the others still go
            text = " ".join(str(exc).split())[:200]
            outcomes.append(BulkOutcome(item, False, f"{item.target_id}: {text}"))
    return BulkResult(plan, outcomes)
