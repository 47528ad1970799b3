"""A fixed picture of a fleet for the snapshot tests (real `JobInfo` / `ScheduledJobInfo` objects).

Snapshots need the same ids, times and log lines every run, which a live server cannot give; so
these tests feed the app through a stand-in with the `HfApi` methods it calls, returning the
huggingface_hub types built from the JSON the API sends.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from huggingface_hub._jobs_api import JobInfo, ScheduledJobInfo
from tests.ui.conftest import FROZEN_NOW

OWNER = {"id": "0" * 24, "name": "oncall", "type": "user"}


def iso(minutes_ago: float) -> str:
    t = FROZEN_NOW - timedelta(minutes=minutes_ago)
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def labels(tenant: str, kind: str = "sft", model_b: str = "1", examples: str = "300") -> dict:
    return {
        "app": "console",
        "tenant": tenant,
        "env": "demo",
        "kind": kind,
        "model_b": model_b,
        "examples": examples,
        "epochs": "3",
        "unsloth": "0",
        "run": f"{tenant}-run",
    }


def job(
    jid: str,
    tenant: str,
    stage: str,
    created: float,
    ran: float | None,
    flavor="t4-small",
    kind="sft",
    message=None,
    sched: str | None = None,
) -> JobInfo:
    data = {
        "id": jid,
        "createdAt": iso(created),
        "dockerImage": "console/local-uv",
        "command": _command(tenant),
        "arguments": [],
        "environment": {},
        "secrets": {},
        "flavor": flavor,
        "labels": labels(tenant, kind),
        "status": {"stage": stage, "message": message},
        "owner": OWNER,
    }
    if ran is not None:
        data["startedAt"] = iso(created - 0.1)
        data["durations"] = {
            "schedulingSecs": 6,
            "runningSecs": int(ran * 60),
            "totalSecs": int(ran * 60) + 6,
        }
        if stage not in ("RUNNING", "SCHEDULING"):
            data["finishedAt"] = iso(created - 0.1 - ran)
    if sched:
        data["initiator"] = {"type": "scheduled-job", "id": sched}
    return JobInfo(**data, endpoint="http://127.0.0.1:8765")


def _command(tenant: str) -> list[str]:
    """What a console job for `tenant` runs (its dataset is all that differs)."""
    return [
        "uv",
        "run",
        "/opt/console/training/sft_lora.py",
        "--base-model",
        "tiny-random",
        "--dataset",
        f"/data/{tenant}.jsonl",
    ]


def scheduled(
    sid: str,
    tenant: str,
    schedule: str,
    flavor="t4-small",
    suspend=False,
    model_b="1",
    examples="300",
) -> ScheduledJobInfo:
    return ScheduledJobInfo(
        id=sid,
        createdAt=iso(60 * 24 * 30),
        schedule=schedule,
        suspend=suspend,
        concurrency=False,
        owner=OWNER,
        jobSpec={
            "dockerImage": "console/local-uv",
            "command": _command(tenant),
            "flavor": flavor,
            "timeout": 900,
            "labels": labels(tenant, model_b=model_b, examples=examples),
        },
        status={"lastJob": None, "nextJobRunAt": None if suspend else iso(-60 * 24 * 5)},
    )


JOBS = [
    job("6b10a1f0c3d2e1f0aa11acme", "acme", "RUNNING", 3, 2.8, sched="s-acme"),
    job("6b10a1e0c3d2e1f0bb22glbx", "globex", "SCHEDULING", 0.5, None, sched="s-globex"),
    job(
        "6b0f0000c3d2e1f0cc33wayn",
        "wayne",
        "ERROR",
        60 * 26,
        0.6,
        message="Job failed with exit code: 1",
        sched="s-wayne",
    ),
    job(
        "6b0e0000c3d2e1f0dd44init",
        "initech",
        "COMPLETED",
        60 * 24 * 9,
        4.2,
        flavor="a10g-small",
        sched="s-initech",
    ),
    job(
        "6b0d0000c3d2e1f0ee55umbr",
        "umbrella",
        "COMPLETED",
        60 * 24 * 2,
        7.5,
        flavor="l4x1",
        sched="s-umbrella",
    ),
    job(
        "6b0d0000c3d2e1f0ff66acpf",
        "acme",
        "COMPLETED",
        60 * 24 * 7,
        0.3,
        flavor="cpu-basic",
        kind="validate",
    ),
]
SCHEDULED = [
    scheduled("s-acme", "acme", "0 3 * * 1"),
    scheduled("s-globex", "globex", "30 3 * * 1"),
    scheduled("s-initech", "initech", "0 4 * * 1", flavor="a10g-small"),
    scheduled("s-umbrella", "umbrella", "0 2 * * 3", flavor="l4x1", model_b="3"),
    scheduled("s-wayne", "wayne", "0 5 * * 1", suspend=True, examples="51"),
]
LOGS = {
    "6b10a1f0c3d2e1f0aa11acme": [
        "plan run=acme-20261202-095700 base_model=tiny-random dataset=acme.jsonl rows=300",
        "steps_total=120",
        *[
            f"progress step={i}/120 loss={6.2 - i * 0.04:.4f} lr=5.000e-03 epoch={i / 40:.2f}"
            for i in range(1, 13)
        ],
        "[bold red]literal markup[/] stays literal",
    ],
    "6b0d0000c3d2e1f0ee55umbr": [
        "saved adapter=/data/artifacts/umbrella-20261130",
        "VERDICT: PASS run=umbrella steps=120 first_loss=6.1 last_loss=1.234 "
        "adapter=/data/artifacts/umbrella-20261130",
    ],
}


class CannedApi:
    def list_jobs(self, *, namespace=None, **_):
        return list(JOBS)

    def list_scheduled_jobs(self, *, namespace=None, **_):
        return list(SCHEDULED)

    def fetch_job_logs(self, *, job_id, namespace=None, follow=False, tail=None, **_):
        lines = LOGS.get(job_id, [])
        return list(lines[-tail:] if tail else lines)

    def fetch_job_metrics(self, *, job_id, namespace=None, follow=False, **_):
        return iter([{"cpu_usage_pct": 87.0, "memory_used_bytes": 512 * 1024 * 1024}])


@dataclass
class CannedBackend:
    api: CannedApi
    url: str = "http://127.0.0.1:8765"
    kind: str = "local"
    namespace: str = "oncall"

    def close(self) -> None:
        pass
