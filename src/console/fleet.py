"""The tenant fleet: the fleet file, the fleet as HF Jobs says it is, and the plan between the two.

Three things live here, none of them touching the UI or the network by themselves:

- :func:`load_fleet_file` reads a fleet TOML (top-level defaults, one ``[[tenant]]`` table each)
  and checks it against itself: every problem (duplicate tenant ids, a bad cron, an unknown
  flavor, a flavor too small for the model, a missing dataset) is reported at once in a
  :class:`FleetFileError`.
- :func:`derive_fleet` rebuilds the fleet from HF Jobs alone — scheduled jobs and the labels on
  jobs (``app=console``, ``tenant=``, ``env=``...) — with each tenant's last run, its stage and
  age, and what a run costs. Any console anywhere gets the same answer: the TOML config holds
  preferences, never the fleet.
- :func:`plan_apply` compares a fleet file with the scheduled jobs and returns the create / change
  / remove actions; :func:`apply_plan` carries them out through ``HfApi``. Applying the same file
  twice is a no-op: a fleet-managed scheduled job carries a ``spec=`` label, the fingerprint of its
  submission.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console import jobspec
from console.costs import (
    MONTH_SECONDS,
    CostInputError,
    describe_cron,
    estimate_run,
    normalize_cron,
    runs_per_month,
)
from console.jobspec import Submission, TrainingRequest, label_value
from console.prices import PriceBook, shipped_price_book

_TENANT_KEYS = {
    "id",
    "dataset",
    "examples",
    "base_model",
    "model_b",
    "flavor",
    "epochs",
    "schedule",
    "max_steps",
    "learning_rate",
    "lora_r",
    "lora_alpha",
    "unsloth",
    "hub_model_id",
    "suspend",
}
_TOP_KEYS = {
    "base_model",
    "model_b",
    "flavor",
    "epochs",
    "schedule",
    "env",
    "max_steps",
    "learning_rate",
    "lora_r",
    "lora_alpha",
    "unsloth",
    "examples",
    "tenant",
    "name",
    "description",
    "trackio_project",
}
TERMINAL_STAGES = ("COMPLETED", "ERROR", "CANCELED", "DELETED")
_LOSS_RE = re.compile(r"\blast_loss=([-+0-9.eEnaif]+)")
_PROGRESS_LOSS_RE = re.compile(r"^progress .*\bloss=([-+0-9.eEnaif]+)")
_ADAPTER_RE = re.compile(r"\badapter=(\S+)")


class FleetFileError(ValueError):
    """A fleet file that cannot be applied; `problems` lists every reason, one line each."""

    def __init__(self, path: Path | str, problems: Sequence[str]) -> None:
        self.path = str(path)
        self.problems = list(problems)
        super().__init__(f"{path}: " + "; ".join(self.problems))


@dataclass(frozen=True)
class TenantSpec:
    """One tenant as the fleet file declares it (defaults already applied)."""

    id: str
    dataset: str
    examples: int
    base_model: str
    model_b: float
    flavor: str
    epochs: float
    schedule: str
    max_steps: int | None = None
    learning_rate: float | None = None
    lora_r: int | None = None
    lora_alpha: int | None = None
    unsloth: bool = False
    hub_model_id: str | None = None
    suspend: bool = False

    def request(self, env: str, trackio_project: str | None = None) -> TrainingRequest:
        return TrainingRequest(
            tenant=self.id,
            dataset=self.dataset,
            base_model=self.base_model,
            model_b=self.model_b,
            examples=self.examples,
            epochs=self.epochs,
            flavor=self.flavor,
            env=env,
            unsloth=self.unsloth,
            max_steps=self.max_steps,
            learning_rate=self.learning_rate,
            lora_r=self.lora_r,
            lora_alpha=self.lora_alpha,
            hub_model_id=self.hub_model_id,
            scheduled=True,
            trackio_project=trackio_project,
        )


@dataclass(frozen=True)
class FleetFile:
    path: Path
    env: str
    tenants: tuple[TenantSpec, ...]
    trackio_project: str | None = None

    def tenant(self, tenant_id: str) -> TenantSpec:
        for t in self.tenants:
            if t.id == tenant_id:
                return t
        raise KeyError(tenant_id)


# ---------------------------------------------------------------------------------------------
# The fleet file


def load_fleet_file(
    path: Path | str,
    *,
    default_env: str = "dev",
    prices: PriceBook | None = None,
    backend_kind: str = "local",
) -> FleetFile:
    """Read and check a fleet file; raise FleetFileError listing every problem found."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise FleetFileError(p, [f"cannot be read: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError as exc:
        raise FleetFileError(p, [f"byte {exc.start}: expected UTF-8 text"]) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FleetFileError(p, [f"not valid TOML: {exc}"]) from None
    except RecursionError:
        raise FleetFileError(p, ["not valid TOML: arrays or tables nested too deeply"]) from None
    return parse_fleet(doc, p, default_env=default_env, prices=prices, backend_kind=backend_kind)


