"""Apply: the create / change / remove actions that make the scheduled jobs match a fleet file.

:func:`plan_apply` compares a fleet file with the scheduled jobs and returns the actions;
:func:`apply_plan` carries them out through ``HfApi``. Applying the same file twice is a no-op,
whatever HF echoes back: the plan compares only what the console reads back reliably — the
schedule, the labels it wrote (the ``spec=`` fingerprint of the whole submission, the ``timeout=``
label, the cost model's numbers) and the script's arguments — never a field HF may leave out
(huggingface_hub's ``JobSpec`` reads ``timeout`` where the API sends ``timeoutSeconds``, and a
scheduled job's timeout can come back empty).

A change that needs a new job spec creates the replacement first and deletes the old schedule only
once the new one exists: if the create fails, the old schedule stays as it was; if the delete
fails, the next apply finds two and removes the one that no longer matches.

Imports the fleet file, console.jobspec, console.costs and console.prices; the ``HfApi`` comes
from the caller. No Textual, no console.ui or console.server, no training stack.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from console import jobspec
from console.cron import normalize_cron
from console.fleet.file import FleetFile, TenantSpec
from console.inputs import CostInputError
from console.jobspec import Submission, TrainingRequest
from console.kinds import TRAINING_KINDS
from console.prices import DEFAULT_TIMEOUT_BUFFER, DEFAULT_TIMEOUT_OVERHEAD_S, PriceBook
from console.ship import ship


@dataclass
class Action:
    op: str  # "create" | "change" | "remove"
    tenant: str
    schedule: str | None = None
    scheduled_job_id: str | None = None
    submission: Submission | None = None
    changes: list[str] = field(default_factory=list)
    schedule_only: bool = False
    suspend: bool = False

    def describe(self) -> str:
        if self.op == "create":
            assert self.submission is not None
            sub = self.submission
            return (
                f"+ create  {self.tenant}: {self.schedule} on {sub.flavor}, "
                f"timeout {sub.timeout_seconds}s, ~${sub.estimate_usd:.2f}/run"
                + (f", {'; '.join(self.changes)}" if self.changes else "")
                + (f"\n            timeout {sub.timeout_rule}" if sub.timeout_rule else "")
            )
        if self.op == "change":
            return f"~ change  {self.tenant} ({self.scheduled_job_id}): " + "; ".join(self.changes)
        return f"- remove  {self.tenant} ({self.scheduled_job_id})"


@dataclass
class ApplyPlan:
    env: str
    actions: list[Action]
    unchanged: list[str]

    @property
    def empty(self) -> bool:
        return not self.actions

    def lines(self) -> list[str]:
        out = [a.describe() for a in self.actions]
        ops = ("create", "change", "remove")
        counts = {op: sum(1 for a in self.actions if a.op == op) for op in ops}
        out.append(
            f"Plan (env={self.env}): {counts['create']} to create, {counts['change']} to change, "
            f"{counts['remove']} to remove, {len(self.unchanged)} unchanged."
        )
        return out + self.warning_lines()

    def warning_lines(self) -> list[str]:
        """Each warning of the submissions to send (`Submission.warnings`), once, with its tenants."""
        tenants: dict[str, list[str]] = {}
        for action in self.actions:
            if action.submission is not None:
                for warning in action.submission.warnings:
                    tenants.setdefault(warning, []).append(action.tenant)
        out = []
        for warning, who in tenants.items():
            names = ", ".join(who[:5]) + (f" and {len(who) - 5} more" if len(who) > 5 else "")
            out.append(f"warning: {warning} ({names})")
        return out


_COMPARED = (
    ("base_model", "base model"),
    ("dataset", "dataset"),
    ("model_b", "model_b"),
    ("examples", "examples"),
    ("epochs", "epochs"),
    ("flavor", "flavor"),
    ("max_steps", "max_steps"),
    ("learning_rate", "learning_rate"),
    ("lora_r", "lora_r"),
    ("lora_alpha", "lora_alpha"),
    ("unsloth", "unsloth"),
    ("hub_model_id", "destination"),
    ("promote", "promote"),
    ("promote_margin", "promote margin"),
    ("retry", "retry"),
    ("retry_max_usd", "retry_max_usd"),
    ("trackio_project", "trackio project"),
    ("trackio_space_id", "trackio space"),
    ("datasets_cache", "datasets cache"),
)


class PlanRefused(ValueError):
    """Tenants of a fleet file the console will not submit (each with its reason); nothing is applied."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def desired_request(
    tenant: TenantSpec,
    fleet: FleetFile,
    *,
    backend_kind: str = "local",
    trackio_project: str | None = None,
    trackio_space_id: str | None = None,
    hub_model_id: str | None = None,
    datasets_cache: str | None = None,
) -> TrainingRequest:
    """A tenant's scheduled run as submitted: what the tenant says, else the fleet file's top
    level (destination template, Trackio project and Space), else the config's (`hub_model_id` a
    template such as `org/adapter-{tenant}`)."""
    req = jobspec.with_defaults(
        tenant.request(fleet.env),
        hub_model_id=fleet.hub_model_id or hub_model_id,
        trackio_project=fleet.trackio_project or trackio_project,
        trackio_space_id=fleet.trackio_space_id or trackio_space_id,
        datasets_cache=fleet.datasets_cache or datasets_cache,
    )
    return jobspec.for_backend(req, backend_kind)


