"""The official `hf jobs` CLI against the embedded server (HF_ENDPOINT, HF_TOKEN): contract test."""

from __future__ import annotations

import json

from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, job_processes, wait_stage, wait_until


def test_run_follow_ps_inspect_logs(hf, api: HfApi) -> None:
    # Attached run: the CLI waits while scheduling, follows the logs and reports completion.
    out = hf("jobs", "run", "--label", "tenant=acme", "python:3.12", "python", "-c",
             "import time; print('hello from cli'); time.sleep(0.3); print('bye')")
    assert "hello from cli\nbye\n" in out.stdout
    assert "completed" in out.stdout

    job_id = hf("jobs", "run", "-q", "--detach", "--label", "tenant=globex", "python:3.12",
                "python", "-c", "print('second')").stdout.strip()
    assert len(job_id) == 24
    wait_stage(api, job_id)

    rows = json.loads(hf("jobs", "ps", "-a", "--json").stdout)
    assert [r["status"] for r in rows] == ["COMPLETED", "COMPLETED"]
    acme = json.loads(hf("jobs", "ps", "-a", "--label", "tenant=acme", "--json").stdout)
    assert len(acme) == 1 and acme[0]["labels"]["tenant"] == "acme"
    assert "No jobs matched" in hf("jobs", "ps", "--status", "error").stdout

    inspected = json.loads(hf("jobs", "inspect", job_id, "--json").stdout)
    assert inspected[0]["status"]["stage"] == "COMPLETED"
    assert inspected[0]["command"] == ["python", "-c", "print('second')"]
    assert hf("jobs", "logs", f"{NAMESPACE}/{job_id}").stdout.strip() == "second"
    assert hf("jobs", "logs", "-f", job_id).stdout.strip() == "second"

    table = hf("jobs", "hardware").stdout
    assert "l4x1" in table and "$0.80" in table


def test_cancel_and_failures(hf, api: HfApi) -> None:
    job_id = hf("jobs", "run", "-q", "--detach", "python:3.12", "python", "-c",
                "import os, time; print('pid', os.getpid(), flush=True); time.sleep(60)").stdout
    job_id = job_id.strip()
    wait_stage(api, job_id, ("RUNNING",))
    stream = api.fetch_job_logs(job_id=job_id, follow=True, namespace=NAMESPACE)
    next(x for x in stream if x.startswith("pid"))
    stream.close()
    assert job_processes(job_id)
    running = json.loads(hf("jobs", "ps", "--json").stdout)
    assert [r["id"] for r in running] == [job_id]
    hf("jobs", "cancel", job_id)
    assert wait_stage(api, job_id).status.stage == "CANCELED"
    assert job_processes(job_id) == []

    failed = hf("jobs", "run", "python:3.12", "python", "-c", "import sys; sys.exit(7)",
                check=False)
    assert failed.returncode != 0
    assert "exit code: 7" in failed.stdout + failed.stderr

    timed_out = hf("jobs", "run", "--timeout", "1s", "python:3.12", "python", "-c",
                   "import time; time.sleep(30)", check=False)
    assert timed_out.returncode != 0
    assert "timed out" in timed_out.stdout + timed_out.stderr

    refused = hf("jobs", "run", "-v", "hf://buckets/me/data:/data", "python:3.12",
                 "ls", check=False)
    assert refused.returncode != 0
    assert "bucket me/data does not exist" in refused.stdout + refused.stderr


def test_scheduled_jobs_through_the_cli(hf, api: HfApi) -> None:
    created = hf("jobs", "scheduled", "run", "--label", "tenant=acme", "* * * * * *",
                 "python:3.12", "python", "-c", "print('scheduled run')").stdout
    sj_id = created.split("id: ", 1)[1].split()[0]
    listed = json.loads(hf("jobs", "scheduled", "ps", "--json").stdout)
    assert [s["id"] for s in listed] == [sj_id]

    def fired():
        info = api.inspect_scheduled_job(scheduled_job_id=sj_id, namespace=NAMESPACE)
        return info.status.last_job

    last = wait_until(fired, timeout=5)
    assert wait_stage(api, last.id).status.stage == "COMPLETED"
    hf("jobs", "scheduled", "suspend", sj_id)
    info = json.loads(hf("jobs", "scheduled", "inspect", sj_id, "--json").stdout)[0]
    assert info["suspend"] is True
    hf("jobs", "scheduled", "resume", sj_id)
    assert api.inspect_scheduled_job(scheduled_job_id=sj_id, namespace=NAMESPACE).suspend is False
    hf("jobs", "scheduled", "delete", sj_id)
    assert api.list_scheduled_jobs(namespace=NAMESPACE) == []


def test_uv_run_inline_command(hf) -> None:
    out = hf("jobs", "uv", "run", "--with", "trl", "python", "-c", "print('via uv run')")
    assert "via uv run" in out.stdout


def test_cli_without_the_token_is_refused(hf, server) -> None:
    import os
    import subprocess

    from jobs_helpers import HF_BIN

    env = dict(os.environ, HF_ENDPOINT=server.url, HF_TOKEN="wrong", HF_HUB_DISABLE_TELEMETRY="1")
    proc = subprocess.run([str(HF_BIN), "jobs", "ps"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode != 0
    assert "401" in proc.stdout + proc.stderr or "Invalid" in proc.stdout + proc.stderr
