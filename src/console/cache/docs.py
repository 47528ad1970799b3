"""A job as the Jobs API sends it, and back: what the local cache keeps to rebuild a `JobInfo`.

The cache keeps every job the console has seen, so a job that is no longer in memory (an old
tenant's last run after a restart, a finished job paged in from the history) can become the same
`huggingface_hub` `JobInfo` again when something needs more than its table row (the fleet reads a
tenant's request from its command; a rerun starts from it). :func:`job_doc` writes the fields
`JobInfo.__init__` reads, in the API's own spelling; :func:`job_info` reads them back.

Imports huggingface_hub only inside :func:`job_info` (the first frame is painted from the cache
before huggingface_hub is loaded); no Textual, no console.ui or console.server.
"""

from __future__ import annotations

import json
import zlib
from datetime import UTC, datetime
from typing import Any

from console.strings import shared, shared_owner, shared_status


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def job_doc(info: Any) -> dict[str, Any]:
    """The JSON object the Jobs API would send for `info` (a `JobInfo`, compacted or not)."""
    status = info.status
    doc: dict[str, Any] = {
        "id": info.id,
        "createdAt": _iso(info.created_at),
        "startedAt": _iso(getattr(info, "started_at", None)),
        "finishedAt": _iso(getattr(info, "finished_at", None)),
        "dockerImage": getattr(info, "docker_image", None),
        "spaceId": getattr(info, "space_id", None),
        "command": getattr(info, "command", None),
        "arguments": getattr(info, "arguments", None),
        "environment": getattr(info, "environment", None),
        "secrets": getattr(info, "secrets", None),
        "flavor": getattr(info, "flavor", None),
        "labels": getattr(info, "labels", None),
        "status": {
            "stage": str(getattr(status.stage, "value", status.stage)),
            "message": status.message,
            "sshUrl": getattr(status, "ssh_url", None),
            "exposeUrls": getattr(status, "expose_urls", None),
        },
        "retry": getattr(info, "retry", None),
    }
    durations = getattr(info, "durations", None)
    if durations is not None:
        doc["durations"] = {
            "schedulingSecs": durations.scheduling_secs,
            "runningSecs": durations.running_secs,
            "totalSecs": durations.total_secs,
        }
    owner = getattr(info, "owner", None)
    if owner is not None:
        doc["owner"] = {"id": owner.id, "name": owner.name, "type": owner.type}
    initiator = getattr(info, "initiator", None)
    if initiator is not None:
        doc["initiator"] = {"type": initiator.type, "id": initiator.id, "name": initiator.name}
    network = getattr(info, "network", None)
    if network is not None:
        doc["network"] = {"group": network.group, "aliases": list(network.aliases or [])}
    return doc


def pack(doc: dict[str, Any]) -> bytes:
    """A doc as stored: compact JSON, deflated (job docs repeat their keys and command words)."""
    return zlib.compress(json.dumps(doc, separators=(",", ":")).encode(), 1)


def unpack(blob: bytes) -> dict[str, Any]:
    return json.loads(zlib.decompress(blob))


_TIMES = (("createdAt", "created_at"), ("startedAt", "started_at"), ("finishedAt", "finished_at"))


def _parse_iso(value: Any) -> datetime | None:
    """A stored time (`_iso`) as the aware UTC datetime `huggingface_hub` would parse it to."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        from huggingface_hub.utils import parse_datetime

        return parse_datetime(value)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def job_info(doc: dict[str, Any], endpoint: str | None = None) -> Any:
    """The `JobInfo` for a stored doc (its strings shared, as `jobspec.compact_job` keeps them)."""
    from huggingface_hub import JobInfo

    doc = dict(doc)
    doc.setdefault("owner", {"id": "", "name": "", "type": "user"})
    # the times as this module wrote them, read by the C parser (JobInfo's strptime is most of
    # rebuilding a tenant's newest runs at 10,000 tenants)
    when = {name: _parse_iso(doc.pop(key, None)) for key, name in _TIMES}
    kwargs = {"endpoint": endpoint} if endpoint else {}
    info = JobInfo(**doc, **kwargs)
    for name, value in when.items():
        setattr(info, name, value)
    if info.labels:
        info.labels = {shared(k): shared(v) for k, v in info.labels.items()}
    for name in ("command", "arguments"):
        items = getattr(info, name, None)
        if items:
            setattr(info, name, [shared(x) for x in items])
    if info.environment:
        info.environment = {shared(k): shared(v) for k, v in info.environment.items()}
    info.status.stage = shared(info.status.stage)
    info.status = shared_status(info.status)
    info.owner = shared_owner(info.owner)
    return info
