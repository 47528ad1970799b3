"""No job holds the server's own token: each gets a token of its own, for what it needs.

A job whose secrets hold the server's bearer token (a local training run's `HF_TOKEN`: the local
Hub is this server) starts with that secret replaced by a token minted for the job
(:meth:`Grants.secrets_for`, called by the runner as the job starts). The server's token stays in
its own state; the job's token lasts until the job ends (:meth:`Grants.revoke`, on the runner's
`on_finish`), across its retries.

What a job's token may do (:meth:`Grants.allows`, asked by the app's guard before any route):

* of the Jobs API, only its own job: read it, its logs and metrics, cancel it. Not list jobs,
  not read, cancel or duplicate another, not start one, nothing of scheduled jobs;
* `whoami` and the hardware list (what huggingface_hub asks before it pushes);
* for a console run (label `app=console`, the local Hub's seeding job `app=console-hub`, or an
  adapter's evaluation `app=console-eval`):
  read the repos its command reads (`--base-model`, `--dataset`, a dataset check's first
  argument) and read and write the repos it writes (`--hub-model-id`, the seed's `--repo`),
  including creating them, uploading to them (`preupload`, `commit`, Xet and LFS uploads, branches,
  tags) and the model card check (`/api/validate-yaml`);
* nothing else: no other repo, no listing of repos, no bucket call (a job's buckets are its
  volumes), no repo deletion or move. Any other request is a 403 naming the job.

A job's token is `hf_job_` and 32 random characters; a token that is neither the server's nor a
live job's is a 401, as before.
"""

from __future__ import annotations

import hmac
import re
import secrets
import threading
from dataclasses import dataclass
from typing import Any

from console.server.jobs.store import JobRecord

PREFIX = "hf_job_"
CONSOLE_APPS = ("console", "console-hub", "console-eval")
"""The `app` label values of jobs the console submits (runs, dataset checks, the Hub's seeding,
an adapter's evaluation: it reads its base and dataset and writes the adapter repo's tag)."""
_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_OWN_JOB_READS = ("", "/logs", "/metrics")
_READ_ACTIONS = ("tree", "refs", "commits", "revision", "xet-read-token", "auth-check", "paths-info")
MAX_CREATE_BODY = 64 * 1024

Repo = tuple[str, str]
"""(repo type, repo id in lower case)."""


@dataclass(frozen=True)
class Grant:
    job_id: str
    token: str
    reads: frozenset[Repo]
    writes: frozenset[Repo]


def repos_of(job: JobRecord) -> tuple[frozenset[Repo], frozenset[Repo]]:
    """(repos read, repos written) by a console job, from its command; nothing for other jobs."""
    if (job.labels or {}).get("app") not in CONSOLE_APPS:
        return frozenset(), frozenset()
    argv = [str(a) for a in [*(job.spec.get("command") or []), *(job.spec.get("arguments") or [])]]
    reads: set[Repo] = set()
    writes: set[Repo] = set()
    flags = {"--base-model": ("model", reads), "--dataset": ("dataset", reads),
             "--hub-model-id": ("model", writes), "--repo": ("model", writes)}
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag in flags and _REPO_ID.fullmatch(value):
            kind, into = flags[flag]
            into.add((kind, value.lower()))
    script = next((i for i, a in enumerate(argv) if a.endswith(".py")), None)
    if (job.labels or {}).get("kind") == "validate" and script is not None and script + 1 < len(argv):
        if _REPO_ID.fullmatch(argv[script + 1]):
            reads.add(("dataset", argv[script + 1].lower()))
    return frozenset(reads | writes), frozenset(writes)


