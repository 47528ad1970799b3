"""What a read keeps: the objects the console already holds, wherever the read found them unchanged.

A whole re-read (`refresh_read.RefreshRead._read_all`, every `FULL_SYNC_SECONDS`) parses every
job, 100,000 of them at 10,000 tenants, and makes its long-lived results (each tenant's newest
runs, the scheduled jobs, the fleet rows) in among those short-lived parse objects. Python's
allocator hands a 1 MiB arena back only when every block in it is free, so results made there keep
a few live blocks in each of the read's arenas and the console's memory steps up by the read's
whole working set (about 50 MiB at 10,000 tenants). So the read keeps what the console held before
wherever it reads the same (`Kept`, a copy of the refresher's dicts taken on the UI thread): the
same `RunMark`, `KeptSchedule` and fleet row objects, with their strings and times; only what
changed is new, and the read's new copies of the rest go with its parse objects.

Headless: no Textual.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from console.cache.latest import LatestRuns, RunMark


@dataclass(frozen=True)
class Kept:
    """What the console holds (copies of the refresher's dicts, taken on the UI thread)."""

    scheduled: Mapping[str, Any] = field(default_factory=dict)
    """schedule id -> its `KeptSchedule`."""
    newest: Mapping[str, RunMark] = field(default_factory=dict)
    completed: Mapping[str, RunMark] = field(default_factory=dict)
    """tenant -> its newest run / its newest completed run (`LatestRuns`)."""
    entries: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    """What `LatestRuns` notes of each kept job (`LatestRuns.entries`)."""
    fleet: Mapping[str, Any] = field(default_factory=dict)
    """tenant -> its fleet row."""

    def marks(self) -> dict[str, RunMark]:
        """job id -> the mark held of it (for a whole read's `LatestRuns`)."""
        return {m.id: m for held in (self.newest, self.completed) for m in held.values()}


def _same(a: Any, b: Any) -> bool:
    """Whether two records of one dataclass (`KeptSchedule`, `RunMark`: compared by identity, so
    `==` says nothing) hold equal values in every field."""
    return (type(a) is type(b) and dataclasses.is_dataclass(a)
            and all(getattr(a, f.name) == getattr(b, f.name) for f in dataclasses.fields(a) if f.compare))


def keep_schedules(scheduled: list[Any], kept: Mapping[str, Any]) -> list[Any]:
    """The schedules as read (`ScheduledJobInfo`s), as the console keeps them
    (`jobspec.keep_schedule`), each the console holds unchanged the one it holds. `scheduled` is
    emptied as it goes: each read schedule goes once kept, so that 10,000 of them and their kept
    copies are not all alive at once."""
    from console import jobspec

    scheduled.reverse()
    out = []
    while scheduled:
        sj = jobspec.keep_schedule(scheduled.pop())
        old = kept.get(sj.id)
        out.append(old if old is not None and _same(old, sj) else sj)
    return out


def keep_latest(latest: LatestRuns, kept: Kept) -> LatestRuns:
    """Each tenant's newest runs as `latest` read them, held in the marks the console holds where
    they read the same (a new `LatestRuns`, built once the read's parse objects are gone)."""

    def pick(tenant: str, mark: RunMark, held: Mapping[str, RunMark]) -> RunMark:
        old = held.get(tenant)
        if old is None:
            return mark
        if old is mark or _same(old, mark):
            return old
        return mark

    newest = {t: pick(t, m, kept.newest) for t, m in latest.newest.items()}
    completed = {t: pick(t, m, kept.completed) for t, m in latest.completed.items()}
    for tenant, mark in completed.items():  # a run both newest and newest completed: one mark
        other = newest.get(tenant)
        if other is not None and other is not mark and other.id == mark.id and _same(other, mark):
            completed[tenant] = other
    return LatestRuns.of(newest, completed, kept.entries)


def keep_fleet(rows: list[Any], kept: Mapping[str, Any]) -> list[Any]:
    """The fleet rows with each row the console holds unchanged replaced by the one it holds."""
    out = []
    for row in rows:
        old = kept.get(row.tenant)
        out.append(old if old is not None and type(old) is type(row) and old == row else row)
    return out
