"""The parts of a job spec beyond image and command: volumes, exposed ports, network group,
resource group. Checked on the way in (a 400 names the field) and echoed on the way out in the
shapes `JobInfo` reads (``volumes``, ``expose: {ports, portsPublic}``, ``network: {group,
aliases}``); ``resourceGroupId`` is echoed in the raw JSON (JobInfo has no field for it).

Locally, network groups and resource groups change nothing: every job already shares this machine's
network, and there is one namespace with no spending limits. They are recorded and shown, as
docs/jobs-server.md says.
"""

from __future__ import annotations

import re
from typing import Any

from console.server.host.volumes import parse_volumes
from console.server.jobs.wire import ApiError, parse_job_spec

_GROUP_RE = re.compile(r"[a-z0-9]([a-z0-9-]{0,44}[a-z0-9])?\Z")
_ALIAS_RE = re.compile(r"[a-z0-9]([a-z0-9-]{0,32}[a-z0-9])?\Z")


def parse_ports(value: Any, what: str) -> list[int]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in value):
        raise ApiError(400, f"{what} must be a list of port numbers")
    if len(value) > 100:
        raise ApiError(400, f"{what}: at most 100 ports")
    bad = [p for p in value if not 1 <= p <= 65535]
    if bad:
        raise ApiError(400, f"{what}: {bad[0]} is not a port number (1-65535)")
    return list(dict.fromkeys(value))


def parse_expose(value: Any) -> dict[str, list[int]] | None:
    """`{"ports": [...], "portsPublic": [...]}`; public ports are exposed too."""
    if value in (None, {}):
        return None
    if not isinstance(value, dict):
        raise ApiError(400, 'expose must be {"ports": [...], "portsPublic": [...]}')
    public = parse_ports(value.get("portsPublic"), "expose.portsPublic")
    ports = list(dict.fromkeys(parse_ports(value.get("ports"), "expose.ports") + public))
    return {"ports": ports, "portsPublic": public} if ports else None


def parse_extras(body: dict[str, Any]) -> dict[str, Any]:
    """The spec keys for volumes, expose, network and resourceGroupId (only those given)."""
    out: dict[str, Any] = {}
    volumes = parse_volumes(body.get("volumes"))
    if volumes:
        out["volumes"] = volumes
    expose = parse_expose(body.get("expose"))
    if expose:
        out["expose"] = expose
    network = body.get("network")
    if network:
        if not isinstance(network, dict) or not isinstance(network.get("group"), str):
            raise ApiError(400, 'network must be {"group": "...", "aliases": [...]}')
        if not _GROUP_RE.match(network["group"]):
            raise ApiError(400, f"network.group {network['group']!r}: lowercase letters, digits and dashes, 46 at most")
        aliases = network.get("aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(a, str) and _ALIAS_RE.match(a) for a in aliases):
            raise ApiError(400, "network.aliases: lowercase letters, digits and dashes, 34 at most each")
        if len(set(aliases)) != len(aliases):
            raise ApiError(400, "network.aliases must be unique")
        out["network"] = {"group": network["group"], "aliases": aliases}
    group_id = body.get("resourceGroupId")
    if group_id:
        if not isinstance(group_id, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", group_id):
            group_id = group_id if isinstance(group_id, (str, int, float)) else type(group_id).__name__
            raise ApiError(400, f"resourceGroupId {group_id!r} is not a resource group id")
        out["resourceGroupId"] = group_id
    return out


def parse_spec(body: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """A submitted job spec checked whole: :func:`console.server.jobs.wire.parse_job_spec` and the
    extras above; (spec without secrets, secrets)."""
    spec, secrets = parse_job_spec(body)
    spec.update(parse_extras(body))
    return spec, secrets
