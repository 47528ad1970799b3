"""The request bodies of the HF Jobs API, declared once: the server's checks, its OpenAPI description
(:mod:`console.server.jobs.apidoc`) and its one-line 400s (:func:`decode`) all come from here.

Each body is a msgspec Struct whose field types carry the rules (patterns, ranges, lengths, the
shipped flavors); a rule no type can say (a Space image, a mount path inside another, two equal
network aliases) is the struct's ``__post_init__``, next to it. What huggingface_hub 2.4 sends
(`run_job`, `create_scheduled_job`, `update_job_labels`, ...) decodes; anything else is a 400
naming the field, with nothing stored.

Patterns end in ``\\Z`` (Python's end of text: ``$`` would let a trailing newline through, and
"A\\n" is no label); the description writes them with ``$``, JSON Schema's end.
"""

from __future__ import annotations

import posixpath
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

from console import labels
from console.prices import HF_DEFAULT_TIMEOUT_SECONDS, HF_MAX_TIMEOUT_SECONDS, SHIPPED_FLAVORS
from console.server.jobs.schemaerrors import decode_error
from console.server.jobs.wire import ApiError

MAX_ENTRIES = 1000
"""The most entries of one environment, secrets, labels, tags, command or arguments list."""
MAX_PORTS = 100
MAX_VOLUMES = 100
KNOWN_FLAVORS = {f.name: f for f in SHIPPED_FLAVORS}


def _end(pattern: str) -> str:
    """A JSON Schema pattern (`^...$`) as msgspec checks it: `\\Z` for the end of the text."""
    return pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern


NO_NUL = r"^[^\x00]*$"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,255}\Z"
GROUP = r"^[a-z0-9]([a-z0-9-]{0,44}[a-z0-9])?\Z"
ALIAS = r"^[a-z0-9]([a-z0-9-]{0,32}[a-z0-9])?\Z"
RESOURCE_GROUP = r"^[A-Za-z0-9_-]{0,64}\Z"
MOUNT_PATH = r"^/[^\x00]*$"
LABEL_KEY = _end(labels.KEY_PATTERN)
LABEL_VALUE = _end(labels.VALUE_PATTERN)
RULES = {
    NO_NUL: "a NUL character cannot be given to a process",
    ENV_NAME: "letters, digits and '_', not starting with a digit",
    GROUP: "lowercase letters, digits and dashes, 46 at most",
    ALIAS: "lowercase letters, digits and dashes, 34 at most",
    RESOURCE_GROUP: "letters, digits, '-' and '_', 64 at most",
    MOUNT_PATH: "must be an absolute path inside the job (e.g. /data)",
    LABEL_KEY: f"{labels.LABEL_RULE} (at least 1)",
    LABEL_VALUE: labels.LABEL_RULE,
}
"""Each pattern in words, for the 400 that quotes it."""

Text = Annotated[str, Meta(pattern=NO_NUL)]
EnvName = Annotated[str, Meta(pattern=ENV_NAME)]
EnvValue = Text | int | float | bool
"""huggingface_hub types `env` and `secrets` as `dict[str, Any]`: numbers and booleans are taken
as their text."""
EnvMap = Annotated[dict[EnvName, EnvValue], Meta(max_length=MAX_ENTRIES)]
LabelKey = Annotated[str, Meta(pattern=LABEL_KEY)]
LabelValue = Annotated[str, Meta(pattern=LABEL_VALUE)]
Labels = Annotated[dict[LabelKey, LabelValue], Meta(max_length=MAX_ENTRIES)]
"""HF's label rule (`console.labels`); values are strings only (a label 5 and "5" must not both
exist). A job's `name` is a label too."""
Tags = Annotated[list[LabelKey], Meta(max_length=MAX_ENTRIES)]
Port = Annotated[int, Meta(ge=1, le=65535)]
Ports = Annotated[list[Port], Meta(max_length=MAX_PORTS)]
Timeout = Annotated[float, Meta(ge=1, le=HF_MAX_TIMEOUT_SECONDS, description="seconds")]
Flavor = Literal[tuple(KNOWN_FLAVORS) + ("",)]  # type: ignore[valid-type]  # "": cpu-basic
Schedule = Annotated[str, Meta(max_length=200, description=(
    "@hourly/@daily/@weekly/@monthly/@yearly, 5 cron fields, or 6 with seconds first; one that "
    "never fires (30 February) is refused"))]
