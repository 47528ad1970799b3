"""Scheduled jobs on the embedded server: cron firing on its own, trigger, suspend/resume,
reschedule, labels, concurrency, delete — through HfApi."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError
from jobs_helpers import NAMESPACE, wait_stage, wait_until

from console.server.jobs.scheduler import is_valid_schedule, next_run_after


def _runs(api: HfApi, sj_id: str) -> list:
    return [
        j for j in api.list_jobs(namespace=NAMESPACE)
        if j.initiator is not None and j.initiator.id == sj_id
    ]


def _witness(api: HfApi):
    """A schedule firing every second beside the one under test: its runs show due times pass."""
    return api.create_scheduled_job(
        image="python:3.12", command=["python", "-c", "pass"], schedule="* * * * * *",
        labels={"tenant": "witness"}, namespace=NAMESPACE, concurrency=True,
    )


def _due_times_pass(api: HfApi, witness, n: int) -> None:
    """Wait until the witness fired `n` more times: `n` due seconds went by, ticked through."""
    before = len(_runs(api, witness.id))
    wait_until(lambda: len(_runs(api, witness.id)) >= before + n, timeout=15)


def test_cron_with_seconds_fires_on_its_own(api: HfApi) -> None:
    sj = api.create_scheduled_job(
        image="python:3.12", command=["python", "-c", "print('tick')"], schedule="* * * * * *",
        labels={"tenant": "acme"}, namespace=NAMESPACE, concurrency=True,
    )
    assert sj.schedule == "* * * * * *"
    assert sj.status.next_job_run_at is not None
    runs = wait_until(lambda: _runs(api, sj.id), timeout=5)
    first = wait_stage(api, runs[0].id)
    assert first.status.stage == "COMPLETED"
    assert first.initiator.type == "scheduled-job"
    assert first.labels["tenant"] == "acme"
    assert list(api.fetch_job_logs(job_id=first.id, namespace=NAMESPACE)) == ["tick"]
    info = api.inspect_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    assert info.status.last_job is not None
    assert info.status.next_job_run_at > info.status.last_job.at

    witness = _witness(api)
    api.suspend_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    suspended = api.inspect_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    assert suspended.suspend is True and suspended.status.next_job_run_at is None
    # A tick that read the schedule before the suspend may still fire it: that run lands before
    # the witness's run of the same tick (a tick fires in creation order, one after the other).
    _due_times_pass(api, witness, 1)
    count = len(_runs(api, sj.id))
    _due_times_pass(api, witness, 1)  # a later due time: it would have fired beside the witness
    assert len(_runs(api, sj.id)) == count  # nothing fires while suspended
    api.delete_scheduled_job(scheduled_job_id=witness.id, namespace=NAMESPACE)

    api.resume_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    wait_until(lambda: len(_runs(api, sj.id)) > count, timeout=5)

    api.delete_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    with pytest.raises(HfHubHTTPError) as err:
        api.inspect_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    assert err.value.response.status_code == 404


def test_trigger_reschedule_labels_and_concurrency(api: HfApi) -> None:
    sj = api.create_scheduled_job(
        image="python:3.12", command=["python", "-c", "import time; time.sleep(30)"],
        schedule="0 3 * * 1", labels={"tenant": "acme", "env": "prod"}, namespace=NAMESPACE,
    )
    assert sj.concurrency is False and sj.suspend is False
    monday_3am = sj.status.next_job_run_at
    assert monday_3am.weekday() == 0 and monday_3am.hour == 3 and monday_3am.minute == 0
    assert monday_3am > datetime.now(UTC)

    job = api.trigger_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    wait_stage(api, job.id, ("RUNNING",))
    with pytest.raises(HfHubHTTPError) as err:  # no overlapping run without concurrency
        api.trigger_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    assert err.value.response.status_code == 409
    info = api.inspect_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    assert info.status.last_job.id == job.id
    api.cancel_job(job_id=job.id, namespace=NAMESPACE)
    wait_stage(api, job.id)

    daily = api.update_scheduled_job_schedule(scheduled_job_id=sj.id, schedule="@daily",
                                              namespace=NAMESPACE)
    assert daily.schedule == "@daily"
    nxt = daily.status.next_job_run_at
    assert (nxt.hour, nxt.minute) == (0, 0) and nxt - datetime.now(UTC) <= timedelta(days=1)
    with pytest.raises(HfHubHTTPError) as err:
        api.update_scheduled_job_schedule(scheduled_job_id=sj.id, schedule="every tuesday",
                                          namespace=NAMESPACE)
    assert err.value.response.status_code == 400

    relabeled = api.update_scheduled_job_labels(scheduled_job_id=sj.id,
                                                labels={"tenant": "globex"}, namespace=NAMESPACE)
    assert relabeled.job_spec.labels == {"tenant": "globex"}
    assert [s.id for s in api.list_scheduled_jobs(labels={"tenant": "globex"},
                                                   namespace=NAMESPACE)] == [sj.id]
    assert api.list_scheduled_jobs(labels={"tenant": "acme"}, namespace=NAMESPACE) == []


def test_no_overlapping_runs_without_concurrency(api: HfApi) -> None:
    sj = api.create_scheduled_job(
        image="python:3.12", command=["python", "-c", "import time; time.sleep(30)"],
        schedule="* * * * * *", namespace=NAMESPACE,
    )
    witness = _witness(api)
    runs = wait_until(lambda: _runs(api, sj.id), timeout=5)
    _due_times_pass(api, witness, 2)  # two more due times pass while the first run still goes
    assert len(_runs(api, sj.id)) == 1
    api.delete_scheduled_job(scheduled_job_id=witness.id, namespace=NAMESPACE)
    api.suspend_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    api.cancel_job(job_id=runs[0].id, namespace=NAMESPACE)


def test_schedule_syntax() -> None:
    for ok in ("@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@annually",
               "0 0 * * 0", "*/5 * * * *", "*/2 * * * * *"):
        assert is_valid_schedule(ok), ok
    for bad in ("", "every day", "* * *", "61 * * * *"):
        assert not is_valid_schedule(bad), bad
    base = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert next_run_after("*/2 * * * * *", base) == base + 2
    assert next_run_after("@hourly", base) == base + 3600
