"""What one on-call pass found (:class:`WatchReport`): the events it gave, and the current picture
`console watch` prints and the TUI marks: the tenants failing now (their newest run ended ERROR)
with why, the failures of the last 24 hours, stalls, overruns, the SCHEDULING queue, failing
schedules and stale live adapters.

No Textual, no console.ui, console.server or console.backend, no network.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from console.inputs import format_duration
from console.jobs import FlavorQueue, JobRow, format_cost, queue_line, scheduling_queue
from console.ledger import FailureStreak, LedgerSummary
from console.oncall.escapes import plain
from console.oncall.forecast import JobForecast
from console.oncall.notify import Event
from console.oncall.stall import StallStatus


@dataclass(frozen=True)
class RunFailure:
    """A run that ended ERROR (its timeout included): who, when, why and what it billed."""

    tenant: str
    job_id: str
    kind: str
    ended_at: float
    """Unix time it ended."""
    reason: str
    cost_usd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ended_at"] = datetime.fromtimestamp(self.ended_at, UTC).isoformat()
        return d

    def line(self) -> str:
        when = datetime.fromtimestamp(self.ended_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
        return plain(f"{self.tenant} {self.kind} job {self.job_id} failed at {when}: {self.reason}; "
                     f"billed {format_cost(self.cost_usd)}", 300)


@dataclass
class StaleLive:
    """A scheduled tenant whose live adapter version has not moved for too many of its periods."""

    tenant: str
    repo_id: str
    commit: str
    age_s: float
    period_s: float
    scheduled_job_id: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class WatchReport:
    """What one pass found; `events` are the ones sent by this pass (new)."""

    at: datetime
    running: int = 0
    forecasts: list[JobForecast] = field(default_factory=list)
    stalls: list[StallStatus] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    summary: LedgerSummary | None = None
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    waiting: list[JobRow] = field(default_factory=list)
    """The jobs in SCHEDULING."""
    stuck: dict[str, float] = field(default_factory=dict)
    """job id -> seconds waited, for the SCHEDULING jobs past `notify.scheduling_after_s`."""
    failing: list[FailureStreak] = field(default_factory=list)
    """The schedules whose runs failed `notify.schedule_failures` times in a row, or more."""
    stale_live: list[StaleLive] = field(default_factory=list)
    """The scheduled tenants whose live adapter is older than `notify.stale_live_periods` periods."""
    failing_tenants: list[RunFailure] = field(default_factory=list)
    """The tenants whose newest finished run (of those ended in the window read) ended ERROR."""
    failures: list[RunFailure] = field(default_factory=list)
    """The runs that ended ERROR in the last `RECENT_S` (24 hours), the newest first."""

    @property
    def queue(self) -> list[FlavorQueue]:
        """The SCHEDULING jobs per flavor, the longest wait first."""
        return scheduling_queue(self.waiting, self.at)

    @property
    def stalled(self) -> list[StallStatus]:
        return [s for s in self.stalls if s.stalled]

    @property
    def overruns(self) -> list[JobForecast]:
        return [f for f in self.forecasts if f.will_time_out]

    def line(self) -> str:
        """One status line: running, stalled, overruns, the month against the budget."""
        parts = [f"{self.running} running", f"{len(self.stalled)} stalled",
                 f"{len(self.overruns)} will time out"]
        if self.failing_tenants:
            n = len(self.failing_tenants)
            parts.append(f"{n} tenant{'s' if n != 1 else ''} failing ("
                         + ", ".join(f.tenant for f in self.failing_tenants[:3]) + (", ..." if n > 3 else "") + ")")
        parts.append(f"{len(self.failures)} failed in 24h")
        if self.waiting:
            parts.append(queue_line(self.queue, self.at)
                         + (f" ({len(self.stuck)} stuck)" if self.stuck else ""))
        if self.failing:
            n = len(self.failing)
            parts.append(f"{n} schedule{'s' if n != 1 else ''} failing ("
                         + ", ".join(f"{s.scheduled_job_id} {s.failures}x" for s in self.failing[:3])
                         + (", ..." if n > 3 else "") + ")")
        if self.stale_live:
            n = len(self.stale_live)
            parts.append(f"{n} live adapter{'s' if n != 1 else ''} stale ("
                         + ", ".join(f"{s.tenant} {format_duration(s.age_s)}" for s in self.stale_live[:3])
                         + (", ..." if n > 3 else "") + ")")
        s = self.summary
        if s is not None:
            budget = f" of ${s.budget_usd:,.2f} budget" if s.budget_usd is not None else ""
            parts.append(f"{s.month} projected ${s.projection_usd:,.2f}{budget}")
        if self.problems:
            parts.append(f"{len(self.problems)} read(s) failed")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "running": self.running,
            "forecasts": [f.to_dict() for f in self.forecasts],
            "stalls": [s.to_dict() for s in self.stalls],
            "events": [e.to_dict() for e in self.events],
            "queue": [q.to_dict() for q in self.queue],
            "stuck": dict(self.stuck),
            "failing_schedules": [s.to_dict() for s in self.failing],
            "stale_live": [s.to_dict() for s in self.stale_live],
            "failing_tenants": [f.to_dict() for f in self.failing_tenants],
            "failures_24h": [f.to_dict() for f in self.failures],
            "stalled": [s.to_dict() for s in self.stalled],
            "overruns": [f.to_dict() for f in self.overruns],
            "problems": list(self.problems),
            # the month's money, as `console ledger --summary --json` gives it (one projection)
            "money": self.summary.to_dict() if self.summary is not None else None,
        }

    def status(self) -> dict[str, Any]:
        """The current picture as one JSON object (`console watch --json`'s status line):
        `to_dict` without the events, marked `"event": "status"` and with its one line."""
        d = self.to_dict()
        d.pop("events")
        return {"event": "status", "line": self.line(), **d}

    def picture(self) -> list[str]:
        """The current picture as plain lines, one per thing that needs someone (none: all well)."""
        out = [f"failing now: {f.line()}" for f in self.failing_tenants]
        out += [f"stalled: {s.tenant} job {s.job_id} {s.line()}" for s in self.stalled]
        out += [f"will time out: {f.tenant} job {f.job_id} {f.line()}" for f in self.overruns]
        out += [f"stuck in SCHEDULING: job {job_id} for {format_duration(waited)}"
                for job_id, waited in self.stuck.items()]
        out += [f"schedule failing: {s.tenant} schedule {s.scheduled_job_id} failed {s.failures} runs in a row"
                + (f" (last {s.last_job_id})" if s.last_job_id else "") for s in self.failing]
        out += [f"live adapter stale: {s.tenant} {s.repo_id} {s.commit[:8]}, {format_duration(s.age_s)} old"
                for s in self.stale_live]
        failing_ids = {f.job_id for f in self.failing_tenants}
        out += [f"failed in 24h: {f.line()}" for f in self.failures if f.job_id not in failing_ids]
        return [plain(line, 400) for line in out]


def problem_text(exc: BaseException) -> str:
    """A read that failed, as a report's problem: the exception in one line of at most 200 characters."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
