"""A job's stage at a past time, from its created / started / finished times (`console.fleet.past`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from console.fleet.past import fleet_as_of, stage_as_of

T0 = datetime(2026, 12, 7, 3, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)


def job(stage, created, started=None, finished=None, tenant="acme", id="j1"):
    labels = {"app": "console", "tenant": tenant, "kind": "sft"}
    return SimpleNamespace(id=id, labels=labels, created_at=created, started_at=started, finished_at=finished,
                           status=SimpleNamespace(stage=stage, message=None))


def test_each_stage_as_it_stood():
    failed = job("ERROR", T0 - 10 * MIN, T0 - 9 * MIN, T0 + 20 * MIN)
    assert stage_as_of(failed, T0 - 11 * MIN) is None  # not created yet
    assert stage_as_of(failed, T0 - 10 * MIN) == "SCHEDULING"
    assert stage_as_of(failed, T0) == "RUNNING"  # it failed at 03:20
    assert stage_as_of(failed, T0 + 20 * MIN) == "ERROR"
    canceled = job("CANCELED", T0 - MIN)  # canceled while queued: no start, no finish time
    assert stage_as_of(canceled, T0) == "CANCELED"
    running = job("RUNNING", T0 - MIN, T0)
    assert stage_as_of(running, T0 - MIN) == "SCHEDULING" and stage_as_of(running, T0) == "RUNNING"


def test_the_rows_read_the_last_run_started_by_then():
    jobs = [
        job("COMPLETED", T0 - 60 * MIN, T0 - 59 * MIN, T0 - 50 * MIN, id="old"),
        job("ERROR", T0 - 10 * MIN, T0 - 9 * MIN, T0 + 20 * MIN, id="failing"),
        job("COMPLETED", T0 + 30 * MIN, T0 + 31 * MIN, T0 + 40 * MIN, id="later"),
    ]
    [row] = fleet_as_of([], jobs, T0, request_of=lambda j: None)
    assert (row.last_job_id, row.last_stage, row.failed) == ("failing", "RUNNING", False)
    assert row.last_success_at == T0 - 50 * MIN and row.last_at == T0 - 9 * MIN
    [row] = fleet_as_of([], jobs, T0 + 25 * MIN, request_of=lambda j: None)
    assert (row.last_stage, row.failed) == ("ERROR", True)
    assert fleet_as_of([], jobs, T0 - 61 * MIN, request_of=lambda j: None) == []
