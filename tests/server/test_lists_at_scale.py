"""The job and schedule lists at fleet scale: answered from indexed SQLite, in bounded pieces.

A fleet of thousands of schedules must not cost the server a parse of every spec five times a
second (the scheduler's tick), nor one answer held whole in memory (the schedule list).
"""

from __future__ import annotations

import json
import time

from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE

from console.server.jobs.store import JobRecord, ScheduledJobRecord, Store


def _schedule(store: Store, n: int, *, next_run_at: float | None, suspend: bool = False) -> ScheduledJobRecord:
    sj = ScheduledJobRecord(
        id=f"{n:024x}", namespace="ops", created_at=1000.0 + n, schedule="0 3 * * 1",
        spec={"command": ["echo", str(n)], "labels": {"tenant": f"t{n}"}},
        suspend=suspend, next_run_at=next_run_at,
    )
    return store.insert_scheduled(sj)


def test_due_schedules_come_from_the_index_and_skip_suspended_ones(tmp_path) -> None:
    store = Store(tmp_path / "jobs.db")
    now = time.time()
    _schedule(store, 1, next_run_at=now - 5)
    _schedule(store, 2, next_run_at=now + 3600)
    _schedule(store, 3, next_run_at=now - 1, suspend=True)
    _schedule(store, 4, next_run_at=None)
    _schedule(store, 5, next_run_at=now)
    assert [sj.id for sj in store.due_scheduled(now)] == [f"{1:024x}", f"{5:024x}"]
    plan = " ".join(str(r) for r in store._db.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM scheduled_jobs "
        "WHERE suspend = 0 AND next_run_at IS NOT NULL AND next_run_at <= ?", (now,)))
    assert "scheduled_due" in plan
    timing = store.scheduled_timing()
    assert [t[0] for t in timing] == [f"{n:024x}" for n in range(1, 6)]
    assert timing[2][2] is True and timing[3][3] is None


def test_schedules_are_read_in_batches_in_creation_order(tmp_path) -> None:
    store = Store(tmp_path / "jobs.db")
    for n in range(1, 12):
        _schedule(store, n, next_run_at=None)
    got = [sj.spec["command"][1] for sj in store.iter_scheduled("ops", batch=4)]
    assert got == [str(n) for n in range(1, 12)]
    assert list(store.iter_scheduled("elsewhere", batch=4)) == []


def test_queued_jobs_are_found_by_stage_without_a_scan(tmp_path) -> None:
    store = Store(tmp_path / "jobs.db")
    store.insert_jobs_bulk(
        JobRecord(id=f"{n:024x}", namespace="ops", created_at=float(n), stage="COMPLETED", spec={})
        for n in range(50)
    )
    plan = " ".join(str(r) for r in store._db.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE stage IN ('SCHEDULING') ORDER BY seq ASC"))
    assert "jobs_stage_seq" in plan


def test_the_schedule_list_streams_every_schedule(server, api: HfApi) -> None:
    for n in range(7):
        api.create_scheduled_job(
            image="python:3.12", command=["python", "-c", f"print({n})"], schedule="0 3 * * 1",
            labels={"tenant": f"t{n}", "env": "prod" if n % 2 else "dev"}, namespace=NAMESPACE,
        )
    listed = api.list_scheduled_jobs(namespace=NAMESPACE)
    assert sorted(sj.job_spec.labels["tenant"] for sj in listed) == [f"t{n}" for n in range(7)]
    pieces = list(server.service.scheduled_listing({"env": "prod"}))
    assert len(pieces) == 2 + 3  # "[", three schedules, "]"
    assert sorted(d["jobSpec"]["labels"]["tenant"] for d in json.loads(b"".join(pieces))) == ["t1", "t3", "t5"]
    assert json.loads(b"".join(server.service.scheduled_listing({"env": "none"}))) == []
