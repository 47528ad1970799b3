"""The JSON huggingface.co answers with, in the shapes huggingface_hub 2.4 parses (its `JobInfo`,
`JobSpec`, `ScheduledJobInfo` and `JobHardwareInfo` dataclasses and docstrings, and the fixtures of
its own tests), parsed by those very dataclasses.

The shapes the embedded server never sends unless asked (strict mode) are the point: finished jobs
without `finishedAt` and with ``durations: null`` (jobs from before the API had durations), org
owners, runs started by a schedule (an initiator with no name), scheduled jobs with ``suspend:
null``, a `lastJob` and a `nextJobRunAt`, and a scheduled spec whose timeout is `timeoutSeconds`
only, which `JobSpec` does not read. Hardware as `list_jobs_hardware` lists it: per-minute prices
in micro-dollars and dollars, an accelerator with its model, quantity and VRAM as strings.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from huggingface_hub import JobInfo
from huggingface_hub._jobs_api import JobHardwareInfo, ScheduledJobInfo

ENDPOINT = "https://huggingface.co"
NOW = datetime(2026, 12, 2, 10, 0, 0, tzinfo=UTC)
ORG = {"id": "64f0c0ffee0123456789abcd", "name": "acme-ml", "type": "org"}
USER = {"id": "5e9ecfc04957053f60648a3e", "name": "lhoestq", "type": "user"}
SCHEDULE_ID = "687fb701029421ae5549d999"


def iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def console_labels(tenant: str, **overrides: str) -> dict[str, str]:
    labels = {"app": "console", "tenant": tenant, "env": "prod", "kind": "sft", "model_b": "0p5",
              "examples": "1000", "epochs": "1p5", "unsloth": "0", "run": f"{tenant}-scheduled",
              "name": f"{tenant}-scheduled"}
    labels.update(overrides)
    return labels


def job_json(job_id: str, stage: str, *, labels: dict[str, str] | None = None, owner: dict | None = None,
             created: datetime, started: datetime | None = None, finished: datetime | None = None,
             durations: dict | None = None, initiator: dict | None = None, flavor: str = "l4x1",
             message: str | None = None) -> dict[str, Any]:
    """A job answer; absent keys stay absent (HF leaves out what it does not know)."""
    doc: dict[str, Any] = {
        "id": job_id,
        "createdAt": iso(created),
        "dockerImage": "ghcr.io/astral-sh/uv:python3.12-bookworm-slim",
        "command": ["bash", "-c", "true"],
        "arguments": [],
        "environment": {},
        "secrets": {"HF_TOKEN": None},
        "flavor": flavor,
        "labels": labels,
        "status": {"stage": stage, "message": message},
        "owner": owner or ORG,
        "durations": durations,
    }
    if started is not None:
        doc["startedAt"] = iso(started)
    if finished is not None:
        doc["finishedAt"] = iso(finished)
    if initiator is not None:
        doc["initiator"] = initiator
    return doc


def jobs() -> dict[str, JobInfo]:
    """One job of each shape, by name, as huggingface_hub parses them."""
    day = timedelta(days=1)
    docs = {
        # today's full answer: durations computed by the server, a finish time
        "completed": job_json(
            "6900000000000000000000a1", "COMPLETED", labels=console_labels("acme"),
            created=NOW - day, started=NOW - day + timedelta(seconds=20),
            finished=NOW - day + timedelta(seconds=20 + 1500),
            durations={"schedulingSecs": 20, "runningSecs": 1500, "totalSecs": 1520},
            initiator={"type": "scheduled-job", "id": SCHEDULE_ID},
        ),
        # the demo's ERROR job: it started 32 days ago, no finish time, null durations
        "legacy_error": job_json(
            "6900000000000000000000a2", "ERROR", labels=console_labels("globex"),
            created=NOW - 32 * day, started=NOW - 32 * day + timedelta(seconds=6), durations=None,
            message="Job failed with exit code: 1", flavor="h200x8",
        ),
        # huggingface_hub's own test fixture: COMPLETED, no start, no finish, no durations
        "legacy_completed": job_json(
            "6900000000000000000000a3", "COMPLETED", labels=console_labels("initech"), owner=USER,
            created=NOW - 3 * day, durations=None,
        ),
        # cancelled while queued, from the days before durations
        "canceled_queued": job_json(
            "6900000000000000000000a4", "CANCELED", labels=console_labels("acme"), created=NOW - 2 * day,
            durations=None,
        ),
        # running now: durations recomputed on each request
        "running": job_json(
            "6900000000000000000000a5", "RUNNING", labels=console_labels("acme"),
            created=NOW - timedelta(seconds=400), started=NOW - timedelta(seconds=300),
            durations={"schedulingSecs": 100, "runningSecs": 290, "totalSecs": 390},
            initiator={"type": "scheduled-job", "id": SCHEDULE_ID},
        ),
        # a job that is not the console's (no labels at all), run by a user
        "foreign": job_json(
            "6900000000000000000000a6", "COMPLETED", labels=None, owner=USER, created=NOW - day,
            started=NOW - day, finished=NOW - day + timedelta(seconds=61),
            durations={"schedulingSecs": 0, "runningSecs": 61, "totalSecs": 61},
            initiator={"type": "user", "id": USER["id"], "name": USER["name"]}, flavor="cpu-basic",
        ),
    }
    return {name: JobInfo(**doc, endpoint=ENDPOINT) for name, doc in docs.items()}


def scheduled_json(*, spec: dict[str, Any], schedule: str = "0 3 * * 1", suspend: bool | None = None,
                   last_job: str | None = "6900000000000000000000a1") -> dict[str, Any]:
    """A scheduled job answer: the spec's timeout only as `timeoutSeconds`, `suspend` as given
    (HF sends null for one that is not suspended), its last run and next run."""
    spec = {k: v for k, v in spec.items() if k != "timeout"}
    return {
        "id": SCHEDULE_ID,
        "createdAt": iso(NOW - timedelta(days=40)),
        "jobSpec": spec,
        "schedule": schedule,
        "suspend": suspend,
        "concurrency": False,
        "status": {
            "lastJob": {"id": last_job, "at": iso(NOW - timedelta(days=1))} if last_job else None,
            "nextJobRunAt": iso(NOW + timedelta(days=5)),
        },
        "owner": ORG,
    }


def scheduled_from_submission(kwargs: dict[str, Any], **shape: Any) -> ScheduledJobInfo:
    """The scheduled job HF would answer with for `create_scheduled_job(**kwargs)` (a submission's
    `scheduled_kwargs`): the body huggingface_hub sends, echoed back in HF's shape."""
    labels = dict(kwargs.get("labels") or {})
    if kwargs.get("name"):
        labels["name"] = kwargs["name"]
    spec = {
        "dockerImage": kwargs["image"],
        "command": kwargs["command"],
        "arguments": [],
        "environment": kwargs.get("env") or {},
        "secrets": {name: None for name in kwargs.get("secrets") or {}},
        "flavor": kwargs["flavor"],
        "timeoutSeconds": kwargs["timeout"],
        "labels": labels,
    }
    return ScheduledJobInfo(**scheduled_json(spec=spec, schedule=kwargs["schedule"], **shape))


