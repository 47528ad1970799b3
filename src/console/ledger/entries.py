"""What one finished job cost: the :class:`LedgerEntry`, and how a job the Jobs API returns becomes one.

HF bills a job per minute while it is Starting/Running, at its flavor's price, and a job killed on
its timeout still costs those minutes (reference §1, §3). An entry is a terminal job's running
seconds x the price per hour in effect when it was recorded, plus a flat $0.01/h for each port the
job exposes (reference §3), all from `costs.job_cost`. A job never runs past its timeout (the Jobs
API kills it there, reference §1): a running time measured past it is billed as the timeout
(`jobspec.run_limit_seconds`), so a kill seen a second late is not a minute more.

Running time comes from what the Jobs API returns — evidence only, never a guess:

1. ``JobInfo.durations.running_secs`` — computed by the server (HF and the embedded server both
   send ``durations.runningSecs``); durations with no running time say the job never ran: zero;
2. ``finished_at - started_at`` — the timestamps ``JobInfo`` carries when durations are absent
   (for a job still running: up to now, the money in flight);
3. zero — a job cancelled (or deleted) with no start time never left SCHEDULING: never billed;
4. unknown — a finished job HF answers for without durations and without the timestamps that
   bound its run (legacy answers: ``durations: null``, no ``finishedAt``; huggingface_hub 2.4's
   own tests show such jobs). Its cost is not guessed: the entry says ``unknown``, costs nothing
   in any total, and is listed as such; a later recording costs it if HF then gives the evidence.

The label readers here (`flavor_of`, `label_float`, `label_bool`) also serve the forecasts.

Imports console.prices, console.costs and console.jobspec's label reader: no SQLite, no Textual,
no console.ui or console.server, no network, no training stack.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from console.costs import job_cost
from console.jobspec import exposed_ports_of, label_number, run_limit_seconds
from console.prices import PriceBook, shipped_price_book
from console.stages import COMPLETED, ERROR, TERMINAL_STAGES

_RAN_STAGES = frozenset({COMPLETED, ERROR})
"""Terminal stages a job may reach only after running (a CANCELED one may never have started)."""
UNKNOWN = "unknown"
"""The running source of a finished job whose running time the Jobs API did not say."""
NO_TENANT = "(none)"
# How a timeout reads in a job's status message: the embedded server says "Job timed out after 2s
# (timeoutSeconds)"; HF's wording is not documented, so any "timed out" / "timeout" in an ERROR's
# message counts.
_TIMEOUT_RE = re.compile(r"time[ds]?[\s_-]?out", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One finished job, costed once."""

    job_id: str
    tenant: str
    kind: str
    env: str
    flavor: str
    price_per_hour: float
    """$/hr of the flavor when the entry was recorded (live prices when the backend gave them)."""
    price_source: str
    running_seconds: float
    """Billed seconds (Starting/Running); see the module docstring for where they come from."""
    running_source: str
    """durations | timestamps | never-started | unknown (then running_seconds and cost_usd are 0
    and mean nothing: see `known`)"""
    cost_usd: float
    stage: str
    message: str | None
    wasted: bool
    """Killed on its timeout: the minutes were paid for and the unsaved progress lost."""
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    month: str
    """YYYY-MM (UTC) of the billed time: when the job started, else when it was created."""
    model_b: float | None = None
    examples: int | None = None
    epochs: float | None = None
    unsloth: bool | None = None
    run_name: str | None = None
    scheduled_job_id: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    endpoint: str = ""
    """The Jobs API the job ran on (huggingface.co, or the embedded server on loopback)."""
    recorded_at: str = ""
    exposed_ports: int = 0
    """Ports the job exposed through the Jobs proxy, each billed a flat $0.01/h (reference §3)."""
    ports_usd: float = 0.0
    """The part of `cost_usd` its exposed ports cost."""

    @property
    def known(self) -> bool:
        """Whether the job's running time (and so its cost) is known; an unknown one is in no total."""
        return self.running_source != UNKNOWN

    @property
    def local(self) -> bool:
        """Ran on the embedded server (this machine's CPU): real time, but not HF hardware's."""
        return is_loopback(self.endpoint)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _iso(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _stage(job: Any) -> str:
    status = getattr(job, "status", None)
    stage = getattr(status, "stage", None)
    return str(getattr(stage, "value", stage) or "").upper()


def flavor_of(job: Any) -> str:
    """The flavor of a job or job spec (cpu-basic when it names none)."""
    flavor = getattr(job, "flavor", None)
    return str(getattr(flavor, "value", flavor) or "cpu-basic")


def is_loopback(endpoint: str) -> bool:
    from urllib.parse import urlsplit

    host = (urlsplit(endpoint).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def is_terminal(job: Any) -> bool:
    return _stage(job) in TERMINAL_STAGES


def timed_out(job: Any) -> bool:
    """Whether the job was killed on its timeout (stage ERROR, a message saying so)."""
    message = getattr(getattr(job, "status", None), "message", None) or ""
    return _stage(job) == ERROR and bool(_TIMEOUT_RE.search(message))


def running_seconds_of(job: Any, now: datetime | None = None) -> tuple[float | None, str]:
    """Running seconds of a job and the evidence they rest on (durations | timestamps |
    never-started), or (None, "unknown") for a finished job whose running time the answer does not
    say (see the module docstring). For a job still running, the timestamps measure up to `now`.
    """
    durations = getattr(job, "durations", None)
    secs = getattr(durations, "running_secs", None)
    if isinstance(secs, (int, float)) and not isinstance(secs, bool) and math.isfinite(secs):
        return max(0.0, float(secs)), "durations"
    stage = _stage(job)
    started = getattr(job, "started_at", None)
    finished = getattr(job, "finished_at", None)
    if started is not None:
        if finished is None and stage in TERMINAL_STAGES:
            return None, UNKNOWN  # ended, but when? Billing it "until now" would grow for ever
        end = finished or now or datetime.now(UTC)
        if started.tzinfo is None:
            started = started.replace(tzinfo=UTC)
        if end.tzinfo is None:
            end = end.replace(tzinfo=UTC)
        return max(0.0, (end - started).total_seconds()), "timestamps"
    if durations is not None or stage not in _RAN_STAGES:
        return 0.0, "never-started"  # the server's durations say so, or it was cancelled queued
    return None, UNKNOWN  # COMPLETED or ERROR with neither durations nor a start: it may have run


def label_float(labels: dict[str, str], key: str) -> float | None:
    """A label as a finite, non-negative number ('0p5' as the console writes it, or '0.5' as older
    consoles did); None when absent or anything else."""
    value = label_number(labels.get(key))
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def label_bool(labels: dict[str, str], key: str) -> bool | None:
    """A label as yes/no (1/true/yes, 0/false/no); None when absent or anything else."""
    value = str(labels.get(key, "")).strip().lower()
    if value in ("1", "true", "yes"):
        return True
    if value in ("0", "false", "no"):
        return False
    return None


def entry_from_job(
    job: Any, prices: PriceBook | None = None, *, now: datetime | None = None
) -> LedgerEntry | None:
    """The ledger entry of a terminal job (None for a job still scheduling or running)."""
    if not is_terminal(job):
        return None
    prices = prices or shipped_price_book()
    labels = {str(k): str(v) for k, v in (getattr(job, "labels", None) or {}).items()}
    flavor = flavor_of(job)
    if flavor in prices:
        price = prices.price_per_hour(flavor)
        price_source = prices.source
    else:
        price, price_source = 0.0, "unknown flavor"
    measured, source = running_seconds_of(job, now)
    seconds = 0.0 if measured is None else measured
    limit = run_limit_seconds(job)
    if limit is not None:
        seconds = min(seconds, limit)  # billed up to the kill at the timeout, never past it
    ports = exposed_ports_of(job)
    costed = measured is not None and price_source != "unknown flavor"
    cost = job_cost(seconds, flavor, prices, timeout_s=limit, exposed_ports=ports) if costed else 0.0
    ports_usd = cost - job_cost(seconds, flavor, prices, timeout_s=limit) if costed and ports else 0.0
    started = getattr(job, "started_at", None)
    created = getattr(job, "created_at", None)
    billed_at = started or created or now or datetime.now(UTC)
    if billed_at.tzinfo is None:
        billed_at = billed_at.replace(tzinfo=UTC)
    examples = label_float(labels, "examples")
    initiator = getattr(job, "initiator", None)
    scheduled = getattr(initiator, "id", None) if getattr(initiator, "type", "") == "scheduled-job" else None
    message = getattr(getattr(job, "status", None), "message", None)
    return LedgerEntry(
        job_id=str(job.id),
        tenant=labels.get("tenant") or NO_TENANT,
        kind=labels.get("kind") or "",
        env=labels.get("env") or "",
        flavor=flavor,
        price_per_hour=price,
        price_source=price_source,
        running_seconds=seconds,
        running_source=source,
        cost_usd=cost,
        stage=_stage(job),
        message=message,
        wasted=timed_out(job),
        created_at=_iso(created),
        started_at=_iso(started),
        finished_at=_iso(getattr(job, "finished_at", None)),
        month=billed_at.astimezone(UTC).strftime("%Y-%m"),
        model_b=label_float(labels, "model_b"),
        examples=None if examples is None else int(examples),
        epochs=label_float(labels, "epochs"),
        unsloth=label_bool(labels, "unsloth"),
        run_name=labels.get("run") or None,
        scheduled_job_id=scheduled,
        labels=labels,
        endpoint=str(getattr(job, "endpoint", "") or ""),
        recorded_at=_iso(now or datetime.now(UTC)) or "",
        exposed_ports=ports,
        ports_usd=ports_usd,
    )
