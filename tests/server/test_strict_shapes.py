"""Strict mode (`ServerOptions(strict=True)`): the embedded server answers in the leaner shapes
huggingface.co sends, as huggingface_hub 2.4 parses them — finished jobs without `finishedAt` and
with null `durations`, scheduled specs whose timeout `JobSpec` cannot read, `suspend: null`."""

from __future__ import annotations

import httpx
import pytest
from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, make_server, wait_stage


@pytest.fixture
def strict():
    srv = make_server(strict=True)
    srv.start()
    try:
        yield srv, HfApi(endpoint=srv.url, token=srv.token)
    finally:
        srv.stop()


def _raw(server, path: str):
    response = httpx.get(f"{server.url}{path}", headers={"authorization": f"Bearer {server.token}"}, timeout=10)
    response.raise_for_status()
    return response.json()


def test_a_finished_job_comes_back_without_finished_at_or_durations(strict):
    server, api = strict
    job = api.run_job(image="python:3.12", command=["python", "-c", "print(1)"], namespace=NAMESPACE)
    done = wait_stage(api, job.id, ("COMPLETED",))
    assert done.status.stage == "COMPLETED" and done.started_at is not None
    assert done.finished_at is None and done.durations is None
    raw = _raw(server, f"/api/jobs/{NAMESPACE}/{job.id}")
    assert "finishedAt" not in raw and raw["durations"] is None
    [listed] = _raw(server, f"/api/jobs/{NAMESPACE}")
    assert "finishedAt" not in listed and listed["durations"] is None
    # the log stream is not JSON: untouched
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE)) == ["1"]


def test_a_scheduled_job_comes_back_without_a_readable_timeout_and_suspend_null(strict):
    server, api = strict
    sj = api.create_scheduled_job(image="python:3.12", command=["python", "-c", "1"], schedule="@daily",
                                  timeout=600, namespace=NAMESPACE)
    assert sj.job_spec.timeout is None and sj.suspend is None
    assert sj.status.next_job_run_at is not None
    raw = _raw(server, f"/api/scheduled-jobs/{NAMESPACE}/{sj.id}")
    assert "timeout" not in raw["jobSpec"] and raw["jobSpec"]["timeoutSeconds"] == 600
    assert raw["suspend"] is None
    [listed] = api.list_scheduled_jobs(namespace=NAMESPACE)
    assert listed.job_spec.timeout is None and listed.suspend is None
    api.suspend_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    assert api.inspect_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE).suspend is True
    run = api.trigger_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    assert run.initiator.type == "scheduled-job" and run.initiator.id == sj.id and run.initiator.name is None
    after = api.inspect_scheduled_job(scheduled_job_id=sj.id, namespace=NAMESPACE)
    assert after.status.last_job is not None and after.status.last_job.id == run.id


def test_without_strict_mode_the_answers_are_complete(api: HfApi, server):
    job = api.run_job(image="python:3.12", command=["python", "-c", "1"], namespace=NAMESPACE)
    done = wait_stage(api, job.id, ("COMPLETED",))
    assert done.finished_at is not None and done.durations.running_secs is not None
    sj = api.create_scheduled_job(image="python:3.12", command=["python", "-c", "1"], schedule="@daily",
                                  timeout=600, namespace=NAMESPACE)
    assert sj.job_spec.timeout == 600 and sj.suspend is False