def desired_submission(
    tenant: TenantSpec,
    fleet: FleetFile,
    *,
    backend_kind: str,
    timeout_buffer: float,
    timeout_overhead_s: float = DEFAULT_TIMEOUT_OVERHEAD_S,
    token: str | None = None,
    prices: PriceBook | None = None,
    trackio_project: str | None = None,
    trackio_space_id: str | None = None,
    hub_model_id: str | None = None,
    datasets_cache: str | None = None,
    owners: Mapping[str, str] | None = None,
) -> Submission:
    req = desired_request(
        tenant, fleet, backend_kind=backend_kind, trackio_project=trackio_project,
        trackio_space_id=trackio_space_id, hub_model_id=hub_model_id, datasets_cache=datasets_cache,
    )
    sub = jobspec.build_submission(
        req, backend_kind=backend_kind, timeout_buffer=timeout_buffer, timeout_overhead_s=timeout_overhead_s,
        token=token, prices=prices, owners=owners,
    )
    labels = dict(sub.labels)
    labels["spec"] = sub.fingerprint()
    return replace(sub, labels=labels)


def plan_apply(
    fleet: FleetFile,
    scheduled: Iterable[Any],
    *,
    backend_kind: str = "local",
    timeout_buffer: float = DEFAULT_TIMEOUT_BUFFER,
    timeout_overhead_s: float = DEFAULT_TIMEOUT_OVERHEAD_S,
    token: str | None = None,
    prices: PriceBook | None = None,
    trackio_project: str | None = None,
    trackio_space_id: str | None = None,
    hub_model_id: str | None = None,
    datasets_cache: str | None = None,
    base_models: Callable[[TrainingRequest], str | None] | None = None,
    datasets: Callable[[TrainingRequest], str | None] | None = None,
    held: Mapping[str, str] | None = None,
) -> ApplyPlan:
    """The actions that make the env's console scheduled jobs match the fleet file.

    `trackio_project`, `trackio_space_id` and `hub_model_id` (a destination template, e.g.
    `org/adapter-{tenant}`) are the config's, for tenants the fleet file says nothing about.
    A tenant whose dataset another tenant trains on (one the file does not list) is refused, and so
    is a run on HF Jobs with nowhere to push. `base_models` (the hub backend's
    `console.ship.BaseModelCheck`) says why a tenant's base model cannot be trained on, and
    `datasets` (`console.fleet.preflight.local_problem`, the validator on a local file) why its
    dataset cannot: that tenant is refused too, before anything is sent. `held` (tenant -> why:
    `console.fleet.preflight.held`, its dataset failed its preflight) keeps a tenant's schedule
    suspended whatever the file says (created suspended, or suspended), and once it is no longer
    held the file's `suspend` holds again (a passing preflight resumes it)."""
    held = dict(held or {})
    scheduled = list(scheduled)
    listed = {t.id for t in fleet.tenants}
    others = [r for sj in scheduled if (r := jobspec.read_request(sj)) is not None and r.tenant not in listed]
    owners = jobspec.dataset_owners([*others, *(t.request(fleet.env) for t in fleet.tenants)])
    existing: dict[str, list[Any]] = {}
    for sj in scheduled:
        labels = jobspec.labels_of(sj)
        if labels.get("app") != "console" or labels.get("env") != fleet.env:
            continue
        if labels.get("kind", "sft") not in TRAINING_KINDS or not labels.get("tenant"):
            continue
        existing.setdefault(labels["tenant"], []).append(sj)
    actions: list[Action] = []
    unchanged: list[str] = []
    refused: list[str] = []
    for tenant in fleet.tenants:
        why_held = held.get(tenant.id)
        if why_held and not tenant.suspend:
            tenant = replace(tenant, suspend=True)
        try:
            sub = desired_submission(
                tenant,
                fleet,
                backend_kind=backend_kind,
                timeout_buffer=timeout_buffer,
                timeout_overhead_s=timeout_overhead_s,
                token=token,
                prices=prices,
                trackio_project=trackio_project,
                trackio_space_id=trackio_space_id,
                hub_model_id=hub_model_id,
                datasets_cache=datasets_cache,
                owners=owners,
            )
            req = desired_request(
                tenant, fleet, backend_kind=backend_kind, trackio_project=trackio_project,
                trackio_space_id=trackio_space_id, hub_model_id=hub_model_id, datasets_cache=datasets_cache,
            )
            why = (base_models(req) if base_models else None) or (datasets(req) if datasets else None)
            if why:
                raise jobspec.SubmissionError(why)
        except jobspec.SubmissionError as exc:
            refused.append(f"tenant {tenant.id!r}: {exc}")
            existing.pop(tenant.id, None)  # refused is not removed: nothing changes for it
            continue
        found = existing.pop(tenant.id, [])
        if not found:
            actions.append(
                Action("create", tenant.id, tenant.schedule, submission=sub, suspend=tenant.suspend,
                       changes=[f"suspended ({why_held})"] if why_held else [])
            )
            continue
        # the schedule that already matches is kept (a replacement whose old copy could not be
        # deleted last time); else the first the server lists
        want = desired_request(
            tenant, fleet, backend_kind=backend_kind, trackio_project=trackio_project,
            trackio_space_id=trackio_space_id, hub_model_id=hub_model_id, datasets_cache=datasets_cache,
        )
        diffs = [(sj, _differences(sj, tenant, sub, want)) for sj in found]
        current, changes = next(((sj, d) for sj, d in diffs if not d), diffs[0])
        extras = [sj for sj in found if sj is not current]
        for extra in extras:
            actions.append(
                Action(
                    "remove",
                    tenant.id,
                    scheduled_job_id=extra.id,
                    changes=["duplicate schedule for this tenant"],
                )
            )
        if not changes:
            unchanged.append(tenant.id)
            continue
        if why_held:
            changes = [f"{c} ({why_held})" if c.startswith("suspend") else c for c in changes]
        schedule_only = all(c.startswith(("schedule", "suspend")) for c in changes)
        actions.append(
            Action(
                "change",
                tenant.id,
                tenant.schedule,
                scheduled_job_id=current.id,
                submission=sub,
                changes=changes,
                schedule_only=schedule_only,
                suspend=tenant.suspend,
            )
        )
    for tenant_id, leftovers in sorted(existing.items()):
        for sj in leftovers:
            actions.append(
                Action(
                    "remove", tenant_id, scheduled_job_id=sj.id, changes=["not in the fleet file"]
                )
            )
    if refused:
        raise PlanRefused(refused)
    return ApplyPlan(env=fleet.env, actions=actions, unchanged=unchanged)