class Grants:
    """The live jobs' tokens (in memory: a restarted server has none, and no job runs on)."""

    def __init__(self, master: str) -> None:
        self._master = master
        self._by_token: dict[str, Grant] = {}
        self._by_job: dict[str, Grant] = {}
        self._lock = threading.Lock()

    def secrets_for(self, job: JobRecord) -> dict[str, str]:
        """The job's secrets as it starts with them: any equal to the server's token replaced by
        the job's own (minted at its first start, kept for its retries)."""
        out = dict(job.secrets)
        if not any(hmac.compare_digest(v.encode(), self._master.encode()) for v in out.values()):
            return out
        with self._lock:
            grant = self._by_job.get(job.id)
            if grant is None:
                reads, writes = repos_of(job)
                grant = Grant(job.id, PREFIX + secrets.token_urlsafe(24), reads, writes)
                self._by_job[job.id] = grant
                self._by_token[grant.token] = grant
        return {k: grant.token if hmac.compare_digest(v.encode(), self._master.encode()) else v
                for k, v in out.items()}

    def revoke(self, job_id: str) -> None:
        with self._lock:
            grant = self._by_job.pop(job_id, None)
            if grant is not None:
                self._by_token.pop(grant.token, None)

    def find(self, authorization: str | None) -> Grant | None:
        """The live grant an `Authorization: Bearer hf_job_...` header names, or None."""
        if not authorization or not authorization.startswith("Bearer " + PREFIX):
            return None
        with self._lock:
            return self._by_token.get(authorization[len("Bearer "):])

    async def allows(self, grant: Grant, request: Any) -> str | None:
        """None when the job's token may make this request, else why not (a 403's message)."""
        method, path = request.method, request.url.path
        parts = [p for p in path.split("/") if p]
        refused = f"this token belongs to job {grant.job_id} and is not allowed: {method} {path}"
        if (method, path) in (("GET", "/api/whoami-v2"), ("GET", "/api/jobs/hardware")):
            return None
        if parts[:2] == ["api", "jobs"] and len(parts) >= 4:
            own = parts[3] == grant.job_id
            rest = "/" + "/".join(parts[4:]) if len(parts) > 4 else ""
            if own and ((method == "GET" and rest in _OWN_JOB_READS) or (method == "POST" and rest == "/cancel")):
                return None
            return refused
        if path == "/api/validate-yaml" and method == "POST":
            return None if grant.writes else refused
        if path == "/api/repos/create" and method == "POST":
            repo = await _created_repo(request)
            return None if repo in grant.writes else refused
        repo, write = _repo_request(method, parts)
        if repo is None:
            return refused
        if repo in grant.writes or (not write and repo in grant.reads):
            return None
        return refused


def _repo_request(method: str, parts: list[str]) -> tuple[Repo | None, bool]:
    """(the repo a repo route names, whether it writes), or (None, _) for any other route."""
    if len(parts) >= 4 and parts[0] == "api" and parts[1] in ("models", "datasets"):
        repo = (parts[1][:-1], f"{parts[2]}/{parts[3]}".lower())
        action = parts[4] if len(parts) > 4 else ""
        looks = method in ("GET", "HEAD") or action == "paths-info"
        return repo, not (looks and (action == "" or action in _READ_ACTIONS))
    if parts[:1] == ["api"]:
        return None, False
    kind = "model"
    if parts[:1] == ["datasets"]:
        kind, parts = "dataset", parts[1:]
    if len(parts) >= 3 and parts[2] == "resolve" and method in ("GET", "HEAD"):
        return (kind, f"{parts[0]}/{parts[1]}".lower()), False
    if len(parts) >= 5 and parts[1].endswith(".git") and parts[2:5] == ["info", "lfs", "objects"]:
        return (kind, f"{parts[0]}/{parts[1][:-4]}".lower()), True
    return None, False


async def _created_repo(request: Any) -> Repo | None:
    """The repo a `POST /api/repos/create` body names (the body is kept for the route)."""
    declared = request.headers.get("content-length", "")
    if not declared.isdigit() or int(declared) > MAX_CREATE_BODY:
        return None
    import json

    try:
        payload = json.loads(await request.body())
    except ValueError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
        return None
    org = payload.get("organization")
    kind = payload.get("type") or "model"
    if not isinstance(org, str) or kind not in ("model", "dataset"):
        return None
    return kind, f"{org}/{payload['name']}".lower()
