"""Stalled-but-billing detection: a RUNNING job that has stopped working but not stopped billing.

A job is stalled when, for `notify.stall_after_s` seconds, every look at it found no new log line
(its log tail unchanged), no new Trackio step, and CPU use at or under `notify.stall_cpu_pct`
(the Jobs metrics stream, `HfApi.fetch_job_metrics`). A hung data loader, a deadlock, a job
waiting on input that never comes: each bills its flavor's price by the minute until its timeout.

Idle time is the job's own: it counts from the time the Jobs API stamped its last log line, or
Trackio logged its last step, whichever is later (or from when it started running, while its log
is empty), not from when a console first looked at it: a job silent for 6.5 minutes when a console
opens is stalled for 6.5 minutes, with what those 6.5 minutes billed. A look that finds the CPU busy
counts as activity at that moment. Only for a log whose lines carry no time (and no step time) does
the first look mark the job active then.

The marks (log fingerprint, step, when it was last active) live in the on-call store, so the
detector sees through a restart, and `console watch --once` run from cron every few minutes
detects a stall as well as a long-running watcher does. A look without a CPU figure neither
clears nor proves a stall: the job is flagged only when its CPU was read idle.

Pure but for the store: the caller reads the log tail, the step and the CPU. No Textual, no
console.ui, console.server or console.backend, no network.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from console.costs import job_cost
from console.inputs import format_duration
from console.jobs import format_cost, job_row
from console.oncall.store import ActivityMark, OnCallStore
from console.prices import PriceBook, shipped_price_book
from console.stages import RUNNING

DEFAULT_STALL_AFTER_S = 600
DEFAULT_IDLE_CPU_PCT = 1.0


def log_fingerprint(lines: Sequence[str]) -> str:
    """A short hash of a log tail: a new line at the end changes it."""
    digest = hashlib.sha1()
    for line in lines:
        digest.update(line.encode("utf-8", "replace"))
        digest.update(b"\n")
    return digest.hexdigest()[:16]


def cpu_percent(sample: Any) -> float | None:
    """`cpu_usage_pct` of one Jobs metrics event (None when absent or not a number)."""
    value = sample.get("cpu_usage_pct") if isinstance(sample, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


@dataclass(frozen=True)
class StallStatus:
    """What one look at a running job found."""

    job_id: str
    tenant: str
    stalled: bool
    idle_s: float
    """Seconds since the job last showed activity (0 when it just did)."""
    idle_since: float
    """Unix time of its last activity."""
    cpu_pct: float | None
    step: int | None
    billed_since_usd: float | None
    """What the job billed since it went idle (`costs.job_cost` of its running time then and now)."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["idle_since"] = datetime.fromtimestamp(self.idle_since, UTC).isoformat()
        return d

    def line(self) -> str:
        cpu = "cpu ?" if self.cpu_pct is None else f"cpu {self.cpu_pct:.1f}%"
        step = f", step {self.step}" if self.step is not None else ""
        state = "STALLED" if self.stalled else "idle"
        return (
            f"{state} {format_duration(self.idle_s)}: no new log line{step} and {cpu}; "
            f"{format_cost(self.billed_since_usd)} billed since"
        )


class StallDetector:
    """Marks each running job's activity in the on-call store and says when one has stalled."""

    def __init__(
        self,
        store: OnCallStore,
        *,
        stall_after_s: float = DEFAULT_STALL_AFTER_S,
        idle_cpu_pct: float = DEFAULT_IDLE_CPU_PCT,
    ) -> None:
        self.store = store
        self.stall_after_s = float(stall_after_s)
        self.idle_cpu_pct = float(idle_cpu_pct)

    def observe(
        self,
        job: Any,
        *,
        log_tail: Sequence[str],
        step: int | None,
        cpu_pct: float | None,
        now: datetime | None = None,
        prices: PriceBook | None = None,
        last_output_at: float | None = None,
        last_step_at: float | None = None,
    ) -> StallStatus:
        """Record one look at a RUNNING job (`JobInfo`) and say whether it is stalled.

        `last_output_at` is the Unix time the Jobs API stamped the last line of `log_tail` (None
        when its lines carry no time), `last_step_at` the time Trackio logged `step`: the job's
        own last signs of life, what its idle time counts from (see the module docstring)."""
        now = now or datetime.now(UTC)
        prices = prices or shipped_price_book()
        at = now.timestamp()
        fingerprint = log_fingerprint(log_tail)
        mark = self.store.activity(job.id)
        row = job_row(job, now=now, prices=prices)
        busy = cpu_pct is not None and cpu_pct > self.idle_cpu_pct
        own = [t for t in (last_output_at, last_step_at) if t is not None]
        if not log_tail and not own and row.started_at is not None:
            own.append(row.started_at.timestamp())  # silent since it started
        changed = mark is None or fingerprint != mark.fingerprint or (step is not None and step != mark.step)
        if busy:
            active_at = at
        elif own:
            # its own last sign of life, or a busy CPU seen at an earlier look, whichever is later
            active_at = max(own + ([mark.active_at] if mark is not None else []))
        elif changed:
            active_at = at  # new output without a time: active now
        else:
            active_at = mark.active_at
        active_at = min(active_at, at)
        self.store.save_activity(ActivityMark(job.id, fingerprint, step, active_at, at))

        idle = max(0.0, at - active_at)
        stalled = (
            row.stage == RUNNING
            and idle >= self.stall_after_s
            and cpu_pct is not None
            and cpu_pct <= self.idle_cpu_pct
        )
        billed = None
        if row.running_seconds is not None and row.flavor in prices:
            before = max(0.0, row.running_seconds - idle)
            billed = job_cost(row.running_seconds, row.flavor, prices) - job_cost(before, row.flavor, prices)
        return StallStatus(
            job_id=row.id,
            tenant=row.tenant,
            stalled=stalled,
            idle_s=idle,
            idle_since=active_at,
            cpu_pct=cpu_pct,
            step=step,
            billed_since_usd=billed,
        )

    def forget_others(self, running_ids: Sequence[str]) -> None:
        """Drop the marks of jobs that no longer run."""
        self.store.forget_activity(running_ids)
