"""Labels and job names as HF accepts them: the embedded server refuses what huggingface.co refuses.

huggingface_hub 2.4 documents label keys and values as "max 100 characters and contain only
alphanumeric characters, dashes, and underscores", and a job's name (the `name` label) as stored
in tags with the same characters; HF answers `model=Qwen3-0.6B` with a 400. So does this server,
with a JSON error naming the field, before anything is created.
"""

from __future__ import annotations

import httpx
import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError
from jobs_helpers import NAMESPACE


def _refused(call, field: str) -> None:
    with pytest.raises(HfHubHTTPError) as info:
        call()
    assert info.value.response.status_code == 400
    error = info.value.response.json()["error"]
    assert error.startswith(field + ":"), error
    assert "alphanumeric characters, dashes and underscores" in error


@pytest.mark.parametrize(
    ("labels", "field"),
    [({"model_b": "0.5"}, "labels.model_b"), ({"epochs": "1.5"}, "labels.epochs"),
     ({"model": "Qwen3-0.6B"}, "labels.model"), ({"a.b": "1"}, "labels")],
)
def test_a_dotted_label_is_refused_for_a_job_and_a_schedule(api: HfApi, labels, field):
    run = dict(image="python:3.12", command=["python", "-c", "1"], namespace=NAMESPACE)
    _refused(lambda: api.run_job(**run, labels=labels), field)
    _refused(lambda: api.create_scheduled_job(**run, labels=labels, schedule="@daily"), f"jobSpec.{field}")
    assert list(api.list_jobs(namespace=NAMESPACE)) == []
    assert list(api.list_scheduled_jobs(namespace=NAMESPACE)) == []


def test_a_dotted_job_name_is_refused(api: HfApi):
    _refused(lambda: api.run_job(image="python:3.12", command=["python", "-c", "1"], name="acme.v2",
                                 namespace=NAMESPACE), "labels.name")


def test_label_updates_follow_the_same_rule(api: HfApi):
    job = api.run_job(image="python:3.12", command=["python", "-c", "1"], labels={"model_b": "0p5"},
                      name="acme-v2", namespace=NAMESPACE)
    assert job.labels == {"model_b": "0p5", "name": "acme-v2"}
    _refused(lambda: api.update_job_labels(job_id=job.id, labels={"epochs": "1.5"}, namespace=NAMESPACE),
             "labels.epochs")
    sj = api.create_scheduled_job(image="python:3.12", command=["python", "-c", "1"], schedule="@daily",
                                  labels={"tenant": "acme_eu-1"}, namespace=NAMESPACE)
    _refused(lambda: api.update_scheduled_job_labels(scheduled_job_id=sj.id, labels={"tenant": "acme.eu"},
                                                     namespace=NAMESPACE), "labels.tenant")


def test_the_error_is_a_json_body(server):
    response = httpx.post(
        f"{server.url}/api/jobs/{NAMESPACE}",
        headers={"authorization": f"Bearer {server.token}"},
        json={"dockerImage": "python:3.12", "command": ["true"], "labels": {"model_b": "0.5"}},
        timeout=10,
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": "labels.model_b: invalid value '0.5': only alphanumeric characters, dashes and "
        "underscores, at most 100 characters"
    }
    tags = httpx.post(
        f"{server.url}/api/jobs/{NAMESPACE}",
        headers={"authorization": f"Bearer {server.token}"},
        json={"dockerImage": "python:3.12", "command": ["true"], "tags": ["v1.0"]},
        timeout=10,
    )
    assert tags.status_code == 400 and tags.json()["error"].startswith("tags[0]: invalid value 'v1.0'")