def parse_fleet(
    doc: dict[str, Any],
    path: Path,
    *,
    default_env: str = "dev",
    prices: PriceBook | None = None,
    backend_kind: str = "local",
) -> FleetFile:
    prices = prices or shipped_price_book()
    problems: list[str] = []
    for key in doc:
        if key not in _TOP_KEYS:
            problems.append(f"unknown top-level key {key!r}")
    env = doc.get("env", default_env)
    if not isinstance(env, str) or not env or label_value(env) != env:
        problems.append(f"env {env!r} must be a label value (letters, digits, '.', '-', '_')")
        env = default_env
    raw_tenants = doc.get("tenant", [])
    if not isinstance(raw_tenants, list) or not all(isinstance(t, dict) for t in raw_tenants):
        raise FleetFileError(path, [*problems, "tenants must be [[tenant]] tables"])
    defaults = {k: v for k, v in doc.items() if k not in ("tenant", "env", "name", "description")}
    tenants: list[TenantSpec] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_tenants, start=1):
        where = f"tenant #{index}"
        tid = raw.get("id")
        if isinstance(tid, str) and tid:
            where = f"tenant {tid!r}"
        spec, errors = _tenant(raw, defaults, where, path.parent, prices, backend_kind)
        problems.extend(errors)
        if isinstance(tid, str) and tid:
            if tid in seen:
                problems.append(f"duplicate tenant id {tid!r} (tenants #{seen[tid]} and #{index})")
            else:
                seen[tid] = index
        if spec is not None and tid not in [t.id for t in tenants]:
            tenants.append(spec)
    if problems:
        raise FleetFileError(path, problems)
    project = doc.get("trackio_project")
    return FleetFile(
        path=path,
        env=env,
        tenants=tuple(tenants),
        trackio_project=project if isinstance(project, str) else None,
    )


