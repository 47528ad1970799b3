"""The runs that ended lately, as the passes read them: which tenants are failing now (their newest
finished run ended ERROR) and which runs failed in the last `RECENT_S`.

A pass reads the head of the job list and the jobs that ended since the last one
(`Watcher._jobs`); :class:`RecentRuns` keeps, of what the passes read, each tenant's newest
finished run and the failures of the window, so a watcher running for days keeps the picture
without reading the whole list again. Why each failed is what its event said (the on-call store
keeps every event found, whoever found it), else, for a tenant failing now, its log tail read once
(`TAILS_PER_PASS` a pass), else the job's own status (`why_failed` without a log).

No Textual, no console.ui, console.server or console.backend, no network.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console import jobspec
from console.jobs import job_row
from console.oncall.report import RunFailure
from console.oncall.store import OnCallStore
from console.oncall.why import why_failed
from console.stages import COMPLETED, ERROR

TAILS_PER_PASS = 20
"""At most this many failing tenants' log tails read a pass for why they failed (those no event
said it for); each is read once."""
RECENT_S = 86400.0
"""The failures of this long are the picture's "failed in 24h"."""
FINISHED = (COMPLETED, ERROR)
"""The stages that end a run one way or the other (a cancelled run neither fails nor passes)."""


@dataclass
class _Ended:
    job: Any
    tenant: str
    ended_at: float


class RecentRuns:
    """Each tenant's newest finished run and the window's failures (see the module docstring)."""

    def __init__(self, store: OnCallStore, window_s: float = RECENT_S) -> None:
        self.store = store
        self.window_s = window_s
        self._newest: dict[str, _Ended] = {}
        self._failed: dict[str, _Ended] = {}
        self._read: dict[str, str | None] = {}
        """job id -> why it failed, as its log tail said (None: the tail could not be read)."""

    def observe(self, jobs: list[Any], now: datetime) -> None:
        """Take in the jobs a pass read (those not finished are passed over)."""
        for job in jobs:
            stage = job.status.stage
            if stage not in FINISHED:
                continue
            when = job.finished_at or job.created_at
            ended = _Ended(job, jobspec.labels_held(job).get("tenant") or "-",
                           when.timestamp() if when is not None else now.timestamp())
            if ended.tenant != "-":
                newest = self._newest.get(ended.tenant)
                if newest is None or (ended.ended_at, job.id) >= (newest.ended_at, newest.job.id):
                    self._newest[ended.tenant] = ended
            if stage == ERROR:
                self._failed[job.id] = ended
        horizon = now.timestamp() - self.window_s
        for job_id in [j for j, e in self._failed.items() if e.ended_at < horizon]:
            del self._failed[job_id]
        keep = {e.job.id for e in self._newest.values()} | set(self._failed)
        self._read = {j: r for j, r in self._read.items() if j in keep}

    def picture(self, now: datetime, prices: Any,
                read_tail: Callable[[str], Sequence[str]] | None = None) -> tuple[list[RunFailure], list[RunFailure]]:
        """(the tenants failing now, the window's failures), each the newest first. `read_tail`
        reads a job's log tail (for why a failing tenant's run failed when no event said it)."""
        failing = [e for e in self._newest.values() if e.job.status.stage == ERROR]
        wanted = {e.job.id: e for e in [*failing, *self._failed.values()]}
        said = self._reasons(list(wanted))
        unread = [e for e in failing if e.job.id not in said and e.job.id not in self._read]
        for e in sorted(unread, key=lambda e: -e.ended_at)[:TAILS_PER_PASS] if read_tail else ():
            try:
                why = why_failed(e.job, list(read_tail(e.job.id)))
            except Exception:  # noqa: BLE001 - without its log, its status says something
                why = None
            self._read[e.job.id] = why.text if why else None

        def failure(e: _Ended) -> RunFailure:
            kind = jobspec.labels_held(e.job).get("kind") or "-"
            reason = said.get(e.job.id) or self._read.get(e.job.id)
            if reason is None:
                why = why_failed(e.job, [])
                reason = why.text if why else (e.job.status.message or ERROR)
            return RunFailure(tenant=e.tenant, job_id=e.job.id, kind=kind, ended_at=e.ended_at,
                              reason=reason, cost_usd=job_row(e.job, now=now, prices=prices).cost_usd)

        def newest_first(items: list[_Ended]) -> list[RunFailure]:
            return [failure(e) for e in sorted(items, key=lambda e: (-e.ended_at, e.job.id))]

        return newest_first(failing), newest_first(list(self._failed.values()))

    def _reasons(self, job_ids: list[str]) -> dict[str, str]:
        """job id -> why it failed, as its event said (read from its log), for those with one."""
        keys = {f"{kind}:{job_id}": job_id for job_id in job_ids for kind in ("job_error", "job_timeout")}
        out: dict[str, str] = {}
        for key, payload in self.store.payloads(keys).items():
            try:
                data = json.loads(payload).get("data") or {}
                reason = data.get("reason") or data.get("message")
            except (ValueError, AttributeError):
                continue
            if isinstance(reason, str) and reason:
                out[keys[key]] = reason
        return out

