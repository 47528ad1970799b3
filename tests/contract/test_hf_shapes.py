"""HF's answers, as huggingface_hub 2.4 parses them, through the console: fleet derivation, costing
(ledger entries and the month's summary), the jobs table and `fleet apply`'s plan.

The shapes are `hf_shapes`' (legacy null durations, missing `finishedAt`, org owners, runs started
by a schedule, `suspend: null`, `lastJob`, `nextJobRunAt`, a scheduled spec with no readable
timeout). Nothing here is guessed: a job whose running time the answer does not give costs nothing
and is listed as unknown.
"""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest
from hf_shapes import NOW, SCHEDULE_ID, job_json, jobs, scheduled_from_submission
from huggingface_hub import JobInfo

from console import jobspec, paths
from console.cache.latest import LatestRuns, RunMark
from console.fleet import derive_fleet, desired_submission, load_fleet_file, plan_apply
from console.jobs import job_row
from console.ledger import Ledger, entry_from_job, running_seconds_of, summarize
from console.prices import shipped_price_book

L4 = 0.80  # l4x1 $/h, shipped
H200X8 = 40.00


def test_costing_rests_on_evidence_only():
    j = jobs()
    assert running_seconds_of(j["completed"], NOW) == (1500.0, "durations")
    assert running_seconds_of(j["running"], NOW) == (290.0, "durations")
    assert running_seconds_of(j["canceled_queued"], NOW) == (0.0, "never-started")
    # started 32 days ago, ended who knows when: not 2,764,794 s "until now"
    assert running_seconds_of(j["legacy_error"], NOW) == (None, "unknown")
    assert running_seconds_of(j["legacy_completed"], NOW) == (None, "unknown")  # it ran, for how long?

    error = entry_from_job(j["legacy_error"], now=NOW)
    assert not error.known and error.cost_usd == 0.0 and error.running_source == "unknown"
    assert error.tenant == "globex" and error.stage == "ERROR" and error.flavor == "h200x8"
    completed = entry_from_job(j["completed"], now=NOW)
    assert completed.known and completed.cost_usd == pytest.approx(1500 / 3600 * L4)
    assert completed.scheduled_job_id == SCHEDULE_ID  # from the run's initiator, which has no name
    assert (completed.model_b, completed.epochs, completed.examples) == (0.5, 1.5, 1000)  # 0p5, 1p5


def test_unknown_entries_are_in_no_total_and_are_listed(tmp_path):
    j = jobs()
    ledger = Ledger(tmp_path / "ledger.sqlite")
    result = ledger.record_finished(list(j.values()), now=NOW)
    assert result.added == 5 and len(result.active) == 1
    s = summarize(ledger.entries(), now=NOW, active_jobs=result.active)
    assert sorted(s.unknown_jobs) == sorted([j["legacy_error"].id, j["legacy_completed"].id])
    assert s.unknown_runs == 2
    spent = 1500 / 3600 * L4 + 120 / 3600 * 0.01  # the completed run, the foreign CPU job (61 s: 2 min)
    assert s.month_to_date_usd == pytest.approx(spent)
    assert {t.tenant: t.runs for t in s.by_tenant} == {"acme": 2, "(none)": 1}  # globex, initech: unknown
    assert s.in_flight_usd == pytest.approx(300 / 3600 * L4)  # 290 s server-side, 300 s by now: 5 minutes
    assert ledger.record_finished(list(j.values()), now=NOW).added == 0  # still unknown: nothing re-recorded

    # HF later answers with the evidence: the entry is costed, once
    old = j["legacy_error"]
    fixed = JobInfo(**job_json(old.id, "ERROR", labels=old.labels, created=old.created_at, started=old.started_at,
                               finished=old.started_at + timedelta(seconds=600), flavor="h200x8"))
    assert ledger.record_finished([fixed], now=NOW).added == 1
    assert ledger.get(fixed.id).known and ledger.get(fixed.id).cost_usd == pytest.approx(600 / 3600 * H200X8)
    assert ledger.record_finished([fixed], now=NOW).added == 0 and len(ledger) == 5
    assert summarize(ledger.entries(), now=NOW).unknown_runs == 1


