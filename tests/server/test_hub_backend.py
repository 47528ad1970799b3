"""The console's hub backend (`backend = "hub"`) pointed at the embedded server: the HF Jobs path
end to end — huggingface_hub's own login (HF_TOKEN), `console.backend.connect`, and a training
submission built for the Hub (its recipe and `jobkit` shipped through the jobs-artifacts bucket, as
`hf jobs uv run` ships a local script, and run with `uv run` from the mounted folder), listed,
inspected, logged and canceled.

huggingface.co's containers are the one part a test cannot reach, so the shipped script here is a
stand-in in place of `training/sft_lora.py` (whose `uv run` would resolve a CUDA torch), beside the
real `training/jobkit` package: it imports that package and prints what it was started with.
Everything else is the console's own: the submission, the upload, the client and the server.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import textwrap

import httpx
import pytest
from jobs_helpers import NAMESPACE, wait_stage

from console import jobspec, paths
from console.backend import HUB, connect
from console.config import Config
from console.jobspec import TrainingRequest
from console.kinds import SCRIPTS
from console.ship import ship

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="bucket volumes are mounted by the Linux sandbox")

STANDIN = textwrap.dedent(
    """\
    import os, sys, time
    import jobkit.run, validate_dataset
    print("SCRIPT", __file__, flush=True)
    print("JOBKIT BESIDE", os.path.dirname(os.path.dirname(jobkit.run.__file__)) == os.path.dirname(__file__))
    print("CHECKS BESIDE", os.path.dirname(validate_dataset.__file__) == os.path.dirname(__file__))
    print("ARGS", " ".join(sys.argv[1:]), flush=True)
    print("TOKEN", os.environ.get("HF_TOKEN"), flush=True)
    print("ENV_SIZE", sum(len(k) + len(v) for k, v in os.environ.items() if k.startswith("CONSOLE_SCRIPT")), flush=True)
    time.sleep(float(os.environ.get("STANDIN_SLEEP", "0")))
    print("VERDICT: PASS", flush=True)
    """
)
REQUEST = TrainingRequest(
    tenant="acme", dataset="ops/acme-chats", base_model="Qwen/Qwen3-0.6B", model_b=1.0, examples=300, epochs=1.0,
    flavor="t4-small",
    max_steps=3, learning_rate=5e-3, trackio_project="console", env="prod", hub_model_id="ops/adapter-acme",
)


@pytest.fixture
def hub(server, monkeypatch, tmp_path):
    """The hub backend on the embedded server, logged in the way huggingface_hub logs in."""
    monkeypatch.setenv("HF_TOKEN", server.token)
    # Jobs get UV_* and TMPDIR from the server: their `uv run` stays offline.
    monkeypatch.setenv("UV_OFFLINE", "1")
    (tmp_path / "job-tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "job-tmp"))
    backend = connect(Config(namespace=NAMESPACE, backend=HUB, endpoint=server.url))
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture
def script_dir(tmp_path):
    folder = tmp_path / "training"
    shutil.copytree(paths.training_dir() / jobspec.SHARED_PACKAGE, folder / jobspec.SHARED_PACKAGE,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(paths.training_dir() / jobspec.DATASET_CHECKS, folder / jobspec.DATASET_CHECKS)
    (folder / SCRIPTS["sft"]).write_text(STANDIN, encoding="utf-8")
    return folder


def _submission(hub, script_dir, **changes) -> jobspec.Submission:
    sub = jobspec.build_submission(
        dataclasses.replace(REQUEST, **changes), backend_kind=HUB, token=os.environ["HF_TOKEN"],
        script_dir=script_dir,
    )
    return ship(hub.api, sub, hub.namespace)


def _raw_job(server, job_id: str) -> dict:
    """The job as the server sends it (huggingface_hub's JobInfo drops timeoutSeconds)."""
    response = httpx.get(f"{server.url}/api/jobs/{NAMESPACE}/{job_id}",
                         headers={"authorization": f"Bearer {server.token}"}, timeout=10)
    response.raise_for_status()
    return response.json()


def test_connect_uses_the_endpoint_and_huggingface_hubs_own_token(hub, server):
    assert hub.kind == HUB and hub.url == server.url and hub.namespace == NAMESPACE
    assert hub.artifacts_dir is None and hub.trackio_dir is None and hub.job_workdir("x") is None
    assert hub.api.whoami()["name"] == NAMESPACE
    assert list(hub.api.list_jobs(namespace=hub.namespace)) == []


def test_without_a_token_the_hub_backend_is_refused(server, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with connect(Config(namespace=NAMESPACE, backend=HUB, endpoint=server.url)) as backend:
        with pytest.raises(Exception, match="401"):
            list(backend.api.list_jobs(namespace=backend.namespace))


def test_a_hub_submission_runs_its_shipped_script_and_reads_back_as_the_request(hub, server, script_dir):
    sub = _submission(hub, script_dir)
    job = hub.api.run_job(**sub.run_kwargs(), namespace=hub.namespace)
    assert wait_stage(hub.api, job.id, ("COMPLETED", "ERROR", "CANCELED"), timeout=60).status.stage == "COMPLETED"

    [listed] = list(hub.api.list_jobs(namespace=hub.namespace))
    assert listed.id == job.id and listed.labels == {**sub.labels, "name": sub.labels["run"]}

    info = hub.api.inspect_job(job_id=job.id, namespace=hub.namespace)
    assert info.docker_image == jobspec.HUB_IMAGE and info.flavor == "t4-small"
    assert list(info.command or []) + list(info.arguments or []) == sub.command
    assert info.secrets == {"HF_TOKEN": None}  # named, never shown
    assert not info.environment  # no script travels in the job's environment
    raw = _raw_job(server, job.id)
    assert raw["timeoutSeconds"] == sub.timeout_seconds
    assert [v.path for v in info.volumes or []] == [sub.bundle_id]
    back = jobspec.read_request(info)
    assert back == dataclasses.replace(REQUEST, run_name=sub.labels["run"], timeout_seconds=sub.timeout_seconds)

    logs = list(hub.api.fetch_job_logs(job_id=job.id, namespace=hub.namespace))
    script_args = jobspec.script_args_of(sub.command)
    # run from the bucket folder mounted where `hf jobs uv run` mounts a shipped script
    assert f"SCRIPT {jobspec.TRAINING_MOUNT}/{SCRIPTS['sft']}" in logs
    assert "JOBKIT BESIDE True" in logs and "CHECKS BESIDE True" in logs  # the shared files came with it
    assert "ENV_SIZE 0" in logs
    assert "ARGS " + " ".join(script_args) in logs
    assert "TOKEN ***" in logs and not any(server.token in line for line in logs)
    assert logs[-1] == "VERDICT: PASS"

    # the files are in the namespace's jobs-artifacts bucket, once, under their content's name
    bucket = f"{hub.namespace}/{jobspec.ARTIFACTS_BUCKET}"
    names = sorted(f.path for f in hub.api.list_bucket_tree(bucket, recursive=True) if f.type == "file")
    assert names == sorted(f"{sub.bundle_id}/{name}" for name, _ in sub.ships)
    assert {f"{sub.bundle_id}/jobkit/run.py", f"{sub.bundle_id}/validate_dataset.py"} <= set(names)


def test_the_console_ships_a_recipe_once_and_a_changed_one_anew(hub, script_dir):
    first = _submission(hub, script_dir)
    again = _submission(hub, script_dir, tenant="globex", dataset="ops/globex-chats",
                        hub_model_id="ops/adapter-globex")
    assert again.volumes == first.volumes  # the same files: the same folder, not uploaded again
    (script_dir / SCRIPTS["sft"]).write_text(STANDIN + "# changed\n", encoding="utf-8")
    changed = _submission(hub, script_dir)
    assert changed.bundle_id != first.bundle_id
    job = hub.api.run_job(**changed.run_kwargs(), namespace=hub.namespace)
    assert wait_stage(hub.api, job.id, ("COMPLETED", "ERROR", "CANCELED"), timeout=60).status.stage == "COMPLETED"


def test_a_hub_submission_that_was_not_shipped_is_refused_before_it_is_sent(hub, script_dir):
    sub = jobspec.build_submission(REQUEST, backend_kind=HUB, token="hf_x", script_dir=script_dir)
    with pytest.raises(jobspec.SubmissionError, match="not shipped"):
        sub.run_kwargs()
    assert list(hub.api.list_jobs(namespace=hub.namespace)) == []


def test_a_running_hub_job_streams_its_log_and_cancels(hub, script_dir):
    sub = _submission(hub, script_dir, extra_env={"STANDIN_SLEEP": "120"})
    job = hub.api.run_job(**sub.run_kwargs(), namespace=hub.namespace)
    stream = hub.api.fetch_job_logs(job_id=job.id, namespace=hub.namespace, follow=True)
    assert next(line for line in stream if line.startswith("ARGS "))
    assert wait_stage(hub.api, job.id, ("RUNNING",)).status.stage == "RUNNING"
    hub.api.cancel_job(job_id=job.id, namespace=hub.namespace)
    assert wait_stage(hub.api, job.id, ("CANCELED",), timeout=30).status.stage == "CANCELED"
    assert "VERDICT: PASS" not in list(stream)  # the follow ends with the job, before the script's end
