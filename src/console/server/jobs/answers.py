"""The response bodies of the HF Jobs API, declared once: what `JobInfo`, `ScheduledJobInfo`,
`JobHardwareInfo` and `whoami` read in huggingface_hub 2.4, built here and described from the same
Structs in ``/openapi.json``.

Datetimes are always ``2026-12-02T10:00:00.000Z`` (the `hf` CLI accepts nothing else). Secret
values never leave here: a job's `secrets` answer carries the names only, each mapped to null. A
field that is sometimes absent (`startedAt` before a job starts) is ``UNSET`` and left out.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Literal

from msgspec import UNSET, Struct, UnsetType, field

from console.prices import FLAVOR_SPECS, SHIPPED_FLAVORS
from console.server.jobs.store import JobRecord, ScheduledJobRecord
from console.server.jobs.wire import iso
from console.stages import ALL_STAGES

Stage = Literal[ALL_STAGES]  # type: ignore[valid-type]
EXTRA_KEYS = ("volumes", "expose", "network", "resourceGroupId")
"""Spec keys beyond image and command, echoed as they were stored."""


class Owner(Struct):
    id: str
    name: str
    type: str = "user"


class JobStatus(Struct, rename="camel"):
    stage: Stage
    message: str | None = None
    ssh_url: str | UnsetType = UNSET
    expose_urls: list[str] | UnsetType = UNSET


class Durations(Struct, rename="camel"):
    scheduling_secs: int | None
    running_secs: int | None
    total_secs: int


class _Extras(Struct, rename="camel", kw_only=True):
    volumes: list[dict[str, Any]] | UnsetType = UNSET
    expose: dict[str, list[int]] | UnsetType = UNSET
    network: dict[str, Any] | UnsetType = UNSET
    resource_group_id: str | UnsetType = UNSET


class Job(_Extras, kw_only=True):
    """A job (`JobInfo`)."""

    id: str
    created_at: str
    docker_image: str | None
    command: list[str] | None
    arguments: list[str]
    environment: dict[str, str]
    secrets: dict[str, None] = field(default_factory=dict)
    flavor: str | None
    labels: dict[str, str] | None
    timeout_seconds: int | None
    retry: int = 0
    status: JobStatus
    durations: Durations | None
    owner: Owner
    initiator: dict[str, Any] | None = None
    attempt: int = 1
    started_at: str | UnsetType = UNSET
    finished_at: str | UnsetType = UNSET
    tags: list[str] | UnsetType = UNSET


class JobSpecAnswer(_Extras, kw_only=True):
    """A scheduled job's `jobSpec` (`JobSpec`: the timeout as `timeout` and `timeoutSeconds`)."""

    docker_image: str | None
    command: list[str] | None
    arguments: list[str]
    environment: dict[str, str]
    secrets: dict[str, None]
    flavor: str | None
    timeout: int | None
    timeout_seconds: int | None
    labels: dict[str, str] | None
    retry: int = 0
    tags: list[str] | None = None


class LastJob(Struct):
    id: str
    at: str | None


class ScheduledStatus(Struct, rename="camel"):
    last_job: LastJob | None
    next_job_run_at: str | None


class ScheduledJob(Struct, rename="camel"):
    """A scheduled job (`ScheduledJobInfo`)."""

    id: str
    created_at: str
    job_spec: JobSpecAnswer
    schedule: str
    suspend: bool | None
    concurrency: bool
    status: ScheduledStatus
    owner: Owner


class Accelerator(Struct):
    type: str
    model: str
    quantity: str
    vram: str
    manufacturer: str


class Hardware(Struct, rename="camel", omit_defaults=False):
    """A flavor and its price (`JobHardwareInfo`)."""

    name: str
    pretty_name: str
    accelerator: Accelerator | None
    unit_cost_micro_usd: int = field(name="unitCostMicroUSD")
    unit_cost_usd: float = field(name="unitCostUSD")
    unit_label: str = "minute"
    cpu: str | UnsetType = UNSET
    ram: str | UnsetType = UNSET
    ephemeral_storage: str | UnsetType = UNSET


class Whoami(Struct, rename="camel"):
    """The account (`whoami`): this server's one namespace."""

    id: str
    name: str
    fullname: str
    type: str = "user"
    email: str | None = None
    email_verified: bool = False
    can_pay: bool = True
    is_pro: bool = True
    period_end: str | None = None
    avatar_url: str = ""
    orgs: list[dict[str, Any]] = field(default_factory=list)
    auth: dict[str, Any] = field(default_factory=lambda: {
        "type": "access_token",
        "accessToken": {"displayName": "console local server", "role": "write"}})


class Error(Struct):
    """Every 4xx and 5xx: one line naming the field or what is unsupported."""

    error: str


