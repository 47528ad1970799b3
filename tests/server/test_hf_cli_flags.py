"""The rest of `hf jobs` (huggingface_hub 2.4) against the embedded server, flag by flag: every
command and flag the compatibility table of docs/jobs-server.md marks as working is run here or in the other
`hf` tests (test_hf_cli, test_buckets_and_volumes, test_expose_and_ssh)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, wait_stage, wait_until


def _id(out: str) -> str:
    return out.split("id: ", 1)[1].split()[0]


def test_run_flags_wait_rerun_labels_stats_and_dry_runs(hf, api: HfApi, server, tmp_path: Path) -> None:
    env_file, secrets_file = tmp_path / "env", tmp_path / "secrets"
    env_file.write_text("FROM_FILE=file-value\n")
    secrets_file.write_text("SECRET_FILE=shh-from-file\n")
    run = hf("jobs", "run", "-e", "A=1", "-s", "TOKEN=s3cr3t-value", "--env-file", str(env_file),
             "--secrets-file", str(secrets_file), "--name", "flags", "-l", "tenant=acme", "--flavor", "t4-small",
             "--attempts", "2", "--timeout", "2m", "--network-group", "train", "--network-alias", "master",
             "--resource-group-id", "rg-123", "--namespace", NAMESPACE, "python:3.12", "sh", "-c",
             "echo A=$A FROM_FILE=$FROM_FILE TOKEN=$TOKEN SECRET_FILE=$SECRET_FILE")
    out = run.stdout
    assert "A=1 FROM_FILE=file-value TOKEN=*** SECRET_FILE=***" in out
    assert "Joined network group 'train'" in out + run.stderr
    job_id = _id(out)
    [inspected] = json.loads(hf("jobs", "inspect", job_id, "--json").stdout)
    assert inspected["network"] == {"group": "train", "aliases": ["master"]}
    assert inspected["flavor"] == "t4-small" and inspected["retry"] == 1
    assert inspected["labels"] == {"name": "flags", "tenant": "acme"}
    raw = httpx.get(f"{server.url}/api/jobs/{NAMESPACE}/{job_id}",
                    headers={"authorization": f"Bearer {server.token}"}).json()
    assert raw["resourceGroupId"] == "rg-123" and raw["timeoutSeconds"] == 120

    assert "COMPLETED" in hf("jobs", "wait", job_id).stdout
    assert hf("jobs", "logs", "--tail", "1", job_id).stdout.strip().startswith("A=1")
    rerun = _id(hf("jobs", "rerun", "-d", job_id).stdout)
    wait_stage(api, rerun)
    hf("jobs", "labels", rerun, "--name", "renamed", "-l", "env=prod")
    assert api.inspect_job(job_id=rerun, namespace=NAMESPACE).labels == {"name": "renamed", "env": "prod"}
    latest = json.loads(hf("jobs", "ps", "-a", "--limit", "1", "--json").stdout)
    assert [r["id"] for r in latest] == [rerun]
    assert [r["id"] for r in json.loads(hf("jobs", "ps", "-a", "--name", "flags", "--json").stdout)] == [job_id]

    sleeper = _id(hf("jobs", "run", "-d", "--ssh", "python:3.12", "sleep", "30").stdout)
    wait_stage(api, sleeper, ("RUNNING",))
    stats = hf("jobs", "stats", sleeper, timeout=30).stdout
    assert sleeper[:12] in stats or "CPU" in stats
    dry = hf("jobs", "ssh", sleeper, "--dry-run").stdout
    assert f"{sleeper}@127.0.0.1" in dry and dry.startswith("ssh -p ")
    hf("jobs", "cancel", sleeper)
    before = len(list(api.list_jobs(namespace=NAMESPACE)))
    assert "Job configuration" in hf("jobs", "run", "--dry-run", "python:3.12", "true").stdout
    script = tmp_path / "dry.py"
    script.write_text("print('never')\n")
    assert "Job configuration" in hf("jobs", "uv", "run", "--dry-run", str(script)).stdout
    assert len(list(api.list_jobs(namespace=NAMESPACE))) == before


def test_scheduled_flags_reschedule_labels_and_uv(hf, api: HfApi, tmp_path: Path) -> None:
    created = hf("jobs", "scheduled", "run", "--suspend", "--concurrency", "-e", "X=1", "--name", "nightly",
                 "--flavor", "cpu-upgrade", "--timeout", "5m", "--attempts", "3", "--expose-public", "8080",
                 "--resource-group-id", "rg-9", "@daily", "python:3.12", "python", "-c", "print(1)").stdout
    sj_id = _id(created)
    [sj] = json.loads(hf("jobs", "scheduled", "inspect", sj_id, "--json").stdout)
    assert sj["suspend"] is True and sj["concurrency"] is True
    assert sj["job_spec"]["expose"] == [8080] and sj["job_spec"]["expose_public"] == [8080]
    hf("jobs", "scheduled", "reschedule", sj_id, "0 9 * * 1")
    hf("jobs", "scheduled", "labels", sj_id, "-l", "tenant=acme")
    info = api.inspect_scheduled_job(scheduled_job_id=sj_id, namespace=NAMESPACE)
    assert info.schedule == "0 9 * * 1" and info.job_spec.labels["tenant"] == "acme"
    suspended = json.loads(hf("jobs", "scheduled", "ps", "--status", "suspended", "--json").stdout)
    assert [s["id"] for s in suspended] == [sj_id]

    script = tmp_path / "tick.py"
    script.write_text("print('tick')\n")
    uv_id = _id(hf("jobs", "scheduled", "uv", "run", "--suspend", "--with", "rich", "@hourly", str(script),
                   timeout=120).stdout)
    job_id = _id(hf("jobs", "scheduled", "trigger", uv_id).stdout)
    assert wait_stage(api, job_id, timeout=60).status.stage == "COMPLETED"
    assert wait_until(lambda: "tick" in hf("jobs", "logs", job_id).stdout)
    hf("jobs", "scheduled", "delete", uv_id)
    hf("jobs", "scheduled", "delete", sj_id)


def test_webhook_triggered_jobs_are_refused_naming_the_feature(hf) -> None:
    out = hf("webhooks", "create", "--job-id", "0" * 24, "--watch", f"user:{NAMESPACE}", check=False)
    assert out.returncode != 0
    assert "webhook-triggered jobs" in out.stdout + out.stderr


def test_hf_buckets_commands_of_the_jobs_path(hf, tmp_path: Path) -> None:
    bucket = f"{NAMESPACE}/outputs"
    hf("buckets", "create", bucket, "--private")
    assert bucket in hf("buckets", "list").stdout
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.txt").write_text("alpha")
    (src / "b.txt").write_text("beta")
    hf("buckets", "sync", str(src), f"hf://buckets/{bucket}/in")
    hf("buckets", "cp", str(src / "b.txt"), f"hf://buckets/{bucket}/copy.txt")
    listed = hf("buckets", "ls", bucket, "-R").stdout
    assert "in/sub/a.txt" in listed and "copy.txt" in listed
    hf("buckets", "cp", f"hf://buckets/{bucket}/in/sub/a.txt", str(tmp_path / "a.txt"))
    assert (tmp_path / "a.txt").read_text() == "alpha"
    hf("buckets", "rm", f"{bucket}/copy.txt", "--yes")
    assert "copy.txt" not in hf("buckets", "ls", bucket, "-R").stdout
    info = json.loads(hf("buckets", "info", bucket, "--json").stdout)
    assert info["private"] is True and info["total_files"] == 2
    hf("buckets", "delete", bucket, "--yes")
    assert bucket not in hf("buckets", "list").stdout
