"""The fleet as it was at a past time: each tenant's last run that had been created by then, with
its stage as of then, and its last run completed by then.

A job's stage at a time follows from its created / started / finished times: not yet created, it
is not in the picture; finished by then, it reads its final stage; started by then, RUNNING;
else SCHEDULING. So a run that was RUNNING at 03:00 and failed at 03:20 reads RUNNING at 03:00.
`derive_fleet` then builds the rows from those runs as it builds the present ones. The schedules
(cron, suspended, $/run, $/month) are the present's: HF Jobs keeps no history of a schedule.

Headless: no Textual, no console.ui or console.server, no network.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from console import jobspec
from console.fleet.derive import TenantRow, derive_fleet
from console.fleet.outcome import RunOutcome
from console.jobspec import TrainingRequest
from console.prices import PriceBook
from console.stages import RUNNING, SCHEDULING, TERMINAL_STAGES


@dataclass(frozen=True, slots=True)
class PastStatus:
    stage: str
    message: str | None = None


@dataclass(slots=True, eq=False)
class PastRun:
    """A job as it stood at `at`: read like a `JobInfo` by `derive_fleet`; `job` is the whole job."""

    id: str
    labels: dict[str, str]
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    status: PastStatus
    job: Any = field(repr=False, default=None)


def stage_as_of(job: Any, at: datetime) -> str | None:
    """The job's stage at `at` (None: it did not exist yet)."""
    created = getattr(job, "created_at", None)
    if created is None or created > at:
        return None
    stage = job.status.stage
    started = getattr(job, "started_at", None)
    finished = getattr(job, "finished_at", None)
    if stage in TERMINAL_STAGES:
        ended = finished or started or created  # a job canceled before it started has no finish time
        if ended <= at:
            return stage
    if started is not None and started <= at:
        return RUNNING
    return SCHEDULING


def as_of(job: Any, at: datetime) -> PastRun | None:
    """The job as it stood at `at`, or None if it was created after."""
    stage = stage_as_of(job, at)
    if stage is None:
        return None
    started = getattr(job, "started_at", None)
    finished = getattr(job, "finished_at", None) if stage in TERMINAL_STAGES else None
    return PastRun(
        id=job.id,
        labels=jobspec.labels_of(job),
        created_at=job.created_at,
        started_at=started if started is not None and started <= at else None,
        finished_at=finished,
        status=PastStatus(stage),
        job=job,
    )


def fleet_as_of(
    scheduled: Iterable[Any],
    jobs: Iterable[Any],
    at: datetime,
    *,
    prices: PriceBook | None = None,
    outcomes: dict[str, RunOutcome] | None = None,
    request_of: Callable[[Any], TrainingRequest | None] | None = None,
) -> list[TenantRow]:
    """The fleet rows as they were at `at` (see the module docstring): the tenants that had a run
    or a schedule; no next run (a past schedule's next run is not known)."""
    runs = [run for job in jobs if (run := as_of(job, at)) is not None]
    read = request_of or jobspec.read_request

    def request(run: Any) -> TrainingRequest | None:
        return read(run.job if isinstance(run, PastRun) else run)

    rows = derive_fleet(scheduled, runs, now=at, prices=prices, outcomes=outcomes, request_of=request)
    for row in rows:
        row.next_run = None
    return rows