def test_an_entry_an_older_console_billed_until_now_becomes_unknown(tmp_path):
    """What the demo stored for good: one ERROR job costed at 2,776,734 s ($1,928)."""
    import sqlite3

    path = tmp_path / "ledger.sqlite"
    ledger = Ledger(path)
    entry = entry_from_job(jobs()["completed"], now=NOW)
    from dataclasses import replace

    ledger.record([replace(entry, job_id="demo-error", stage="ERROR", running_seconds=2_776_734.0,
                           running_source="timestamps", finished_at=None, cost_usd=1928.29)])
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT cost_usd FROM entries").fetchone() == (1928.29,)
    reopened = Ledger(path)
    e = reopened.get("demo-error")
    assert not e.known and e.cost_usd == 0 and e.running_seconds == 0
    assert summarize(reopened.entries(), now=NOW).month_to_date_usd == 0


def test_the_jobs_table_shows_what_is_known():
    j = jobs()
    rows = {name: job_row(info, now=NOW, prices=shipped_price_book()) for name, info in j.items()}
    assert rows["legacy_error"].running_seconds is None and rows["legacy_error"].cost_usd is None
    assert rows["legacy_completed"].running_seconds is None and rows["legacy_completed"].cost_usd is None
    assert rows["completed"].running_seconds == 1500 and rows["completed"].cost_usd == pytest.approx(1500 / 3600 * L4)
    assert rows["running"].running_seconds == 300  # counted on from the start between refreshes
    assert rows["canceled_queued"].running_seconds is None
    assert rows["completed"].scheduled_job_id == SCHEDULE_ID and rows["completed"].owner == "acme-ml"
    assert rows["foreign"].tenant == "-" and rows["foreign"].owner == "lhoestq"


@pytest.fixture
def fleet(tmp_path):
    (tmp_path / "data").mkdir()
    shutil.copy(paths.training_dir() / "data" / "acme.jsonl", tmp_path / "data")
    path = tmp_path / "fleet.toml"
    path.write_text(
        'base_model = "Qwen/Qwen3-0.6B"\nmodel_b = 0.5\nflavor = "l4x1"\nepochs = 1.5\n'
        'schedule = "0 3 * * 1"\nenv = "prod"\n\n[[tenant]]\nid = "acme"\ndataset = "data/acme.jsonl"\n'
        "examples = 1000\n"
    )
    return load_fleet_file(path)


def _hf_schedule(fleet, **shape):
    sub = desired_submission(fleet.tenants[0], fleet, backend_kind="local", timeout_buffer=1.3)
    sub = sub.mounted("ops/jobs-artifacts")  # as console.ship returns it, the bundle uploaded
    return sub, scheduled_from_submission(sub.scheduled_kwargs(fleet.tenants[0].schedule), **shape)


def test_fleet_apply_plans_nothing_for_hfs_echo_of_its_own_schedule(fleet):
    sub, sj = _hf_schedule(fleet)
    assert sj.job_spec.timeout is None and sj.suspend is None and sj.owner.type == "org"
    plan = plan_apply(fleet, [sj])
    assert plan.empty and plan.unchanged == ["acme"], plan.lines()
    assert jobspec.read_request(sj).timeout_seconds == sub.timeout_seconds  # from its label


def test_fleet_apply_plans_nothing_for_an_older_consoles_schedule(fleet):
    """Written before the timeout label, with the old encoding ('0.5'); HF echoes no timeout."""
    sub, _ = _hf_schedule(fleet)
    kwargs = sub.scheduled_kwargs(fleet.tenants[0].schedule)
    labels = {k: v for k, v in kwargs["labels"].items() if k != "timeout"}
    labels.update(model_b="0.5", epochs="1.5")
    sj = scheduled_from_submission({**kwargs, "labels": labels})
    assert plan_apply(fleet, [sj]).empty


