"""The local cache of every job: pages return every job once, in the table's order; the filter in
SQL agrees with `JobFilter.matches`; a whole read drops what the list no longer has; the snapshot
of the fleet and the ledger reads back as it was kept; a broken file is rebuilt."""

from __future__ import annotations

import dataclasses
import random
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from tests.ledger.jobjson import job as api_job

from console.cache import JobCache, snapshot
from console.cache.docs import job_doc, job_info
from console.cache.latest import LatestRuns
from console.jobs import JobRow, job_row, parse_filter

T0 = datetime(2026, 12, 1, tzinfo=UTC)
STAGES = ("COMPLETED", "COMPLETED", "COMPLETED", "ERROR", "CANCELED", "RUNNING", "SCHEDULING")


def row(n: int, *, stage: str | None = None, tenant: str | None = None, created: datetime | None = None) -> JobRow:
    tenant = tenant or f"t{n % 7}"
    return JobRow(
        id=f"{n:024x}",
        tenant=tenant,
        kind="sft" if n % 5 else "validate",
        stage=stage or STAGES[n % len(STAGES)],
        flavor=("l4x1", "a10g-small")[n % 2],
        created_at=created or T0 + timedelta(minutes=n // 3),  # ties: three jobs a minute
        started_at=T0 + timedelta(minutes=n // 3, seconds=5),
        running_seconds=60.0 * (n % 11),
        cost_usd=0.01 * (n % 13),
        labels={"app": "console", "tenant": tenant, "env": ("dev", "prod")[n % 2], "kind": "sft"},
        message="CUDA out of memory" if n % 17 == 3 else None,
    )


@pytest.fixture
def cache(tmp_path) -> JobCache:
    return JobCache(tmp_path / "cache" / "jobs.sqlite")


def test_pages_return_every_job_once_in_the_tables_order(cache):
    rows = [row(n) for n in range(1234)]
    random.Random(7).shuffle(rows)
    cache.put((r, None) for r in rows)
    assert cache.count() == 1234
    seen: list[JobRow] = []
    page = cache.page(limit=100)
    while page:
        seen += page
        page = cache.page(limit=100, after=page[-1])
    assert sorted(r.id for r in seen) == sorted(r.id for r in rows)
    assert len({r.id for r in seen}) == len(seen)
    keys = [({"RUNNING": 0, "SCHEDULING": 1}.get(r.stage, 2), -r.created_at.timestamp(), r.id) for r in seen]
    assert keys == sorted(keys, key=lambda k: (k[0], k[1], _desc(k[2])))
    assert seen[0].stage == "RUNNING" and seen[-1].stage not in ("RUNNING", "SCHEDULING")
    by_id = {r.id: r for r in rows}
    assert all(r == by_id[r.id] for r in seen)  # every field reads back


def _desc(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)


@pytest.mark.parametrize("text", [
    "", "tenant:t3", "T:T1", "stage:run", "s:err,canc", "label:env=prod", "l:env", "l:env=nope",
    "cuda", "val", "t2 stage:comp label:env=dev", "000000000000000000000042", "a10g 5",
    "100%", "t_",
])
def test_the_filter_in_sql_matches_what_jobfilter_matches(cache, text):
    rows = [row(n) for n in range(400)]
    cache.put((r, None) for r in rows)
    job_filter = parse_filter(text)
    expected = {r.id for r in rows if job_filter.matches(r)}
    assert cache.count(job_filter) == len(expected)
    got: list[JobRow] = []
    page = cache.page(job_filter, limit=37)
    while page:
        got += page
        page = cache.page(job_filter, limit=37, after=page[-1])
    assert {r.id for r in got} == expected and len(got) == len(expected)


def test_a_whole_read_drops_the_jobs_the_list_no_longer_has(cache):
    cache.put((row(n), None) for n in range(10))
    sync = cache.begin_sync()
    cache.put(((row(n), None) for n in range(3, 10)), sync=sync)
    assert sorted(cache.end_sync(sync)) == [f"{n:024x}" for n in range(3)]
    assert cache.count() == 7
    assert cache.synced_at() is not None


def test_a_job_document_reads_back_as_the_same_jobinfo(cache):
    info = api_job("abc", stage="ERROR", ran=300, message="Job timed out after 5m",
                   labels={"app": "console", "tenant": "acme", "kind": "sft"},
                   initiator={"type": "scheduled-job", "id": "sj1"})
    cache.put([(job_row(info, now=T0), info)])
    back = job_info(cache.doc("abc"), info.endpoint)
    assert job_doc(back) == job_doc(info)
    assert back.initiator.type == "scheduled-job" and back.durations.running_secs == info.durations.running_secs
    assert cache.row("abc").stage == "ERROR"


def test_each_tenants_newest_runs_come_back_from_the_cache(cache):
    def make(job_id: str, tenant: str, stage: str, hours: float):
        return api_job(job_id, stage=stage, created=T0 + timedelta(hours=hours),
                       labels={"app": "console", "tenant": tenant, "kind": "sft"})

    jobs = [make("a1", "acme", "COMPLETED", 1), make("a2", "acme", "COMPLETED", 2),
            make("a3", "acme", "ERROR", 3), make("g1", "globex", "COMPLETED", 1),
            api_job("x1", created=T0 + timedelta(hours=9), labels={"app": "other", "tenant": "acme"})]
    cache.put((job_row(j, now=T0), j) for j in jobs)
    latest = LatestRuns()
    latest.observe_all(job_info(d) for d in cache.latest_runs())
    assert {t: j.id for t, j in latest.newest.items()} == {"acme": "a3", "globex": "g1"}
    assert latest.newest_successes() == {"acme": "a2", "globex": "g1"}
    everything = LatestRuns()
    everything.observe_all(jobs)
    assert {j.id for j in everything.jobs()} == {j.id for j in latest.jobs()}
    assert latest.forget(["a3"]) == {"acme"}
    latest.observe_all(job_info(d) for d in cache.latest_runs(["acme"]))
    assert latest.newest["acme"].id == "a3"  # still in the cache: it comes back


def test_the_snapshot_keeps_the_fleet_and_the_ledger_summary(cache):
    from console.fleet import TenantRow
    from console.jobspec import TrainingRequest
    from console.ledger import ScheduleForecast, TenantSpend, summarize

    at = datetime(2026, 12, 3, 9, 30, tzinfo=UTC)
    assert snapshot.seen_at(cache) is None and snapshot.load_fleet(cache) is None
    snapshot.save_seen(cache, at)
    fleet = [TenantRow(tenant="acme", schedule="0 3 * * 1", next_run=at, last_at=at, last_loss=0.25,
                       request=TrainingRequest(tenant="acme", dataset="acme/chats", extra_env={"A": "1"}))]
    snapshot.save_fleet(cache, fleet)
    summary = summarize([], now=at, plan="pro")
    summary = dataclasses.replace(
        summary, by_tenant=[TenantSpend("acme", 3, 1.25, 4.5, 0.5)], by_month={"2026-11": 3.25, "2026-12": 1.25},
        schedules=[ScheduleForecast("sj1", "acme", "sft", "l4x1", "0 3 * * 1", False, 0.5, "heuristic", 4.35, 4,
                                    2.175, 2.0)],
        unknown_jobs=["j9"], budget_usd=100.0)
    snapshot.save_ledger(cache, summary)
    assert snapshot.seen_at(cache) == at
    assert snapshot.load_fleet(cache) == fleet
    assert snapshot.load_ledger(cache) == summary


def test_the_fleet_is_kept_a_row_at_a_time_and_a_changed_row_writes_only_itself(cache):
    """At 10,000 tenants the fleet is 14 MB of JSON; written whole for one changed row (a
    schedule fired, an outcome read), it was the console's memory peak after each re-read."""
    from console.fleet import TenantRow

    fleet = [TenantRow(tenant=f"t{i:02d}", schedule="0 3 * * 1") for i in range(20)]
    snapshot.save_fleet(cache, fleet)
    with cache._write() as conn:  # mark every kept row: a row written again loses its mark
        conn.execute("UPDATE fleet SET row = row || ' '")

    fleet[7] = dataclasses.replace(fleet[7], suspended=True)
    snapshot.save_fleet(cache, fleet)
    docs = list(cache.fleet_docs())
    assert [i for i, doc in enumerate(docs) if not doc.endswith(" ")] == [7]

    # a tenant gone and one new, out of order: the kept rows are the fleet, in its order
    fleet = [TenantRow(tenant="a-new", schedule="0 4 * * 1"), *fleet[:3], *fleet[4:]]
    snapshot.save_fleet(cache, fleet)
    cache.fleet_kept = {}
    assert snapshot.load_fleet(cache) == fleet


def test_a_fleet_kept_whole_by_an_older_console_still_paints_and_is_then_kept_row_by_row(cache):
    from console.fleet import TenantRow

    fleet = [TenantRow(tenant=t, schedule="0 3 * * 1") for t in ("acme", "globex")]
    cache.set_meta(snapshot.FLEET, "[" + ",".join(snapshot._dumps(snapshot._record(r)) for r in fleet) + "]")
    loaded = snapshot.load_fleet(cache)
    assert loaded == fleet
    snapshot.save_fleet(cache, loaded)
    assert len(list(cache.fleet_docs())) == 2 and cache.get_meta(snapshot.FLEET) is None
    cache.fleet_kept = {}
    assert snapshot.load_fleet(cache) == fleet


def test_a_cache_file_that_does_not_read_is_started_anew(tmp_path):
    path = tmp_path / "jobs.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    cache = JobCache(path)
    cache.put([(row(1), None)])
    assert cache.count() == 1
    newer = tmp_path / "newer.sqlite"
    with sqlite3.connect(newer) as conn:
        conn.execute("PRAGMA user_version = 99")
    assert JobCache(newer).count() == 0


def test_the_cache_imports_neither_huggingface_hub_nor_textual():
    code = ("import sys, console.cache, console.cache.snapshot, console.cache.latest; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('huggingface_hub', 'textual') or m.startswith(('console.fleet', 'console.ledger', 'console.server'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _training(tenant: str) -> dict:
    return {"app": "console", "tenant": tenant, "kind": "sft"}


def test_the_ids_of_the_kept_runs_follow_every_observe_and_forget():
    latest = LatestRuns()
    first = api_job("a1", stage="COMPLETED", labels=_training("acme"), created=T0)
    latest.observe(first)
    assert latest.ids() == {"a1"}
    newer = api_job("a2", stage="RUNNING", labels=_training("acme"), created=T0 + timedelta(hours=1))
    latest.observe(newer)
    assert latest.ids() == {"a1", "a2"}  # the newest run, and the newest completed one
    latest.observe(api_job("g1", stage="ERROR", labels=_training("globex"), created=T0))
    assert latest.ids() == {"a1", "a2", "g1"}
    latest.forget(["a1"])
    assert latest.ids() == {"a2", "g1"}
    copy = latest.copy()
    copy.forget(["g1"])
    assert copy.ids() == {"a2"} and latest.ids() == {"a2", "g1"}