def _differences(current: Any, tenant: TenantSpec, sub: Submission, req: TrainingRequest) -> list[str]:
    changes: list[str] = []
    if normalize_or_same(current.schedule) != tenant.schedule:
        changes.append(f"schedule {current.schedule!r} -> {tenant.schedule!r}")
    if bool(current.suspend) != tenant.suspend:
        changes.append(f"suspend {bool(current.suspend)} -> {tenant.suspend}")
    have = jobspec.read_request(current)
    want = {
        "base_model": tenant.base_model,
        "dataset": tenant.dataset,
        "model_b": tenant.model_b,
        "examples": tenant.examples,
        "epochs": tenant.epochs,
        "flavor": tenant.flavor,
        "max_steps": tenant.max_steps,
        "learning_rate": tenant.learning_rate,
        "lora_r": tenant.lora_r,
        "lora_alpha": tenant.lora_alpha,
        "unsloth": tenant.unsloth,
        "hub_model_id": req.hub_model_id,
        "promote": req.promote,
        "promote_margin": req.promote_margin,
        "retry": req.retry,
        "retry_max_usd": req.retry_max_usd,
        "trackio_project": req.trackio_project,
        "trackio_space_id": req.trackio_space_id,
        "datasets_cache": req.datasets_cache,
    }
    detail: list[str] = []
    if have is not None:
        for attr, name in _COMPARED:
            old, new = getattr(have, attr), want[attr]
            if old != new:
                detail.append(f"{name} {_show(old)} -> {_show(new)}")
    old_timeout = _timeout_of(current)
    if old_timeout is not None and old_timeout != sub.timeout_seconds:
        detail.append(f"timeout {old_timeout}s -> {sub.timeout_seconds}s")
    if jobspec.labels_of(current).get("spec") != sub.labels["spec"] and not detail:
        detail.append("job spec (command, script or environment)")
    return changes + detail