def test_a_suspended_schedule_and_a_changed_timeout_are_still_seen(fleet):
    _, suspended = _hf_schedule(fleet, suspend=True)
    plan = plan_apply(fleet, [suspended])
    assert [a.changes for a in plan.actions] == [["suspend True -> False"]]
    sub, sj = _hf_schedule(fleet)
    longer = plan_apply(fleet, [sj], timeout_buffer=2.0)
    [action] = longer.actions
    assert action.op == "change" and f"timeout {sub.timeout_seconds}s -> " in "; ".join(action.changes)


def test_the_fleet_from_each_tenants_kept_runs_reads_as_from_every_job(fleet):
    j = jobs()
    _, sj = _hf_schedule(fleet)
    latest = LatestRuns()
    latest.observe_all(j.values())
    kept = latest.jobs()
    assert kept and all(type(m) is RunMark and not hasattr(m, "command") for m in kept)  # not the whole job
    whole = {job.id: job for job in j.values()}
    asked: list[str] = []

    def request_of(mark):  # the refresher reads the whole job from the cache
        asked.append(mark.id)
        return jobspec.read_request(whole[mark.id])

    assert derive_fleet([sj], kept, now=NOW, request_of=request_of) == derive_fleet([sj], list(j.values()), now=NOW)
    # only tenants with no schedule need their last run's request
    assert asked and {whole[i].labels["tenant"] for i in asked} == {"globex", "initech"}


@pytest.mark.parametrize("shape", [{}, {"suspend": True}])
def test_a_kept_schedule_reads_as_the_schedule_hf_sent(fleet, shape):
    from console.ledger.forecast import forecast_schedule
    from console.oncall.reschedule import reschedule_cost

    _, sj = _hf_schedule(fleet, **shape)
    kept = jobspec.keep_schedule(sj)
    assert not hasattr(kept, "command") and not hasattr(kept, "environment")  # not the whole spec
    assert jobspec.read_request(kept) == jobspec.read_request(sj) is not None
    assert jobspec.labels_of(kept) == jobspec.labels_of(sj)
    j = list(jobs().values())
    rows = derive_fleet([kept], j, now=NOW)
    assert rows == derive_fleet([sj], j, now=NOW)
    acme = next(r for r in rows if r.tenant == "acme")
    assert acme.request is kept.request  # the fleet row and the schedule keep one request
    prices = shipped_price_book()
    assert forecast_schedule(kept, NOW, prices) == forecast_schedule(sj, NOW, prices)
    assert reschedule_cost(kept, "0 3 * * *", now=NOW) == reschedule_cost(sj, "0 3 * * *", now=NOW)


def test_fleet_derivation_reads_hfs_shapes(fleet):
    j = jobs()
    _, sj = _hf_schedule(fleet)
    rows = {r.tenant: r for r in derive_fleet([sj], list(j.values()), now=NOW)}
    acme = rows["acme"]
    assert acme.scheduled_job_id == SCHEDULE_ID and acme.schedule == "0 3 * * 1" and not acme.suspended
    assert acme.next_run == NOW + timedelta(days=5)  # nextJobRunAt
    assert acme.last_job_id == j["running"].id and acme.last_stage == "RUNNING"
    assert acme.last_success_at == j["completed"].finished_at
    assert (acme.model_b, acme.epochs, acme.flavor) == (0.5, 1.5, "l4x1")
    assert acme.cost_per_run == pytest.approx(0.1 * 0.5 * 1 * 1.5 * 1.2 * L4)
    assert rows["globex"].last_stage == "ERROR" and rows["globex"].failed
    assert rows["initech"].last_at == j["legacy_completed"].created_at  # no start, no finish: created
    assert "-" not in rows
