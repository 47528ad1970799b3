"""Kept job records: lighter than what the API sends, with the same request read back."""

from __future__ import annotations

import copy
import functools
import json

from huggingface_hub._jobs_api import JobInfo

from console import jobspec


def _hub_job(job_id: str) -> dict:
    return {**copy.deepcopy(_one_submission()), "id": job_id}


@functools.cache
def _one_submission() -> dict:
    # built once: a submission names its run by the second, so two builds can differ across a tick
    request = jobspec.TrainingRequest(
        tenant="acme", dataset="ops/acme-chats", base_model="Qwen/Qwen2.5-3B", model_b=3.0, examples=1200, epochs=2.0,
        flavor="a10g-small", env="prod", learning_rate=1e-4, hub_model_id="ops/adapter-acme",
    )
    sub = jobspec.build_submission(request, backend_kind="hub", token="hf_not_a_real_token")
    return {
        "id": "j0", "createdAt": "2026-12-01T03:00:00Z", "dockerImage": sub.image,
        # a job of an older console: its scripts in its environment (base64 of a tar.gz)
        "command": list(sub.command), "arguments": [],
        "environment": {**sub.env, jobspec.SCRIPT_ENV: "H4sI" + "A" * 49_000, "LOG_LEVEL": "info"},
        "secrets": ["HF_TOKEN"], "flavor": sub.flavor, "labels": dict(sub.labels),
        "status": {"stage": "COMPLETED", "message": None},
        "owner": {"id": "u1", "name": "ops", "type": "user"},
    }


def test_compacting_drops_an_older_consoles_shipped_script_and_keeps_the_request():
    raw = _hub_job("j1")
    assert len(raw["environment"][jobspec.SCRIPT_ENV]) > 5000
    original = JobInfo(**copy.deepcopy(raw))
    kept = jobspec.compact_job(JobInfo(**copy.deepcopy(raw)))
    assert jobspec.SCRIPT_ENV not in kept.environment
    assert kept.environment == {"LOG_LEVEL": "info"}  # the job's own variables stay
    assert jobspec.read_request(kept) == jobspec.read_request(original)
    assert jobspec.read_request(kept).learning_rate == 1e-4
    assert kept.labels == original.labels and kept.command == original.command


def test_compacted_jobs_share_their_repeated_strings():
    # as from the wire: every string a new object
    a_raw, b_raw = (JobInfo(**json.loads(json.dumps(_hub_job(i)))) for i in ("j1", "j2"))
    assert a_raw.labels["tenant"] is not b_raw.labels["tenant"]
    a, b = jobspec.compact_job(a_raw), jobspec.compact_job(b_raw)
    assert a.labels["tenant"] is b.labels["tenant"]
    assert a.command[-1] is b.command[-1] and a.flavor is b.flavor


def test_compacted_jobs_share_one_copy_of_a_mount_and_read_back_as_they_came():
    def wire(job_id: str, path: str) -> JobInfo:
        raw = _hub_job(job_id)
        raw["volumes"] = [{"type": "bucket", "source": "ops/acme-data", "mountPath": "/data", "path": path}]
        return JobInfo(**json.loads(json.dumps(raw)))

    a, b, c = (jobspec.compact_job(wire(i, p)) for i, p in (("j1", "chats"), ("j2", "chats"), ("j3", "other")))
    assert a.volumes[0] is b.volumes[0]  # 10,000 jobs mounting the same bucket keep one mount
    assert c.volumes[0] is not a.volumes[0] and c.volumes[0].path == "other"
    # nothing a user reads back changed: the mount, the secrets' names, the request
    for job_id, path, kept in (("j1", "chats", a), ("j3", "other", c)):
        fresh = wire(job_id, path)
        assert kept.volumes == fresh.volumes and kept.secrets == fresh.secrets == ["HF_TOKEN"]
        assert jobspec.read_request(kept) == jobspec.read_request(fresh)


def test_compacted_jobs_share_their_owner_and_how_they_ended_but_not_a_live_jobs_status():
    def wire(job_id: str, stage: str, message: str | None = None) -> JobInfo:
        raw = _hub_job(job_id)
        raw["status"] = {"stage": stage, "message": message}
        return JobInfo(**json.loads(json.dumps(raw)))

    done_a, done_b, failed, running = (
        jobspec.compact_job(wire(i, s, m)) for i, s, m in
        (("j1", "COMPLETED", None), ("j2", "COMPLETED", None), ("j3", "ERROR", "exit code 1"), ("j4", "RUNNING", None))
    )
    assert done_a.owner is done_b.owner is failed.owner is running.owner
    assert done_a.status is done_b.status  # 10,000 finished jobs keep one COMPLETED
    assert failed.status is not done_a.status and failed.status.message == "exit code 1"
    assert running.status is not jobspec.compact_job(wire("j5", "RUNNING", None)).status
    for kept, (job_id, stage, message) in ((done_b, ("j2", "COMPLETED", None)),
                                           (failed, ("j3", "ERROR", "exit code 1"))):
        fresh = wire(job_id, stage, message)
        assert kept.status == fresh.status and kept.owner == fresh.owner
        # no arguments: kept as None, as huggingface_hub keeps no volumes; the command reads the same
        assert fresh.arguments == [] and kept.arguments is None
        assert jobspec.command_of(kept) == jobspec.command_of(fresh)


def test_jobs_rebuilt_from_the_cache_share_their_owner_and_finished_status():
    from console.cache.docs import job_doc, job_info

    raw = _hub_job("j1")
    kept = jobspec.compact_job(JobInfo(**json.loads(json.dumps(raw))))
    a, b = (job_info(json.loads(json.dumps(job_doc(kept)))) for _ in range(2))
    assert a.owner is b.owner is kept.owner and a.status is b.status is kept.status
    assert jobspec.read_request(a) == jobspec.read_request(kept)
