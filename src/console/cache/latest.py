"""Each tenant's newest training run and newest completed one: all the fleet's last-run columns need.

`console.fleet.derive_fleet` reads a tenant's last run (its stage and age) from the newest of its
jobs and its last success (loss, adapter, staleness) from the newest completed one. Given only
those two jobs per tenant it derives the same rows as from the whole history, so the console
keeps these (a few per tenant) in memory and the history in the cache (`console.cache.store`).

Headless: no Textual, no console.ui or console.server.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from console.cache.store import is_training_job

_EPOCH = datetime.fromtimestamp(0, UTC)


def _labels(job: Any) -> dict[str, str]:
    labels = getattr(job, "labels", None)
    if labels is None and getattr(job, "job_spec", None) is not None:
        labels = job.job_spec.labels
    return labels or {}


def finished_when(job: Any) -> datetime:
    """When a run ended (else started, else was created): how the fleet orders completed runs."""
    for attr in ("finished_at", "started_at", "created_at"):
        value = getattr(job, attr, None)
        if value is not None:
            return value
    return _EPOCH


class LatestRuns:
    """tenant -> its newest training run and its newest completed one (`JobInfo`s)."""

    def __init__(self) -> None:
        self.newest: dict[str, Any] = {}
        self.completed: dict[str, Any] = {}
        self._ids: frozenset[str] | None = None
        """`ids()`, kept until a run is observed or forgotten (read on every refresh: 10,000
        tenants' runs)."""

    def copy(self) -> LatestRuns:
        """A copy a worker thread can change (the dicts are copied whole, under the GIL)."""
        other = LatestRuns()
        other.newest, other.completed = dict(self.newest), dict(self.completed)
        return other

    def observe(self, job: Any) -> str | None:
        """Take `job` into account; returns its tenant when it changed what is kept."""
        labels = _labels(job)
        if not is_training_job(labels):
            return None
        tenant = labels["tenant"]
        changed = False
        newest = self.newest.get(tenant)
        created = job.created_at or _EPOCH
        if newest is None or newest.id == job.id or created > (newest.created_at or _EPOCH):
            self.newest[tenant] = job
            changed = True
        best = self.completed.get(tenant)
        if job.status.stage == "COMPLETED":
            if best is None or best.id == job.id or finished_when(job) > finished_when(best):
                self.completed[tenant] = job
                changed = True
        elif best is not None and best.id == job.id:
            del self.completed[tenant]  # no longer completed (not something HF does; stay exact)
            changed = True
        if changed:
            self._ids = None
        return tenant if changed else None

    def observe_all(self, jobs: Iterable[Any]) -> set[str]:
        return {t for job in jobs if (t := self.observe(job)) is not None}

    def forget(self, job_ids: Iterable[str]) -> set[str]:
        """Drop these jobs; returns the tenants that lost their newest or completed run (their
        next ones are in the cache: `JobCache.latest_runs`)."""
        ids = set(job_ids)
        hit: set[str] = set()
        for kept in (self.newest, self.completed):
            for tenant, job in list(kept.items()):
                if job.id in ids:
                    del kept[tenant]
                    hit.add(tenant)
        if hit:
            self._ids = None
        return hit

    def jobs(self) -> list[Any]:
        """Every kept job once (a tenant's newest run is often its newest completed one)."""
        out = {job.id: job for job in self.newest.values()}
        for job in self.completed.values():
            out.setdefault(job.id, job)
        return list(out.values())

    def ids(self) -> frozenset[str]:
        """The ids of every kept job."""
        if self._ids is None:
            self._ids = frozenset(job.id for job in self.newest.values()).union(
                job.id for job in self.completed.values())
        return self._ids

    def newest_successes(self) -> dict[str, str]:
        """tenant -> id of its newest completed training run (whose outcome the fleet shows)."""
        return {tenant: job.id for tenant, job in self.completed.items()}
