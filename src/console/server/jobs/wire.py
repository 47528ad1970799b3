"""The JSON shapes of the HF Jobs API, as huggingface_hub 2.4 sends and parses them.

Incoming: :func:`parse_job_spec` checks a job spec (the body of `POST /api/jobs/{namespace}`, and
the `jobSpec` of a scheduled job) and refuses, with a message naming it, anything this server
cannot do (Space images); volumes, exposed ports, network and resource groups are checked by
:mod:`console.server.host.specextras` (the service applies both). Outgoing: :func:`job_json`,
:func:`scheduled_job_json`, :func:`hardware_json` and :func:`whoami_json` build what
`JobInfo`, `ScheduledJobInfo`, `JobHardwareInfo` and `whoami` read. Datetimes are always
``2026-12-02T10:00:00.000Z`` (the `hf` CLI accepts nothing else). Secret values never leave here:
a job's `secrets` answer carries the names only, each mapped to null.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from console import labels
from console.prices import FLAVOR_SPECS, HF_DEFAULT_TIMEOUT_SECONDS, SHIPPED_FLAVORS
from console.server.jobs.store import JobRecord, ScheduledJobRecord

KNOWN_FLAVORS = {f.name: f for f in SHIPPED_FLAVORS}
# HF's label rule (`console.labels`); a job's `name` is a label too, and is also stored as a tag,
# with the same characters. HF answers anything else with a 400.
_LABEL_RE = labels.KEY_RE
_LABEL_VALUE_RE = labels.VALUE_RE
_LABEL_RULE = labels.LABEL_RULE
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,255}\Z")
MAX_TIMEOUT_SECONDS = 7 * 24 * 3600
MAX_ENTRIES = 1000
"""The most entries of one environment, secrets, labels, command or arguments list."""


class ApiError(Exception):
    """An error answer: HTTP status and a one-line message (sent as `{"error": message}`), and the
    Hub's `X-Error-Code` where it sends one (``RepoNotFound`` makes huggingface_hub raise its
    not-found error class)."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def iso(ts: float | None) -> str | None:
    """`2026-12-02T10:00:00.000Z` for a Unix time (None stays None)."""
    if ts is None:
        return None
    dt = datetime.fromtimestamp(ts, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def dumps_bytes(obj: Any) -> bytes:
    """Compact UTF-8 JSON."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def owner_json(namespace: str) -> dict[str, str]:
    return {"id": _stable_id(namespace), "name": namespace, "type": "user"}


def _stable_id(name: str) -> str:
    return hashlib.sha1(f"console-local:{name}".encode()).hexdigest()[:24]


def whoami_json(namespace: str) -> dict[str, Any]:
    return {
        "type": "user",
        "id": _stable_id(namespace),
        "name": namespace,
        "fullname": namespace,
        "email": None,
        "emailVerified": False,
        "canPay": True,
        "isPro": True,
        "periodEnd": None,
        "avatarUrl": "",
        "orgs": [],
        "auth": {
            "type": "access_token",
            "accessToken": {"displayName": "console local server", "role": "write"},
        },
    }


# ---------------------------------------------------------------------------------------------
# Incoming


def _dict_items(value: dict[str, Any], where: str) -> Iterator[tuple[Any, str]]:
    for key, item in value.items():
        yield key, f"{where}.{key!r}" if where else repr(key)  # the key first: repr is printable
        yield item, f"{where}.{key}" if where else str(key)


def _list_items(value: list[Any], where: str) -> Iterator[tuple[Any, str]]:
    for i, item in enumerate(value):
        yield item, f"{where}[{i}]"


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_WALK_BUDGET = 200_000


def check_unicode(doc: Any, raw: bytes | None = None) -> Any:
    """`doc` (parsed JSON, from `raw` if given) if every string in it, keys too, is valid Unicode;
    a lone surrogate (`"\\ud800"`, which JSON allows) is a 400 naming where it is: stored, it could
    be neither answered (UTF-8 cannot encode it) nor run, and the runner would retry it forever.

    Cheap for any body: a lone surrogate can only come from a `\\uD8xx`-`\\uDFxx` escape, so a body
    without one is not looked at; one with one is re-encoded in C, and only a body that fails is
    walked (at most 200,000 values) to name the field."""
    if raw is not None and not _SURROGATE_ESCAPE.search(raw):
        return doc
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
        return doc
    except UnicodeEncodeError:
        pass
    # depth first, each container's items drawn lazily: the budget bounds the work, not the body
    stack: list[Iterator[tuple[Any, str]]] = [iter([(doc, "")])]
    budget = _WALK_BUDGET
    while stack and budget > 0:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        budget -= 1
        value, where = step
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ApiError(400, f"{where or 'the body'}: not valid Unicode (a lone surrogate "
                               "escape such as \\ud800)") from None
        elif isinstance(value, dict):
            stack.append(_dict_items(value, where))
        elif isinstance(value, list):
            stack.append(_list_items(value, where))
    raise ApiError(400, "the body: not valid Unicode (a lone surrogate escape such as \\ud800)")


MAX_BODY_BYTES = 8 * 1024 * 1024
"""The largest JSON request body read (a job spec with its environment is a few KB; 413 beyond)."""


async def read_json_body(request: Any, limit: int = MAX_BODY_BYTES) -> Any:
    """A request's JSON body (None if empty), read at most `limit` bytes: a 413 past it, a 400 for
    anything that is not JSON, nested too deeply or not valid Unicode."""
    declared = request.headers.get("content-length", "")
    too_big = f"the request body is over {limit / (1024 * 1024):g} MiB"
    if declared.isdigit() and int(declared) > limit:
        raise ApiError(413, too_big)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, too_big)
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw:
        return None
    try:
        return check_unicode(json.loads(raw), raw)
    except ValueError:
        raise ApiError(400, "the request body is not valid JSON") from None
    except RecursionError:
        raise ApiError(400, "the request body is nested too deeply") from None


def _check_text(value: str, what: str) -> str:
    """A string a process can be given: no NUL (exec refuses it, so the job could never start)."""
    if "\0" in value:
        raise ApiError(400, f"{what}: contains a NUL character")
    return value


def _expect_str_list(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ApiError(400, f"{what} must be a list of strings")
    if len(value) > MAX_ENTRIES:
        raise ApiError(400, f"{what}: at most {MAX_ENTRIES} items")
    for i, item in enumerate(value):
        _check_text(item, f"{what}[{i}]")
    return list(value)


def _expect_dict_of_str(value: Any, what: str, *, scalars: bool = False) -> dict[str, str]:
    """An object whose values are strings. With `scalars`, numbers and booleans are taken as their
    text (huggingface_hub types `env` and `secrets` as `dict[str, Any]` and sends them as given);
    labels must be strings (a label `5` and a label `"5"` must not both exist)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ApiError(400, f"{what} must be an object of string values")
    if len(value) > MAX_ENTRIES:
        raise ApiError(400, f"{what}: at most {MAX_ENTRIES} entries")
    out: dict[str, str] = {}
    for key, val in value.items():
        if val is None:
            raise ApiError(400, f"{what}.{key}: has no value")
        if scalars and isinstance(val, (int, float)):
            val = str(val)
        if not isinstance(val, str):
            raise ApiError(400, f"{what}.{key}: must be a string, not {type(val).__name__}")
        out[key] = _check_text(val, f"{what}.{key}")
    return out


def parse_flag(value: Any, what: str, default: bool = False) -> bool:
    """A true/false field (absent or null: `default`); anything else is a 400 naming it."""
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ApiError(400, f"{what} must be true or false")
    return value


def parse_timeout(value: Any, what: str = "timeoutSeconds") -> int:
    """Seconds from 1 to 7 days; NaN, infinities, booleans and strings are a 400 naming it."""
    if value is None:
        return HF_DEFAULT_TIMEOUT_SECONDS
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ApiError(400, f"{what} must be a number of seconds")
    if isinstance(value, float) and not math.isfinite(value):
        raise ApiError(400, f"{what} must be a finite number of seconds, not {value}")
    if not 1 <= value <= MAX_TIMEOUT_SECONDS:
        raise ApiError(400, f"{what} must be from 1 to {MAX_TIMEOUT_SECONDS}")
    return int(value)


def parse_labels(value: Any) -> dict[str, str]:
    """Labels as HF accepts them; anything else is a 400 naming the field (``labels.<key>``)."""
    labels = _expect_dict_of_str(value, "labels")
    for key, val in labels.items():
        if not _LABEL_RE.match(key):
            raise ApiError(400, f"labels: invalid key {key!r}: {_LABEL_RULE} (at least 1)")
        if not _LABEL_VALUE_RE.match(val):
            what = "the job name" if key == "name" else "invalid value"
            raise ApiError(400, f"labels.{key}: {what} {val!r}: {_LABEL_RULE}")
    return labels


def parse_tags(value: Any) -> list[str]:
    """Tags as HF accepts them (the characters of a label key); anything else is a 400."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise ApiError(400, "tags must be a list of strings")
    if len(value) > MAX_ENTRIES:
        raise ApiError(400, f"tags: at most {MAX_ENTRIES}")
    for tag in value:
        if not _LABEL_RE.match(tag):
            raise ApiError(400, f"tags: invalid tag {tag!r}: {_LABEL_RULE} (at least 1)")
    return list(value)


def parse_job_spec(body: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Check a submitted job spec; return (spec without secrets, secrets)."""
    if not isinstance(body, dict):
        raise ApiError(400, "the job spec must be a JSON object")
    if body.get("spaceId") not in (None, ""):
        raise ApiError(
            400,
            "Space images (spaceId) are not supported by the local Jobs server: "
            "use a Docker image name and a command",
        )
    arch = body.get("arch")
    if not (arch is None or (isinstance(arch, str) and arch in ("", "amd64", "x86_64", "arm64"))):
        raise ApiError(400, f"arch {body.get('arch')!r} is not supported by the local Jobs server")

    command = body.get("command")
    if not isinstance(command, list) or not command:
        raise ApiError(400, "command must be a non-empty list of strings")
    command = _expect_str_list(command, "command")
    arguments = body.get("arguments")
    arguments = _expect_str_list([] if arguments is None else arguments, "arguments")
    image = body.get("dockerImage")
    if not isinstance(image, str) or not image:
        raise ApiError(400, "dockerImage is required (the local server records it but runs the "
                       "command on the host)")
    _check_text(image, "dockerImage")

    flavor = body.get("flavor")
    flavor = "cpu-basic" if flavor in (None, "") else flavor
    if not isinstance(flavor, str):
        raise ApiError(400, f"flavor must be a flavor name (a string), not {type(flavor).__name__}")
    if flavor not in KNOWN_FLAVORS:
        raise ApiError(400, f"flavor: unknown flavor {flavor!r}; known: {', '.join(KNOWN_FLAVORS)}")

    field = "timeoutSeconds" if body.get("timeoutSeconds") is not None else "timeout"
    timeout = parse_timeout(body.get(field), field)

    attempts = body.get("attempts", 1)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= 10:
        raise ApiError(400, "attempts must be a whole number from 1 to 10")

    env = _expect_dict_of_str(body.get("environment"), "environment", scalars=True)
    secrets = _expect_dict_of_str(body.get("secrets"), "secrets", scalars=True)
    for what, names in (("environment", env), ("secrets", secrets)):
        for name in names:
            if not _ENV_NAME_RE.match(name):
                raise ApiError(400, f"{what}: {name!r} is not a valid environment variable name "
                               "(letters, digits and '_', not starting with a digit)")
    labels = parse_labels(body.get("labels"))
    ssh = body.get("ssh")
    if isinstance(ssh, dict):
        ssh_enabled = parse_flag(ssh.get("enabled"), "ssh.enabled")
    else:
        ssh_enabled = parse_flag(ssh, "ssh")
    tags = parse_tags(body.get("tags"))

    spec: dict[str, Any] = {
        "dockerImage": image,
        "command": command,
        "arguments": arguments,
        "environment": env,
        "flavor": flavor,
        "timeoutSeconds": timeout,
        "attempts": attempts,
        "labels": labels,
        "ssh": ssh_enabled,
        "tags": tags,
    }
    return spec, secrets


# ---------------------------------------------------------------------------------------------
# Outgoing


def _durations(job: JobRecord, now: float) -> dict[str, int | None]:
    end = job.finished_at if job.finished_at is not None else now
    scheduling = None
    running = None
    if job.started_at is not None:
        scheduling = int(job.started_at - job.created_at)
        running = int(max(0.0, end - job.started_at))
    return {
        "schedulingSecs": scheduling,
        "runningSecs": running,
        "totalSecs": int(max(0.0, end - job.created_at)),
    }


def job_json(
    job: JobRecord, *, now: float | None = None, ssh_url: str | None = None,
    expose_urls: list[str] | None = None,
) -> dict[str, Any]:
    now = time.time() if now is None else now
    spec = job.spec
    out: dict[str, Any] = {
        "id": job.id,
        "createdAt": iso(job.created_at),
        "dockerImage": spec.get("dockerImage"),
        "command": spec.get("command"),
        "arguments": spec.get("arguments", []),
        "environment": spec.get("environment", {}),
        "secrets": {name: None for name in job.secrets},
        "flavor": spec.get("flavor"),
        "labels": job.labels or None,
        "timeoutSeconds": spec.get("timeoutSeconds"),
        "retry": max(0, int(spec.get("attempts", 1)) - 1),
        "status": {"stage": job.stage, "message": job.message},
        "durations": _durations(job, now),
        "owner": owner_json(job.namespace),
        "initiator": job.initiator,
        "attempt": job.attempt,
    }
    if job.started_at is not None:
        out["startedAt"] = iso(job.started_at)
    if job.finished_at is not None:
        out["finishedAt"] = iso(job.finished_at)
    if spec.get("tags"):
        out["tags"] = spec["tags"]
    if ssh_url:
        out["status"]["sshUrl"] = ssh_url
    if expose_urls:
        out["status"]["exposeUrls"] = expose_urls
    out.update(_extras_json(spec))
    return out


def _spec_json(spec: dict[str, Any], secrets: dict[str, str]) -> dict[str, Any]:
    return {
        "dockerImage": spec.get("dockerImage"),
        "command": spec.get("command"),
        "arguments": spec.get("arguments", []),
        "environment": spec.get("environment", {}),
        "secrets": {name: None for name in secrets},
        "flavor": spec.get("flavor"),
        "timeout": spec.get("timeoutSeconds"),
        "timeoutSeconds": spec.get("timeoutSeconds"),
        "labels": spec.get("labels") or None,
        "retry": max(0, int(spec.get("attempts", 1)) - 1),
        "tags": spec.get("tags") or None,
        **_extras_json(spec),
    }


EXTRA_KEYS = ("volumes", "expose", "network", "resourceGroupId")
"""Spec keys checked by console.server.host.specextras and echoed as they were stored."""


def _extras_json(spec: dict[str, Any]) -> dict[str, Any]:
    return {key: spec[key] for key in EXTRA_KEYS if spec.get(key)}


def scheduled_job_json(sj: ScheduledJobRecord) -> dict[str, Any]:
    last = {"id": sj.last_job_id, "at": iso(sj.last_job_at)} if sj.last_job_id else None
    return {
        "id": sj.id,
        "createdAt": iso(sj.created_at),
        "jobSpec": _spec_json(sj.spec, sj.secrets),
        "schedule": sj.schedule,
        "suspend": sj.suspend,
        "concurrency": sj.concurrency,
        "status": {
            "lastJob": last,
            "nextJobRunAt": None if sj.suspend else iso(sj.next_run_at),
        },
        "owner": owner_json(sj.namespace),
    }


def hardware_json() -> list[dict[str, Any]]:
    """The flavors and prices of `console.prices` in the shape of `JobHardwareInfo`, with each
    flavor's HF name, vCPUs, RAM and ephemeral storage (`console.prices.FLAVOR_SPECS`; a flavor
    without published figures has none, as HF lists none). GPU jobs run on this machine's CPU: the
    flavor sets the price of the minutes and the job's limits.
    """
    out: list[dict[str, Any]] = []
    for f in SHIPPED_FLAVORS:
        per_minute = f.price_per_hour / 60.0
        accelerator = None
        if f.is_gpu:
            qty, _, model = f.gpu.partition("x ")
            accelerator = {
                "type": "gpu",
                "model": model,
                "quantity": qty,
                "vram": f"{f.gpu_memory_gb} GB",
                "manufacturer": "Nvidia",
            }
        spec = FLAVOR_SPECS.get(f.name)
        figures = {} if spec is None else {"cpu": f"{spec.vcpu} vCPU", "ram": f"{spec.ram_gb} GB",
                                           "ephemeralStorage": f"{spec.storage_gb} GB"}
        out.append(
            {
                "name": f.name,
                "prettyName": f.name if spec is None else spec.pretty_name,
                **figures,
                "accelerator": accelerator,
                "unitCostMicroUSD": round(per_minute * 1_000_000),
                "unitCostUSD": round(per_minute, 6),
                "unitLabel": "minute",
            }
        )
    return out
