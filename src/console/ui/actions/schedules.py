"""Schedule actions on the selected tenant: reschedule (`r`), suspend / resume (`p`), trigger (`t`).

Each is one function taking the app (see `console.ui.actions` for the shared path).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from console import jobspec
from console.inputs import format_duration
from console.jobs import format_cost
from console.ui.actions import confirm_then_run, refuse_if_read_only, run_in_worker, submission_details
from console.ui.base import ConsoleBase

if TYPE_CHECKING:
    from console.fleet import TenantRow


def _schedule_for(app: ConsoleBase, action: str) -> tuple[TenantRow, Any] | None:
    """The selected tenant and its scheduled job for `action`, or None (and a message) when
    read-only mode refuses it or there is no schedule to act on."""
    if refuse_if_read_only(app, action):
        return None
    tenant = app.selected_tenant()
    sj = app.refresher.scheduled.get(tenant.scheduled_job_id) if tenant and tenant.scheduled_job_id else None
    if tenant is None or sj is None:
        who = f"{tenant.tenant} has" if tenant else "no tenant selected, or it has"
        app.notify(f"{who} no scheduled job", severity="warning")
        return None
    return tenant, sj


def reschedule(app: ConsoleBase) -> None:
    """Edit the tenant's cron in a form (it shows the next runs), then save it."""
    found = _schedule_for(app, "reschedule")
    if found is None:
        return
    tenant, sj = found
    ns = app.namespace

    def done(cron: str | None) -> None:
        if not cron:
            app.notify("Reschedule: not changed", timeout=3)
            return

        def save() -> str:
            app.api.update_scheduled_job_schedule(scheduled_job_id=sj.id, schedule=cron, namespace=ns)
            return f"Rescheduled {tenant.tenant}: {cron}"

        run_in_worker(app, f"Reschedule {tenant.tenant}", save)

    from console.ui.screens.reschedule import RescheduleScreen  # modal screens load on first use

    app.push_screen(
        RescheduleScreen(tenant.tenant, sj.schedule or "", clock=app.clock, cost=_cost_line(app, tenant, sj)),
        done,
    )


def _cost_line(app: ConsoleBase, tenant: TenantRow, sj: Any) -> Callable[[str], str]:
    """What the reschedule dialog says of a cron: $/month before -> after (`reschedule_cost`),
    calibrated by the tenant's past runs in the ledger when there are some."""
    from console.oncall import reschedule_cost

    try:
        history = app.ledger.entries(tenant=tenant.tenant)
    except Exception:  # no ledger to read: the estimate from the labels alone
        history = []

    def line(cron: str) -> str:
        return "cost: " + reschedule_cost(sj, cron, prices=app.prices, history=history, now=app.clock()).line()

    return line


def toggle_suspend(app: ConsoleBase) -> None:
    """Suspend the tenant's schedule, or resume it when it is suspended (nothing is lost either way)."""
    found = _schedule_for(app, "toggle_suspend")
    if found is None:
        return
    tenant, sj = found
    ns = app.namespace
    if sj.suspend:

        def resume() -> str:
            app.api.resume_scheduled_job(scheduled_job_id=sj.id, namespace=ns)
            return f"Resumed {tenant.tenant}'s schedule ({sj.schedule})"

        run_in_worker(app, f"Resume {tenant.tenant}", resume)
    else:

        def suspend() -> str:
            app.api.suspend_scheduled_job(scheduled_job_id=sj.id, namespace=ns)
            return f"Suspended {tenant.tenant}'s schedule (p resumes)"

        run_in_worker(app, f"Suspend {tenant.tenant}", suspend)


def trigger(app: ConsoleBase) -> None:
    """Run the tenant's scheduled job now, after a confirmation with its cost per run."""
    found = _schedule_for(app, "trigger")
    if found is None:
        return
    tenant, sj = found
    ns = app.namespace

    def run_now() -> str:
        job = app.api.trigger_scheduled_job(scheduled_job_id=sj.id, namespace=ns)
        return f"Triggered {tenant.tenant}: job {job.id}"

    confirm_then_run(
        app,
        f"Run {tenant.tenant}'s scheduled job {sj.id} now?",
        [*_run_details(app, tenant, sj), f"schedule {sj.schedule} is unchanged"],
        yes_label="Trigger",
        description=f"Trigger {tenant.tenant}",
        fn=run_now,
        declined="Trigger: not done",
    )


def _run_details(app: ConsoleBase, tenant: TenantRow, sj: Any) -> list[str]:
    """What a run of the scheduled job is (see `submission_details`): its timeout is the one the
    schedule carries, with the rule it was padded by when the rule still gives that value."""
    request = jobspec.read_request(sj)
    try:
        if request is None:
            raise jobspec.SubmissionError("not a console schedule")
        sub = jobspec.build_submission(
            replace(request, timeout_seconds=None),
            backend_kind=app.backend_kind,
            timeout_buffer=app.cfg.defaults.timeout_buffer,
            timeout_overhead_s=app.cfg.defaults.timeout_overhead_s,
            token=app.session.hub_token(),
            prices=app.prices,
        )
    except jobspec.SubmissionError as exc:
        return [
            f"tenant {tenant.tenant} on {tenant.flavor or '?'}, est {format_cost(tenant.cost_per_run)} per run",
            f"dataset, destination and timeout unknown: {exc}",
        ]
    kept = request.timeout_seconds
    if kept is not None and kept != sub.timeout_seconds:
        rule = f"set on the schedule (the rule now gives {format_duration(sub.timeout_seconds)}: {sub.timeout_rule})"
        sub = replace(sub, timeout_seconds=kept, timeout_rule=rule)
    return submission_details(sub, tenant.tenant, app.prices)