def _tenant(
    raw: dict[str, Any],
    defaults: dict[str, Any],
    where: str,
    base: Path,
    prices: PriceBook,
    backend_kind: str,
) -> tuple[TenantSpec | None, list[str]]:
    errors: list[str] = []
    for key in raw:
        if key not in _TENANT_KEYS:
            errors.append(f"{where}: unknown key {key!r}")
    merged = {**defaults, **raw}

    def get(name: str, kind: type | tuple[type, ...], required: bool = True) -> Any:
        value = merged.get(name)
        if value is None:
            if required:
                errors.append(f"{where}: {name} is required (in the tenant or at the top level)")
            return None
        if isinstance(value, bool) and kind is not bool:
            errors.append(f"{where}: {name} must be a {_kind_name(kind)}, got {value!r}")
            return None
        if not isinstance(value, kind):
            errors.append(f"{where}: {name} must be a {_kind_name(kind)}, got {value!r}")
            return None
        return value

    tid = get("id", str)
    if tid is not None and (not tid or label_value(tid) != tid):
        errors.append(f"{where}: id {tid!r} must be letters, digits, '.', '-', '_' (at most 63)")
    dataset = get("dataset", str)
    if dataset is not None:
        dataset = _resolve_dataset(dataset, base, backend_kind, where, errors)
    examples = get("examples", int)
    base_model = get("base_model", str)
    model_b = get("model_b", (int, float))
    flavor = get("flavor", str)
    epochs = get("epochs", (int, float))
    schedule = get("schedule", str)
    max_steps = get("max_steps", int, required=False)
    learning_rate = get("learning_rate", (int, float), required=False)
    lora_r = get("lora_r", int, required=False)
    lora_alpha = get("lora_alpha", int, required=False)
    unsloth = get("unsloth", bool, required=False) or False
    hub_model_id = get("hub_model_id", str, required=False)
    suspend = get("suspend", bool, required=False) or False
    if schedule is not None:
        try:
            schedule = normalize_cron(schedule)
        except CostInputError as exc:
            errors.append(f"{where}: schedule: {exc}")
            schedule = None
    if flavor is not None:
        if flavor not in prices:
            known = ", ".join(f.name for f in prices.gpu_flavors()[:8])
            errors.append(f"{where}: unknown flavor {flavor!r} (known: {known}, ...)")
            flavor = None
        elif not prices.get(flavor).is_gpu:
            errors.append(f"{where}: {flavor} is a CPU flavor; training needs a GPU flavor")
            flavor = None
        elif model_b is not None and prices.get(flavor).max_model_b < model_b:
            errors.append(
                f"{where}: a {model_b:g}B model does not fit {flavor} "
                f"({prices.get(flavor).fits}); pick a larger flavor"
            )
    if examples is not None and examples < 1:
        errors.append(f"{where}: examples must be at least 1")
    if epochs is not None and not (0 < epochs <= 1000):
        errors.append(f"{where}: epochs must be from 0.01 to 1000")
    if model_b is not None and not (0 < model_b <= 2000):
        errors.append(f"{where}: model_b must be from 0.001 to 2000")
    if max_steps is not None and max_steps < 1:
        errors.append(f"{where}: max_steps must be at least 1")
    if errors or None in (tid, dataset, examples, base_model, model_b, flavor, epochs, schedule):
        return None, errors
    return (
        TenantSpec(
            id=tid,
            dataset=dataset,
            examples=int(examples),
            base_model=base_model,
            model_b=float(model_b),
            flavor=flavor,
            epochs=float(epochs),
            schedule=schedule,
            max_steps=max_steps,
            learning_rate=float(learning_rate) if learning_rate is not None else None,
            lora_r=lora_r,
            lora_alpha=lora_alpha,
            unsloth=bool(unsloth),
            hub_model_id=hub_model_id,
            suspend=bool(suspend),
        ),
        errors,
    )


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "string", int: "whole number", float: "number", bool: "true/false"}
    if isinstance(kind, tuple):
        return "number" if float in kind else " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def _looks_local(dataset: str) -> bool:
    return dataset.startswith((".", "/", "~")) or dataset.endswith((".jsonl", ".json", ".csv"))


def _resolve_dataset(
    dataset: str, base: Path, backend_kind: str, where: str, errors: list[str]
) -> str | None:
    if not _looks_local(dataset):
        return dataset  # a Hub dataset id
    if backend_kind == "hub":
        errors.append(
            f"{where}: dataset {dataset!r} is a local file; HF Jobs cannot read local files "
            "(push it as a Hub dataset and use its id)"
        )
        return None
    path = (base / Path(dataset).expanduser()).resolve()
    if not path.is_file():
        errors.append(f"{where}: dataset file {path} does not exist")
        return None
    return str(path)


# ---------------------------------------------------------------------------------------------
# The fleet derived from HF Jobs


@dataclass
class RunOutcome:
    """What a finished run's log tail says: the verdict, the last loss, where the adapter went."""

    passed: bool | None = None
    last_loss: float | None = None
    adapter: str | None = None
    loss_trend: str = ""
    """The run's Trackio loss curve as block characters ("" when Trackio has none)."""