def hardware() -> list[JobHardwareInfo]:
    """`list_jobs_hardware` as HF answers it: l4x1 at a new price, a flavor only HF lists
    (rtx-pro-6000x2), and most shipped flavors missing (HF lists what it offers today)."""
    docs = [
        {"name": "cpu-basic", "prettyName": "CPU Basic", "cpu": "2 vCPU", "ram": "16 GB",
         "ephemeralStorage": "20 GB", "accelerator": None, "unitCostMicroUSD": 167,
         "unitCostUSD": 0.000167, "unitLabel": "minute"},
        {"name": "l4x1", "prettyName": "Nvidia L4 - x1", "cpu": "8 vCPU", "ram": "30 GB",
         "ephemeralStorage": "400 GB",
         "accelerator": {"type": "gpu", "model": "L4", "quantity": "1", "vram": "24 GB",
                         "manufacturer": "Nvidia"},
         "unitCostMicroUSD": 15000, "unitCostUSD": 0.015, "unitLabel": "minute"},
        {"name": "rtx-pro-6000x2", "prettyName": "Nvidia RTX PRO 6000 - x2", "cpu": "48 vCPU",
         "ram": "400 GB", "ephemeralStorage": "1000 GB",
         "accelerator": {"type": "gpu", "model": "RTX PRO 6000", "quantity": "2", "vram": "192 GB",
                         "manufacturer": "Nvidia"},
         "unitCostMicroUSD": 91667, "unitCostUSD": 0.091667, "unitLabel": "minute"},
        {"name": "b200", "prettyName": "Nvidia B200", "cpu": "28 vCPU", "ram": "250 GB",
         "accelerator": {"type": "gpu", "model": "B200", "quantity": "1", "vram": "180 GB",
                         "manufacturer": "Nvidia"},
         "unitCostMicroUSD": 120000, "unitCostUSD": 0.12, "unitLabel": "minute"},
    ]
    return [JobHardwareInfo(**doc) for doc in docs]