ANSWERS: tuple[type, ...] = (Job, ScheduledJob, Hardware, Whoami, Error)
"""The response bodies the description names (components/schemas)."""


def stable_id(name: str) -> str:
    return hashlib.sha1(f"console-local:{name}".encode()).hexdigest()[:24]


def owner_of(namespace: str) -> Owner:
    return Owner(id=stable_id(namespace), name=namespace)


def whoami_json(namespace: str) -> Whoami:
    return Whoami(id=stable_id(namespace), name=namespace, fullname=namespace)


def _durations(job: JobRecord, now: float) -> Durations:
    end = job.finished_at if job.finished_at is not None else now
    scheduling = running = None
    if job.started_at is not None:
        scheduling = int(job.started_at - job.created_at)
        running = int(max(0.0, end - job.started_at))
    return Durations(scheduling, running, int(max(0.0, end - job.created_at)))


def _extras(spec: dict[str, Any]) -> dict[str, Any]:
    return {_EXTRA_ATTRS[key]: spec[key] for key in EXTRA_KEYS if spec.get(key)}


_EXTRA_ATTRS = {"volumes": "volumes", "expose": "expose", "network": "network",
                "resourceGroupId": "resource_group_id"}


def job_json(job: JobRecord, *, now: float | None = None, ssh_url: str | None = None,
             expose_urls: list[str] | None = None) -> Job:
    now = time.time() if now is None else now
    spec = job.spec
    return Job(
        id=job.id, created_at=iso(job.created_at) or "",
        docker_image=spec.get("dockerImage"), command=spec.get("command"),
        arguments=spec.get("arguments", []), environment=spec.get("environment", {}),
        secrets=dict.fromkeys(job.secrets), flavor=spec.get("flavor"), labels=job.labels or None,
        timeout_seconds=spec.get("timeoutSeconds"), retry=max(0, int(spec.get("attempts", 1)) - 1),
        status=JobStatus(job.stage, job.message, ssh_url=ssh_url or UNSET,
                         expose_urls=expose_urls or UNSET),
        durations=_durations(job, now), owner=owner_of(job.namespace), initiator=job.initiator,
        attempt=job.attempt,
        started_at=UNSET if job.started_at is None else iso(job.started_at) or UNSET,
        finished_at=UNSET if job.finished_at is None else iso(job.finished_at) or UNSET,
        tags=spec.get("tags") or UNSET, **_extras(spec),
    )


def scheduled_job_json(sj: ScheduledJobRecord) -> ScheduledJob:
    spec = sj.spec
    last = LastJob(sj.last_job_id, iso(sj.last_job_at)) if sj.last_job_id else None
    return ScheduledJob(
        id=sj.id, created_at=iso(sj.created_at) or "",
        job_spec=JobSpecAnswer(
            docker_image=spec.get("dockerImage"), command=spec.get("command"),
            arguments=spec.get("arguments", []), environment=spec.get("environment", {}),
            secrets=dict.fromkeys(sj.secrets), flavor=spec.get("flavor"),
            timeout=spec.get("timeoutSeconds"), timeout_seconds=spec.get("timeoutSeconds"),
            labels=spec.get("labels") or None, retry=max(0, int(spec.get("attempts", 1)) - 1),
            tags=spec.get("tags") or None, **_extras(spec)),
        schedule=sj.schedule, suspend=sj.suspend, concurrency=sj.concurrency,
        status=ScheduledStatus(last, None if sj.suspend else iso(sj.next_run_at)),
        owner=owner_of(sj.namespace),
    )


def hardware_json() -> list[Hardware]:
    """The flavors and prices of `console.prices` in the shape of `JobHardwareInfo`, with each
    flavor's HF name, vCPUs, RAM and ephemeral storage (`console.prices.FLAVOR_SPECS`; a flavor
    without published figures has none, as HF lists none). GPU jobs run on this machine's CPU: the
    flavor sets the price of the minutes and the job's limits.
    """
    out: list[Hardware] = []
    for f in SHIPPED_FLAVORS:
        per_minute = f.price_per_hour / 60.0
        accelerator = None
        if f.is_gpu:
            qty, _, model = f.gpu.partition("x ")
            accelerator = Accelerator("gpu", model, qty, f"{f.gpu_memory_gb} GB", "Nvidia")
        spec = FLAVOR_SPECS.get(f.name)
        figures = {} if spec is None else {"cpu": f"{spec.vcpu} vCPU", "ram": f"{spec.ram_gb} GB",
                                           "ephemeral_storage": f"{spec.storage_gb} GB"}
        out.append(Hardware(name=f.name, pretty_name=f.name if spec is None else spec.pretty_name,
                            accelerator=accelerator, unit_cost_micro_usd=round(per_minute * 1_000_000),
                            unit_cost_usd=round(per_minute, 6), **figures))
    return out