def parse_outcome(lines: Iterable[str]) -> RunOutcome:
    """Read `VERDICT:` / `saved adapter=` / `progress ... loss=` lines (the last ones win)."""
    out = RunOutcome()
    for line in lines:
        text = line.strip()
        if text.startswith("VERDICT:"):
            out.passed = text.startswith("VERDICT: PASS")
            m = _LOSS_RE.search(text)
            if m:
                out.last_loss = _float(m.group(1))
            m = _ADAPTER_RE.search(text)
            if m:
                out.adapter = m.group(1)
        elif text.startswith("saved adapter="):
            out.adapter = text.split("=", 1)[1].strip() or out.adapter
        else:
            m = _PROGRESS_LOSS_RE.match(text)
            if m:
                out.last_loss = _float(m.group(1))
    return out


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@dataclass
class TenantRow:
    """One tenant in the fleet pane."""

    tenant: str
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
    last_at: datetime | None = None
    last_success_at: datetime | None = None
    last_loss: float | None = None
    loss_trend: str = ""
    adapter: str | None = None
    cost_per_run: float | None = None
    monthly_usd: float | None = None
    stale: bool = False
    request: TrainingRequest | None = None

    @property
    def failed(self) -> bool:
        return self.last_stage == "ERROR"

    @property
    def flags(self) -> list[str]:
        out = []
        if self.failed:
            out.append("failed")
        if self.suspended:
            out.append("suspended")
        if self.stale:
            out.append("stale")
        return out


def _when(info: Any) -> datetime:
    for attr in ("finished_at", "started_at", "created_at"):
        value = getattr(info, attr, None)
        if value is not None:
            return value
    return datetime.fromtimestamp(0, UTC)


def _training_tenant(info: Any) -> str | None:
    """The tenant of a console training (sft) job or schedule; None for anything else."""
    labels = jobspec.labels_of(info)
    if labels.get("app") != "console" or not labels.get("tenant"):
        return None
    if labels.get("kind", "sft") != "sft":
        return None
    return labels["tenant"]