_RESERVED_MOUNTS = ("/proc", "/dev", "/sys")


class Ssh(Struct):
    enabled: bool | None = None


class Expose(Struct, rename="camel"):
    """Ports a job serves; public ones are exposed too."""

    ports: Ports | None = None
    ports_public: Ports | None = None

    def __post_init__(self) -> None:
        self.ports_public = list(dict.fromkeys(self.ports_public or []))
        self.ports = list(dict.fromkeys([*(self.ports or []), *self.ports_public]))

    def stored(self) -> dict[str, list[int]] | None:
        return {"ports": self.ports or [], "portsPublic": self.ports_public or []} if self.ports else None


class Network(Struct):
    """A network group and the job's names in it (recorded and shown: locally every job already
    shares this machine's network)."""

    group: Annotated[str, Meta(pattern=GROUP)]
    aliases: list[Annotated[str, Meta(pattern=ALIAS)]] | None = None

    def __post_init__(self) -> None:
        self.aliases = self.aliases or []
        if len(set(self.aliases)) != len(self.aliases):
            raise ValueError("aliases must be unique")


class Volume(Struct, rename="camel"):
    """A bucket or repo of the local Hub mounted in the job (`Volume.to_dict()`); the source is
    checked against the Hub by `console.server.host.volumes`."""

    source: Annotated[str, Meta(pattern=r"^[^/]+/[^/]+$", description="namespace/name")]
    mount_path: Annotated[str, Meta(pattern=MOUNT_PATH, description="an absolute path")]
    type: Literal["bucket", "model", "dataset", "space"] | None = None
    read_only: bool | None = None
    path: Text | None = None
    revision: Text | None = None

    def __post_init__(self) -> None:
        mount = self.mount_path
        norm = posixpath.normpath(mount)
        if norm != mount.rstrip("/") or norm == "/" or ".." in mount.split("/"):
            raise ValueError(f"mountPath {mount!r} must be a plain absolute path, not '/'")
        if any(norm == r or norm.startswith(r + "/") for r in _RESERVED_MOUNTS):
            raise ValueError(f"mountPath {mount!r} is reserved")
        self.mount_path = norm
        self.type = self.type or "model"

    def stored(self) -> dict[str, Any]:
        """As the server keeps it: repos always read-only, `path` relative (checked against the
        Hub by `console.server.host.volumes.check_volumes`)."""
        out: dict[str, Any] = {"type": self.type, "source": self.source, "mountPath": self.mount_path,
                               "readOnly": True if self.type != "bucket" else bool(self.read_only)}
        if self.path:
            out["path"] = self.path.strip("/")
        if self.revision is not None:
            out["revision"] = self.revision
        return out


