"""Where the embedded Jobs server keeps its state, and the folders it announces to jobs.

Everything lives under :func:`console.paths.data_dir` (so `CONSOLE_DATA_DIR` moves all of it):

- ``server/jobs.sqlite3``  jobs and scheduled jobs (SQLite, WAL)
- ``server/logs/<job_id>.log``  one JSON event per line, exactly what the logs SSE stream sends
- ``server/work/<job_id>/``  a job's throwaway working folder, deleted when the job ends
- ``server/token``  the bearer token (mode 0600) unless `CONSOLE_SERVER_TOKEN` is set
- ``server.json``  ``{"url", "pid"}`` of a running `console serve`, so several consoles share it
- ``artifacts/<tenant>/``  the durable artifact store that stands in for the Hub, one folder per
  tenant (a job sees its tenant's as ``$CONSOLE_ARTIFACTS_DIR``, and no other)
- ``artifacts/hub.local/``  the local Hub's buckets and repos that jobs mount as volumes
  (``buckets/<ns>/<name>/``, ``models/<ns>/<name>/``, ``datasets/...``, ``spaces/...``, their index
  ``index.sqlite3`` and the Xet store ``xet/``); a tenant id never has a '.', so no tenant folder
  can be called that
- ``trackio/``  the shared Trackio store jobs log metrics to (``$TRACKIO_DIR``)
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

from console import paths

TOKEN_ENV = "CONSOLE_SERVER_TOKEN"


def _made(path: Path) -> Path:
    """`path`, created (with its parents) if missing."""
    path.mkdir(parents=True, exist_ok=True)
    return path


def server_dir() -> Path:
    return _made(paths.data_dir() / "server")


def reserve_path() -> Path:
    """The space held back so a job's end can be recorded on a full disk (server/reserve.py)."""
    return server_dir() / "reserve"


def db_path() -> Path:
    return server_dir() / "jobs.sqlite3"


def logs_dir() -> Path:
    return _made(server_dir() / "logs")


def log_path(job_id: str) -> Path:
    return logs_dir() / f"{job_id}.log"


def work_root() -> Path:
    return _made(server_dir() / "work")


def job_workdir(job_id: str) -> Path:
    """The working folder a job runs in (exists only while the job runs)."""
    return work_root() / job_id


def artifacts_dir() -> Path:
    """The durable folder standing in for the Hub (jobs see it as $CONSOLE_ARTIFACTS_DIR)."""
    return _made(paths.data_dir() / "artifacts")


def tenant_artifacts_dir(tenant: str | None) -> Path:
    """A tenant's folder of the artifact store (`_shared` for jobs without a tenant label)."""
    name = (tenant or "").strip()
    if not name or name in (".", "..", HUB_DIR_NAME) or "/" in name or "\0" in name:
        name = "_shared"
    return _made(artifacts_dir() / name)


HUB_DIR_NAME = "hub.local"


def hub_dir() -> Path:
    """The local stand-in for the Hub's buckets and repos (volumes mount folders of it)."""
    return _made(artifacts_dir() / HUB_DIR_NAME)


def hub_repo_dir(kind: str, repo_id: str) -> Path:
    """Where a bucket / model / dataset / space `ns/name` lives (`kind` plural: "buckets", ...)."""
    return hub_dir() / kind / repo_id


def trackio_dir() -> Path:
    """The Trackio store shared by jobs and the console (jobs see it as $TRACKIO_DIR)."""
    return _made(paths.data_dir() / "trackio")


def token_path() -> Path:
    return server_dir() / "token"


def server_info_path() -> Path:
    """`{"url": ..., "pid": ...}` of the `console serve` running for this data folder."""
    return paths.data_dir() / "server.json"


def load_or_create_token() -> str:
    """The server's bearer token: $CONSOLE_SERVER_TOKEN, else the token file (created 0600 once).

    The file appears whole or not at all (written aside, then linked into place), so a start that
    fails half-way (a full disk) never leaves an empty token that would lock every client out; an
    empty one left by an older version is replaced."""
    env = os.environ.get(TOKEN_ENV)
    if env:
        return env.strip()
    path = token_path()
    try:
        text = path.read_text(encoding="utf-8").strip()
        if text:
            return text
    except FileNotFoundError:
        pass
    token = "console_" + secrets.token_urlsafe(32)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".token.")  # 0600
    try:
        try:
            os.write(fd, (token + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # only if no other server created one meanwhile
        except FileExistsError:
            existing = path.read_text(encoding="utf-8").strip()
            if existing:
                return existing
            os.replace(tmp, path)
        return token
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def read_token() -> str | None:
    """The token for a server on this data folder (None when there is none yet)."""
    env = os.environ.get(TOKEN_ENV)
    if env:
        return env.strip()
    try:
        return token_path().read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None
