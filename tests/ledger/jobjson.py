"""Jobs as huggingface_hub parses them: the HF Jobs JSON shape, through the real `JobInfo`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from huggingface_hub import JobInfo
from huggingface_hub._jobs_api import ScheduledJobInfo

T0 = datetime(2026, 12, 2, 10, 0, 0, tzinfo=UTC)


def iso(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def owner() -> dict:
    return {"id": "0123456789abcdef01234567", "name": "ops", "type": "user"}


def job(
    job_id: str,
    *,
    stage: str = "COMPLETED",
    flavor: str = "l4x1",
    labels: dict | None = None,
    created: datetime = T0,
    queued: float = 5.0,
    ran: float | None = 600.0,
    message: str | None = None,
    durations: bool = True,
    initiator: dict | None = None,
    endpoint: str = "http://127.0.0.1:1",
) -> JobInfo:
    """A job that waited `queued` seconds then ran `ran` seconds (None: never started)."""
    started = None if ran is None else created + timedelta(seconds=queued)
    terminal = stage in ("COMPLETED", "ERROR", "CANCELED", "DELETED")
    finished = (started or created + timedelta(seconds=queued)) + timedelta(seconds=ran or 0)
    finished = finished if terminal else None
    body = {
        "id": job_id,
        "createdAt": iso(created),
        "dockerImage": "ghcr.io/astral-sh/uv:python3.12-bookworm",
        "command": ["uv", "run", "training/sft_lora.py"],
        "arguments": [],
        "environment": {},
        "secrets": {"HF_TOKEN": None},
        "flavor": flavor,
        "labels": labels,
        "status": {"stage": stage, "message": message},
        "owner": owner(),
        "initiator": initiator or {"type": "user", "id": owner()["id"], "name": "ops"},
    }
    if started is not None:
        body["startedAt"] = iso(started)
    if finished is not None:
        body["finishedAt"] = iso(finished)
    if durations:
        body["durations"] = {
            "schedulingSecs": None if started is None else int(queued),
            "runningSecs": None if ran is None else int(ran),
            "totalSecs": int(queued + (ran or 0)),
        }
    return JobInfo(**body, endpoint=endpoint)


def tenant_labels(tenant: str, *, model_b="3", examples="1000", epochs="3", unsloth="0",
                  kind="sft", run=None) -> dict:
    return {
        "app": "console", "tenant": tenant, "env": "prod", "kind": kind, "model_b": model_b,
        "examples": examples, "epochs": epochs, "unsloth": unsloth, "run": run or f"{tenant}-run",
    }


def scheduled(sj_id: str, schedule: str, *, flavor: str = "l4x1", labels: dict | None = None,
              suspend: bool = False) -> ScheduledJobInfo:
    return ScheduledJobInfo(
        id=sj_id,
        createdAt=iso(T0),
        jobSpec={
            "dockerImage": "ghcr.io/astral-sh/uv:python3.12-bookworm",
            "command": ["uv", "run", "training/sft_lora.py"],
            "flavor": flavor,
            "timeout": 5100,
            "labels": labels,
        },
        schedule=schedule,
        suspend=suspend,
        concurrency=False,
        status={"lastJob": None, "nextJobRunAt": None},
        owner=owner(),
    )
