"""The data dir's Jobs server as a background daemon: started once, shared, outliving every console.

On HF Jobs a job runs on its own: quitting the client, losing the SSH link or closing the laptop
does not touch it. The embedded default behaves the same way: when a console that needs to act
finds no running server, :func:`ensure_daemon` starts `console serve` as a detached process (its
own session, no terminal, stdin closed, output appended to ``<data dir>/server/server.log``) and
waits until it announces itself in ``server.json`` and answers. A lock file makes two consoles
starting at once share one daemon; the server's own lock keeps one server per data dir. A server
announced in ``server.json`` whose process still runs is waited for when it is slow to answer (a
loaded machine), never replaced by a second one.

Imports the server's paths only: the server itself runs in the other process.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from console.backend.errors import BackendError
from console.backend.server_info import announced_server_alive, find_running_server, read_server_info

if TYPE_CHECKING:
    from console.config import Config

START_TIMEOUT = 45.0
"""Seconds a new daemon has to answer (a cold start imports the server and opens its database)."""
LOG_ROTATE_BYTES = 5 * 1024 * 1024
"""At each start the daemon's log is moved to server.log.1 once it is larger than this."""


def log_path() -> Path:
    from console.server import paths

    return paths.server_dir() / "server.log"


def ensure_daemon(cfg: Config, *, timeout: float = START_TIMEOUT) -> tuple[str, str]:
    """(url, token) of the data dir's running server, starting the daemon first if none runs."""
    running = find_running_server()
    if running is not None:
        return running
    deadline = time.monotonic() + timeout
    while announced_server_alive():  # it runs but has not answered yet: wait, start no other
        running = find_running_server()
        if running is not None:
            return running
        if time.monotonic() >= deadline:
            raise BackendError(f"the local Jobs server (pid {_announced_pid()}) did not answer within "
                               f"{timeout:.0f} s (see {log_path()})")
        time.sleep(0.05)
    with _spawn_lock(timeout):
        running = find_running_server()  # another console started it while we waited
        if running is not None:
            return running
        process = _spawn(cfg)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = find_running_server()
            if running is not None:
                return running
            if process.poll() is not None:
                raise BackendError(f"the local Jobs server did not start: {_last_line(log_path())}")
            time.sleep(0.05)
    raise BackendError(f"the local Jobs server did not answer within {timeout:.0f} s (see {log_path()})")


def _spawn(cfg: Config) -> subprocess.Popen[bytes]:
    log = log_path()
    try:
        if log.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(log, log.with_name(log.name + ".1"))
    except FileNotFoundError:
        pass
    argv = [sys.executable, "-m", "console", "serve", "--daemon"]
    if cfg.path is not None:
        argv += ["--config", str(cfg.path)]
    from console import paths

    with open(log, "ab") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=paths.data_dir(),
            start_new_session=True,  # no terminal: a hangup of the console's session never reaches it
            close_fds=True,
        )


@contextmanager
def _spawn_lock(timeout: float) -> Iterator[None]:
    from console.server import paths

    fd = os.open(paths.server_dir() / "spawn.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise BackendError("another console is starting the local Jobs server; try again") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _announced_pid() -> object:
    return (read_server_info() or {}).get("pid")


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return lines[-1].strip() if lines else f"no output (see {path})"
