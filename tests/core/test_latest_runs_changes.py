"""Each tenant's newest runs change job by job: what stops being kept is told (so the refresher
drops it from memory without rescanning every tenant), forgetting a job touches its tenant only,
and the kept ids always agree with the newest and newest completed runs, whatever the order."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from tests.ledger.jobjson import job as api_job

from console.cache.latest import LatestRuns

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _job(job_id: str, tenant: str, stage: str, minutes: int):
    return api_job(job_id, stage=stage, labels={"app": "console", "tenant": tenant, "kind": "sft"},
                   created=T0 + timedelta(minutes=minutes))


def test_a_newer_run_displaces_the_old_one_and_says_so():
    latest = LatestRuns()
    latest.observe(_job("a1", "acme", "COMPLETED", 0))
    assert latest.take_displaced() == set() and latest.keeps("a1")
    latest.observe(_job("a2", "acme", "RUNNING", 10))
    assert latest.keeps("a1") and latest.keeps("a2")  # a1 is still the newest completed
    assert latest.take_displaced() == set()
    latest.observe(_job("a2", "acme", "COMPLETED", 10))
    assert latest.take_displaced() == {"a1"} and not latest.keeps("a1")
    assert latest.newest_success("acme") == "a2"
    assert latest.take_displaced() == set()  # told once
    assert latest.forget(["a2"]) == {"acme"} and latest.take_displaced() == {"a2"}
    assert latest.newest_success("acme") is None and latest.ids() == frozenset()


def test_forgetting_touches_only_the_tenants_of_the_jobs_forgotten():
    latest = LatestRuns()
    for i in range(50):
        latest.observe(_job(f"j{i}", f"t{i}", "COMPLETED", i))
    assert latest.forget(["j7", "nope"]) == {"t7"}
    assert len(latest.ids()) == 49 and "t7" not in latest.newest


def test_the_kept_ids_agree_with_the_kept_runs_in_any_order():
    rng = random.Random(11)
    jobs = [_job(f"j{n}", f"t{n % 5}", rng.choice(("COMPLETED", "ERROR", "RUNNING")), rng.randrange(100))
            for n in range(300)]
    latest = LatestRuns()
    displaced: set[str] = set()
    for job in jobs:
        latest.observe(job)
        if rng.random() < 0.1:
            latest.forget([rng.choice(jobs).id])
        displaced |= latest.take_displaced()
        kept = {j.id for j in latest.newest.values()} | {j.id for j in latest.completed.values()}
        assert latest.ids() == kept
        assert not (displaced & kept) or all(latest.keeps(i) for i in displaced & kept)
    copy = latest.copy()
    copy.forget(list(copy.ids()))
    assert copy.ids() == frozenset() and latest.ids() == {j.id for j in latest.jobs()}
