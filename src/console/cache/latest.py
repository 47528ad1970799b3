"""Each tenant's newest training run and newest completed one: all the fleet's last-run columns need.

`console.fleet.derive_fleet` reads a tenant's last run (its stage and age) from the newest of its
jobs and its last success (loss, adapter, staleness) from the newest completed one. Given only
those two jobs per tenant it derives the same rows as from the whole history, so the console
keeps these (a few per tenant) in memory and the history in the cache (`console.cache.store`).
Of each it keeps a `RunMark`: what those columns read, a tenth of a `JobInfo`; the whole job is
in the cache (`JobCache.doc`).

Headless: no Textual, no console.ui or console.server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console.cache.store import is_training_job
from console.stages import COMPLETED

_EPOCH = datetime.fromtimestamp(0, UTC)


def _labels(job: Any) -> dict[str, str]:
    labels = getattr(job, "labels", None)
    if labels is None and getattr(job, "job_spec", None) is not None:
        labels = job.job_spec.labels
    return labels or {}


MARK_LABELS = ("app", "tenant", "kind", "env")
"""The labels a `RunMark` keeps: whose run it is and what kind (what the fleet's rows read)."""


@dataclass(slots=True, eq=False)
class RunMark:
    """What is kept of a tenant's newest run or newest completed one: its id, whose run it is
    (`MARK_LABELS`), when it was created, started and finished, and its status. Read like a
    `JobInfo` by the fleet (`derive_fleet`); everything else about the job is in the cache."""

    id: str
    labels: dict[str, str]
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    status: Any


def _reads_as(mark: RunMark, job: Any, labels: dict[str, str]) -> bool:
    """Whether `mark` says what a mark of `job` (with these labels) would."""
    return (mark.created_at == job.created_at and mark.started_at == getattr(job, "started_at", None)
            and mark.finished_at == getattr(job, "finished_at", None) and mark.status == job.status
            and len(mark.labels) == sum(1 for name in MARK_LABELS if name in labels)
            and all(labels.get(name) == value for name, value in mark.labels.items()))


def finished_when(job: Any) -> datetime:
    """When a run ended (else started, else was created): how the fleet orders completed runs."""
    for attr in ("finished_at", "started_at", "created_at"):
        value = getattr(job, attr, None)
        if value is not None:
            return value
    return _EPOCH


class LatestRuns:
    """tenant -> its newest training run and its newest completed one (a `RunMark` of each).

    Every change is per job: `observe` and `forget` touch one tenant each, and what stops being
    kept is noted (`take_displaced`), so the refresher drops it from memory without rescanning
    every tenant's runs."""

    def __init__(self, held: Mapping[str, RunMark] | None = None) -> None:
        self._held: Mapping[str, RunMark] = held or {}
        """job id -> the mark already held of it (a whole re-read's: the console's marks before
        it): a job that reads the same is kept as that mark, not a new one."""
        self.newest: dict[str, RunMark] = {}
        self.completed: dict[str, RunMark] = {}
        self._kept: dict[str, tuple[str, int]] = {}
        """job id -> (its tenant, how many of newest / completed hold it: 1 or 2), replaced, never
        changed in place (a copy shares them)."""
        self._displaced: set[str] = set()
        """Ids no longer kept since the last `take_displaced`."""
        self._ids: frozenset[str] | None = None
        """`ids()`, kept until a run is observed or forgotten."""

    def copy(self) -> LatestRuns:
        """A copy a worker thread can change (the dicts are copied whole, under the GIL)."""
        other = LatestRuns()
        other.newest, other.completed = dict(self.newest), dict(self.completed)
        other._kept = dict(self._kept)
        return other

    @classmethod
    def of(cls, newest: dict[str, RunMark], completed: dict[str, RunMark],
           held: Mapping[str, tuple[str, int]] | None = None) -> LatestRuns:
        """These runs kept (tenant -> its newest run's mark, tenant -> its newest completed one's);
        what it notes of each job the same object as in `held` (another's `entries()`) where equal."""
        out = cls()
        for tenant, mark in newest.items():
            out._hold(out.newest, tenant, mark)
        for tenant, mark in completed.items():
            out._hold(out.completed, tenant, mark)
        if held:
            out._kept = {job_id: old if (old := held.get(job_id)) == entry else entry
                         for job_id, entry in out._kept.items()}
        return out

    def entries(self) -> dict[str, tuple[str, int]]:
        """A copy of what it notes of each kept job (for `of`)."""
        return dict(self._kept)

    def _hold(self, kept: dict[str, RunMark], tenant: str, job: RunMark) -> None:
        old = kept.get(tenant)
        kept[tenant] = job
        if old is not None and old.id == job.id:
            return
        if old is not None:
            self._release(old.id)
        entry = self._kept.get(job.id)
        if entry is None:
            self._kept[job.id] = (tenant, 1)
            self._displaced.discard(job.id)
        else:
            self._kept[job.id] = (entry[0], entry[1] + 1)
        self._ids = None

    def _drop(self, kept: dict[str, RunMark], tenant: str) -> None:
        self._release(kept.pop(tenant).id)
        self._ids = None

    def _release(self, job_id: str) -> None:
        entry = self._kept.get(job_id)
        if entry is None:
            return
        if entry[1] <= 1:
            del self._kept[job_id]
            self._displaced.add(job_id)
        else:
            self._kept[job_id] = (entry[0], entry[1] - 1)

    def observe(self, job: Any) -> str | None:
        """Take `job` into account; returns its tenant when it changed what is kept."""
        labels = _labels(job)
        if not is_training_job(labels):
            return None
        tenant = labels["tenant"]
        changed = False
        mark = None
        newest = self.newest.get(tenant)
        created = job.created_at or _EPOCH
        if newest is None or newest.id == job.id or created > (newest.created_at or _EPOCH):
            mark = self._mark(job, tenant, labels)
            self._hold(self.newest, tenant, mark)
            changed = True
        best = self.completed.get(tenant)
        if job.status.stage == COMPLETED:
            if best is None or best.id == job.id or finished_when(job) > finished_when(best):
                self._hold(self.completed, tenant, mark or self._mark(job, tenant, labels))
                changed = True
        elif best is not None and best.id == job.id:
            self._drop(self.completed, tenant)  # no longer completed (not something HF does; stay exact)
            changed = True
        return tenant if changed else None

    def _mark(self, job: Any, tenant: str, labels: dict[str, str]) -> RunMark:
        """The mark of `job` (itself if it is one); its labels shared with the tenant's other
        kept run when they read the same."""
        if isinstance(job, RunMark):
            return job
        held = self._held.get(job.id)
        if held is not None and _reads_as(held, job, labels):
            return held
        kept = {name: labels[name] for name in MARK_LABELS if name in labels}
        for other in (self.newest.get(tenant), self.completed.get(tenant)):
            if other is not None and other.labels == kept:
                kept = other.labels
                break
        return RunMark(job.id, kept, job.created_at, getattr(job, "started_at", None),
                       getattr(job, "finished_at", None), job.status)

    def observe_all(self, jobs: Iterable[Any]) -> set[str]:
        return {t for job in jobs if (t := self.observe(job)) is not None}

    def forget(self, job_ids: Iterable[str]) -> set[str]:
        """Drop these jobs; returns the tenants that lost their newest or completed run (their
        next ones are in the cache: `JobCache.latest_runs`)."""
        hit: set[str] = set()
        for job_id in set(job_ids):
            entry = self._kept.get(job_id)
            if entry is None:
                continue
            tenant = entry[0]
            for kept in (self.newest, self.completed):
                job = kept.get(tenant)
                if job is not None and job.id == job_id:
                    self._drop(kept, tenant)
                    hit.add(tenant)
        return hit

    def keeps(self, job_id: str) -> bool:
        """Whether this job is a tenant's newest or newest completed run."""
        return job_id in self._kept

    def take_displaced(self) -> set[str]:
        """The ids that stopped being kept since the last call (and are not kept again since)."""
        out, self._displaced = self._displaced, set()
        return out

    def jobs(self) -> list[RunMark]:
        """Every kept run's mark once (a tenant's newest run is often its newest completed one)."""
        out = {job.id: job for job in self.newest.values()}
        for job in self.completed.values():
            out.setdefault(job.id, job)
        return list(out.values())

    def ids(self) -> frozenset[str]:
        """The ids of every kept job."""
        if self._ids is None:
            self._ids = frozenset(self._kept)
        return self._ids

    def newest_success(self, tenant: str) -> str | None:
        """The id of the tenant's newest completed training run (None: it has none)."""
        job = self.completed.get(tenant)
        return job.id if job is not None else None

    def newest_successes(self) -> dict[str, str]:
        """tenant -> id of its newest completed training run (whose outcome the fleet shows)."""
        return {tenant: job.id for tenant, job in self.completed.items()}
