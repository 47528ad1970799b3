"""server.json: where the shared local Jobs server listens, announced in the data dir.

Reads `console.paths` only: finding a running server imports nothing of the server (nor of the UI).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from console import paths


def write_server_info(url: str, *, daemon: bool = False, sandbox: str | None = None) -> Path:
    """Announce a server of this process in ``<data dir>/server.json`` (`daemon`: started in the
    background by a console, rather than by `console serve` in a terminal)."""
    from console.config import atomic_write_bytes

    path = paths.server_info_path()
    info = {"url": url, "pid": os.getpid(), "daemon": daemon, "started": time.time(), "sandbox": sandbox}
    payload = json.dumps(info).encode()
    atomic_write_bytes(path, payload, mode=0o600)
    return path


def forget_server_info(url: str) -> None:
    """Remove server.json if it still announces `url` from this process."""
    path = paths.server_info_path()
    info = read_server_info()
    if info and info.get("url") == url and info.get("pid") == os.getpid():
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def read_server_info() -> dict[str, Any] | None:
    try:
        info = json.loads(paths.server_info_path().read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, OSError):
        return None
    return info if isinstance(info, dict) else None


def find_running_server(timeout: float = 2.0) -> tuple[str, str] | None:
    """(url, token) of the server announced in server.json, if its process lives and it answers."""
    import urllib.error
    import urllib.request

    import psutil

    info = read_server_info()
    if not info:
        return None
    url, pid = info.get("url"), info.get("pid")
    if not isinstance(url, str) or not isinstance(pid, int) or not psutil.pid_exists(pid):
        return None
    token = paths.read_server_token()
    if token is None:
        return None
    request = urllib.request.Request(
        f"{url}/api/whoami-v2", headers={"authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 (loopback)
            if resp.status != 200:
                return None
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return url, token


def announced_server_alive() -> bool:
    """Whether the server announced in server.json still runs, answering or not: its process lives
    and started before it announced itself (a process that took its pid later is not it). A server
    that runs but has not answered (a machine so loaded it waits seconds for the CPU) is waited
    for, never replaced: a second one would find it and exit."""
    import psutil

    info = read_server_info()
    if not info:
        return False
    pid, started = info.get("pid"), info.get("started")
    if not isinstance(pid, int) or not isinstance(started, (int, float)):
        return False
    try:
        return psutil.Process(pid).create_time() <= started + 1.0
    except (psutil.Error, ValueError):
        return False