class JobSpec(Struct, rename="camel"):
    """What huggingface_hub's `run_job` sends (and a scheduled job's `jobSpec`). Space images
    (`spaceId`) are refused: the server runs a command, not a Space."""

    docker_image: Annotated[str, Meta(min_length=1, pattern=NO_NUL)]
    command: Annotated[list[Text], Meta(min_length=1, max_length=MAX_ENTRIES)]
    arguments: Annotated[list[Text], Meta(max_length=MAX_ENTRIES)] | None = None
    environment: EnvMap | None = None
    secrets: EnvMap | None = None
    flavor: Flavor | None = None
    timeout_seconds: Timeout | None = None
    timeout: Timeout | None = None
    attempts: Annotated[int, Meta(ge=1, le=10)] = 1
    labels: Labels | None = None
    tags: Tags | None = None
    arch: Literal["", "amd64", "x86_64", "arm64"] | None = None
    ssh: bool | Ssh | None = None
    expose: Expose | None = None
    network: Network | None = None
    resource_group_id: Annotated[str, Meta(pattern=RESOURCE_GROUP)] | None = None
    volumes: Annotated[list[Volume], Meta(max_length=MAX_VOLUMES)] | None = None
    space_id: str | None = None

    def __post_init__(self) -> None:
        if self.space_id:
            raise ValueError(SPACE_REFUSED)
        seen: list[str] = []
        for i, vol in enumerate(self.volumes or []):
            m = vol.mount_path
            if any(m == s or m.startswith(s + "/") or s.startswith(m + "/") for s in seen):
                raise ValueError(f"volumes[{i}].mountPath: {m} overlaps another volume")
            seen.append(m)

    def stored(self) -> tuple[dict[str, Any], dict[str, str]]:
        """(the spec as the server keeps it, without secrets; the secrets)."""
        timeout = self.timeout_seconds if self.timeout_seconds is not None else self.timeout
        ssh = self.ssh.enabled if isinstance(self.ssh, Ssh) else self.ssh
        spec: dict[str, Any] = {
            "dockerImage": self.docker_image,
            "command": self.command,
            "arguments": self.arguments or [],
            "environment": _texts(self.environment),
            "flavor": self.flavor or "cpu-basic",
            "timeoutSeconds": HF_DEFAULT_TIMEOUT_SECONDS if timeout is None else int(timeout),
            "attempts": self.attempts,
            "labels": self.labels or {},
            "ssh": bool(ssh),
            "tags": self.tags or [],
        }
        if self.volumes:
            spec["volumes"] = [v.stored() for v in self.volumes]
        expose = self.expose.stored() if self.expose else None
        if expose:
            spec["expose"] = expose
        if self.network:
            spec["network"] = {"group": self.network.group, "aliases": self.network.aliases}
        if self.resource_group_id:
            spec["resourceGroupId"] = self.resource_group_id
        return spec, _texts(self.secrets)


SPACE_REFUSED = ("Space images (spaceId) are not supported by the local Jobs server: use a Docker "
                 "image name and a command")


def _texts(values: dict[str, Any] | None) -> dict[str, str]:
    return {k: v if isinstance(v, str) else str(v) for k, v in (values or {}).items()}


class ScheduledJobRequest(Struct, rename="camel"):
    """What `create_scheduled_job` sends. The cron is checked by the scheduler (it knows which
    never fire)."""

    schedule: Schedule
    job_spec: JobSpec
    suspend: bool | None = None
    concurrency: bool | None = None


class LabelsBody(Struct):
    """What `update_job_labels` / `update_scheduled_job_labels` send: all of the labels."""

    labels: Labels | None


class ScheduleBody(Struct):
    schedule: Schedule


REQUESTS: tuple[type, ...] = (JobSpec, Expose, ScheduledJobRequest, LabelsBody, ScheduleBody)
"""The request bodies the description names (components/schemas)."""


def decode(body: Any, kind: type[Any], what: str = "the body", within: str = "") -> Any:
    """`body` (parsed JSON) as `kind`, or a 400 naming the field that breaks its rules (`what` for
    the body itself; its fields named as inside `within`, if given)."""
    try:
        return msgspec.convert(body, kind)
    except msgspec.ValidationError as exc:
        spec = body.get("jobSpec") if kind is ScheduledJobRequest and isinstance(body, dict) else body
        if kind in (JobSpec, ScheduledJobRequest) and isinstance(spec, dict) and spec.get("spaceId"):
            raise ApiError(400, SPACE_REFUSED) from None  # before "dockerImage is required"
        raise ApiError(400, decode_error(exc, body, kind, what, RULES, within)) from None
