"""The console's hub backend (`backend = "hub"`) pointed at the embedded server: the HF Jobs path
end to end — huggingface_hub's own login (HF_TOKEN), `console.backend.connect`, and a training
submission built for the Hub (script shipped in the job's environment, run by a `bash -c` wrapper
with `uv run`), listed, inspected, logged and canceled.

huggingface.co's containers are the one part a test cannot reach, so the shipped script here is a
stand-in in place of `training/sft_lora.py` (whose `uv run` would resolve a CUDA torch), beside the
real `training/jobkit` package: it imports that package and prints what it was started with.
Everything else is the console's own: the submission, the bundle, the wrapper, the client and the
server.
"""

from __future__ import annotations

import dataclasses
import os
import re
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
from console.server import paths as server_paths

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the hub wrapper is a bash script")

STANDIN = textwrap.dedent(
    """\
    import os, sys, time
    import jobkit.dataset
    print("SCRIPT", __file__, flush=True)
    print("JOBKIT BESIDE", os.path.dirname(os.path.dirname(jobkit.dataset.__file__)) == os.path.dirname(__file__))
    print("ARGS", " ".join(sys.argv[1:]), flush=True)
    print("TOKEN", os.environ.get("HF_TOKEN"), flush=True)
    print("SCRIPT_ENV_LEFT", "CONSOLE_SCRIPT_B64" in os.environ, flush=True)
    time.sleep(float(os.environ.get("STANDIN_SLEEP", "0")))
    print("VERDICT: PASS", flush=True)
    """
)
REQUEST = TrainingRequest(
    tenant="acme", dataset="ops/acme-chats", model_b=1.0, examples=300, epochs=1.0, flavor="t4-small",
    max_steps=3, learning_rate=5e-3, trackio_project="console", env="prod", hub_model_id="ops/adapter-acme",
)


@pytest.fixture
def hub(server, monkeypatch, tmp_path):
    """The hub backend on the embedded server, logged in the way huggingface_hub logs in."""
    monkeypatch.setenv("HF_TOKEN", server.token)
    # Jobs get UV_* and TMPDIR from the server: the wrapper's `uv run` stays offline, and what it
    # unpacks stays in this test's folder.
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
    (folder / jobspec.SCRIPTS["sft"]).write_text(STANDIN, encoding="utf-8")
    return folder


def _submission(script_dir, **changes) -> jobspec.Submission:
    return jobspec.build_submission(
        dataclasses.replace(REQUEST, **changes), backend_kind=HUB, token=os.environ["HF_TOKEN"],
        script_dir=script_dir,
    )


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
    sub = _submission(script_dir)
    job = hub.api.run_job(**sub.run_kwargs(), namespace=hub.namespace)
    assert wait_stage(hub.api, job.id, ("COMPLETED", "ERROR", "CANCELED"), timeout=60).status.stage == "COMPLETED"

    [listed] = list(hub.api.list_jobs(namespace=hub.namespace))
    assert listed.id == job.id and listed.labels == {**sub.labels, "name": sub.labels["run"]}

    info = hub.api.inspect_job(job_id=job.id, namespace=hub.namespace)
    assert info.docker_image == jobspec.HUB_IMAGE and info.flavor == "t4-small"
    assert list(info.command or []) + list(info.arguments or []) == sub.command
    assert info.secrets == {"HF_TOKEN": None}  # named, never shown
    assert set(info.environment) == {jobspec.SCRIPT_ENV}
    assert _raw_job(server, job.id)["timeoutSeconds"] == sub.timeout_seconds
    back = jobspec.read_request(info)
    assert back == dataclasses.replace(REQUEST, run_name=sub.labels["run"], timeout_seconds=sub.timeout_seconds)

    logs = list(hub.api.fetch_job_logs(job_id=job.id, namespace=hub.namespace))
    script_args = sub.command[sub.command.index(jobspec.SCRIPTS["sft"]) + 1 :]
    [script] = [line.split(" ", 1)[1] for line in logs if line.startswith("SCRIPT ")]
    # unpacked into the job's own temporary folder, thrown away with the job
    job_tmp = re.escape(str(server_paths.job_workdir(job.id) / ".tmp"))
    assert re.fullmatch(rf"{job_tmp}/console-training\.\w+/{jobspec.SCRIPTS['sft']}", script)
    assert not server_paths.job_workdir(job.id).exists()
    assert "JOBKIT BESIDE True" in logs  # unpacked from the environment, with the shared package
    assert "ARGS " + " ".join(script_args) in logs
    assert "TOKEN ***" in logs and not any(server.token in line for line in logs)
    assert logs[-1] == "VERDICT: PASS"


def test_a_running_hub_job_streams_its_log_and_cancels(hub, script_dir):
    sub = _submission(script_dir, extra_env={"STANDIN_SLEEP": "120"})
    job = hub.api.run_job(**sub.run_kwargs(), namespace=hub.namespace)
    stream = hub.api.fetch_job_logs(job_id=job.id, namespace=hub.namespace, follow=True)
    assert next(line for line in stream if line.startswith("ARGS "))
    assert wait_stage(hub.api, job.id, ("RUNNING",)).status.stage == "RUNNING"
    hub.api.cancel_job(job_id=job.id, namespace=hub.namespace)
    assert wait_stage(hub.api, job.id, ("CANCELED",), timeout=30).status.stage == "CANCELED"
    assert "VERDICT: PASS" not in list(stream)  # the follow ends with the job, before the script's end