def derive_fleet(
    scheduled: Iterable[Any],
    jobs: Iterable[Any],
    *,
    now: datetime | None = None,
    prices: PriceBook | None = None,
    outcomes: dict[str, RunOutcome] | None = None,
) -> list[TenantRow]:
    """The fleet, one row per tenant, from scheduled jobs and job labels (console jobs only).

    `outcomes` maps finished job ids to what their logs said (last loss, adapter), when known.
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
        if sj.schedule:
            try:
                row.schedule_words = describe_cron(sj.schedule)
                if row.cost_per_run is not None:
                    row.monthly_usd = row.cost_per_run * runs_per_month(sj.schedule)
            except CostInputError:
                row.schedule_words = "(not a cron expression)"
    latest: dict[str, Any] = {}
    latest_success: dict[str, Any] = {}
    for job in jobs:
        tenant = _training_tenant(job)
        if tenant is None:
            continue
        created = job.created_at or datetime.fromtimestamp(0, UTC)
        prev = latest.get(tenant)
        if prev is None or created > (prev.created_at or datetime.fromtimestamp(0, UTC)):
            latest[tenant] = job
        if job.status.stage == "COMPLETED":
            best = latest_success.get(tenant)
            if best is None or _when(job) > _when(best):
                latest_success[tenant] = job
        if tenant not in rows:
            row = TenantRow(tenant=tenant, env=jobspec.labels_of(job).get("env", ""))
            rows[tenant] = row
    for tenant, job in latest.items():
        row = rows[tenant]
        row.last_job_id = job.id
        row.last_stage = job.status.stage
        row.last_at = _when(job)
        if row.request is None:
            _fill_from_request(row, jobspec.read_request(job), prices)
    for tenant, job in latest_success.items():
        row = rows[tenant]
        row.last_success_at = _when(job)
        outcome = outcomes.get(job.id)
        if outcome is not None:
            row.last_loss = outcome.last_loss
            row.adapter = outcome.adapter
            row.loss_trend = outcome.loss_trend
    for row in rows.values():
        row.stale = _is_stale(row, now)
    return sorted(rows.values(), key=lambda r: r.tenant)


def _fill_from_request(row: TenantRow, req: TrainingRequest | None, prices: PriceBook) -> None:
    if req is None:
        return
    row.request = req
    row.base_model = req.base_model
    row.flavor = req.flavor
    row.model_b = req.model_b
    row.examples = req.examples
    row.epochs = req.epochs
    try:
        row.cost_per_run = estimate_run(req.run_spec(), prices).cost_usd
    except CostInputError:
        row.cost_per_run = None


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
        return row.last_stage in ("ERROR", "CANCELED")
    return (now - row.last_success_at).total_seconds() > period * 1.1


# ---------------------------------------------------------------------------------------------
# Apply: make the scheduled jobs match a fleet file


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
    ("timeout_seconds", "timeout"),
)


def desired_submission(
    tenant: TenantSpec,
    fleet: FleetFile,
    *,
    backend_kind: str,
    timeout_buffer: float,
    token: str | None = None,
    prices: PriceBook | None = None,
    trackio_project: str | None = None,
) -> Submission:
    req = tenant.request(fleet.env, fleet.trackio_project or trackio_project)
    sub = jobspec.build_submission(
        req, backend_kind=backend_kind, timeout_buffer=timeout_buffer, token=token, prices=prices
    )
    labels = dict(sub.labels)
    labels["spec"] = sub.fingerprint()
    return replace(sub, labels=labels)


def plan_apply(
    fleet: FleetFile,
    scheduled: Iterable[Any],
    *,
    backend_kind: str = "local",
    timeout_buffer: float = 1.3,
    token: str | None = None,
    prices: PriceBook | None = None,
    trackio_project: str | None = None,
) -> ApplyPlan:
    """The actions that make the env's console scheduled jobs match the fleet file."""
    existing: dict[str, list[Any]] = {}
    for sj in scheduled:
        labels = jobspec.labels_of(sj)
        if labels.get("app") != "console" or labels.get("env") != fleet.env:
            continue
        if labels.get("kind", "sft") != "sft" or not labels.get("tenant"):
            continue
        existing.setdefault(labels["tenant"], []).append(sj)
    actions: list[Action] = []
    unchanged: list[str] = []
    for tenant in fleet.tenants:
        sub = desired_submission(
            tenant,
            fleet,
            backend_kind=backend_kind,
            timeout_buffer=timeout_buffer,
            token=token,
            prices=prices,
            trackio_project=trackio_project,
        )
        found = existing.pop(tenant.id, [])
        if not found:
            actions.append(
                Action("create", tenant.id, tenant.schedule, submission=sub, suspend=tenant.suspend)
            )
            continue
        current, extras = found[0], found[1:]
        for extra in extras:
            actions.append(
                Action(
                    "remove",
                    tenant.id,
                    scheduled_job_id=extra.id,
                    changes=["duplicate schedule for this tenant"],
                )
            )
        changes = _differences(current, tenant, sub)
        if not changes:
            unchanged.append(tenant.id)
            continue
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
    return ApplyPlan(env=fleet.env, actions=actions, unchanged=unchanged)


def _differences(current: Any, tenant: TenantSpec, sub: Submission) -> list[str]:
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
        "timeout_seconds": sub.timeout_seconds,
    }
    detail: list[str] = []
    if have is not None:
        for attr, name in _COMPARED:
            old, new = getattr(have, attr), want[attr]
            if old != new:
                detail.append(f"{name} {_show(old)} -> {_show(new)}")
    if jobspec.labels_of(current).get("spec") != sub.labels["spec"] and not detail:
        detail.append("job spec (command, script or environment)")
    return changes + detail


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
                **action.submission.scheduled_kwargs(action.schedule, suspend=action.suspend),
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
            api.delete_scheduled_job(scheduled_job_id=action.scheduled_job_id, namespace=namespace)
            sj = api.create_scheduled_job(
                **action.submission.scheduled_kwargs(action.schedule, suspend=action.suspend),
                namespace=namespace,
            )
            say(
                f"replaced {action.tenant} ({action.scheduled_job_id} -> {sj.id}): "
                + "; ".join(action.changes)
            )
    return done