def _timeout_of(current: Any) -> int | None:
    """The timeout a scheduled job runs with, when it can be known: the console's `timeout=`
    label, else the spec's timeout when HF sent one (None: unknown; the fingerprint covers it)."""
    label = jobspec.label_number(jobspec.labels_of(current).get("timeout"))
    if label is not None:
        return int(label)
    spec = getattr(current, "job_spec", None)
    timeout = getattr(spec, "timeout", None)
    return int(timeout) if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout else None


def normalize_or_same(expr: str | None) -> str | None:
    if expr is None:
        return None
    try:
        return normalize_cron(expr)
    except CostInputError:
        return expr


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str) and len(value) > 40:
        return "..." + value[-37:]
    return repr(value) if isinstance(value, str) else str(value)


def apply_plan(
    api: Any,
    plan: ApplyPlan,
    *,
    namespace: str | None = None,
    report: Callable[[str], None] | None = None,
) -> list[str]:
    """Carry out the plan through HfApi; returns (and reports) one line per action done."""
    done: list[str] = []

    def say(text: str) -> None:
        done.append(text)
        if report:
            report(text)

    for action in plan.actions:
        if action.op == "remove":
            api.delete_scheduled_job(scheduled_job_id=action.scheduled_job_id, namespace=namespace)
            say(f"removed {action.tenant} ({action.scheduled_job_id})")
        elif action.op == "create":
            assert action.submission is not None and action.schedule is not None
            sj = api.create_scheduled_job(
                **ship(api, action.submission, namespace).scheduled_kwargs(action.schedule, suspend=action.suspend),
                namespace=namespace,
            )
            say(f"created {action.tenant} ({sj.id})")
        elif action.schedule_only:
            sid = action.scheduled_job_id
            current = api.inspect_scheduled_job(scheduled_job_id=sid, namespace=namespace)
            if normalize_or_same(current.schedule) != action.schedule:
                api.update_scheduled_job_schedule(
                    scheduled_job_id=sid, schedule=action.schedule, namespace=namespace
                )
            if bool(current.suspend) != action.suspend:
                if action.suspend:
                    api.suspend_scheduled_job(scheduled_job_id=sid, namespace=namespace)
                else:
                    api.resume_scheduled_job(scheduled_job_id=sid, namespace=namespace)
            say(f"changed {action.tenant} ({sid}): " + "; ".join(action.changes))
        else:
            assert action.submission is not None and action.schedule is not None
            # the replacement first: if it cannot be created, the old schedule runs on unchanged
            sj = api.create_scheduled_job(
                **ship(api, action.submission, namespace).scheduled_kwargs(action.schedule, suspend=action.suspend),
                namespace=namespace,
            )
            try:
                api.delete_scheduled_job(scheduled_job_id=action.scheduled_job_id, namespace=namespace)
            except Exception as exc:
                raise ReplaceIncomplete(action.tenant, str(action.scheduled_job_id), sj.id, exc) from exc
            say(
                f"replaced {action.tenant} ({action.scheduled_job_id} -> {sj.id}): "
                + "; ".join(action.changes)
            )
    return done


class ReplaceIncomplete(RuntimeError):
    """A change whose replacement schedule exists but whose old schedule could not be deleted:
    both run until the next apply removes the old one."""

    def __init__(self, tenant: str, old_id: str, new_id: str, cause: BaseException) -> None:
        first = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        super().__init__(
            f"{tenant}: the new schedule {new_id} is in place but the old one {old_id} could not be "
            f"deleted ({first}); apply again to remove it"
        )
        self.tenant, self.old_id, self.new_id = tenant, old_id, new_id
