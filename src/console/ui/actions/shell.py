"""`x`: a shell in the selected running job.

A job started with ssh on has an `ssh_url`: for an `ssh://` url the system `ssh` client gets the
terminal, with the argv of `console.sshclient` (the local server's key, known_hosts in the data
folder); when it fails, its last lines (kept out of the terminal with `-E`) are the toast. Where the
embedded server's ssh could not start, the url is the job's working folder (`file://...`) and a
local shell opens there with the job's own environment. The app is suspended while the shell runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import SuspendNotSupported

from console import sshclient
from console.jobs import JobRow
from console.stages import RUNNING
from console.ui.actions import refuse_if_read_only
from console.ui.base import ConsoleBase

SSH_SHELL_ENV = "CONSOLE_SSH_SHELL"
"""The shell a local job's `x` opens (default: $SHELL, then /bin/sh)."""


def open_shell(app: ConsoleBase) -> None:
    if refuse_if_read_only(app, "ssh"):
        return
    job = app.selected_job()
    if job is None:
        app.notify("No job selected", severity="warning")
        return
    if job.stage != RUNNING:
        app.notify(f"Job {job.id} is {job.stage}: a shell needs a running job", severity="warning")
        return
    url = job.ssh_url
    if not url:
        app.notify(
            f"Job {job.id} was started without ssh (submit with ssh on to get a shell)", severity="warning"
        )
        return
    if url.startswith("file://"):
        _local_shell(app, job, Path(url.removeprefix("file://")))
        return
    ssh = shutil.which("ssh")
    if ssh is None:
        app.notify("No `ssh` program on this machine: install OpenSSH to open a shell", severity="error")
        return
    fd, name = tempfile.mkstemp(dir=sshclient.ssh_dir(), prefix="ssh-", suffix=".log")
    os.close(fd)
    log = Path(name)
    try:
        argv = sshclient.ssh_argv(ssh, url, local=app.backend_kind == "local", log_file=log)
        _hand_terminal(app, argv, None, None, f"ssh {url}", why=lambda: sshclient.last_lines(log))
    finally:
        log.unlink(missing_ok=True)


def _local_shell(app: ConsoleBase, job: JobRow, folder: Path) -> None:
    if not folder.is_dir():
        app.notify(f"Job {job.id}'s working folder is gone ({folder})", severity="error")
        return
    shell = os.environ.get(SSH_SHELL_ENV) or os.environ.get("SHELL") or "/bin/sh"
    env = _job_environment(folder, app.refresher.job_info(job.id), job.id)
    _hand_terminal(app, [shell], folder, env, f"shell in {folder}")


def _hand_terminal(
    app: ConsoleBase, argv: list[str], cwd: Path | None, env: dict[str, str] | None, what: str,
    why: Callable[[], list[str]] | None = None,
) -> None:
    """Run `argv` on the terminal; then say how it ended (with `why()`'s lines when it failed)."""
    try:
        with app.suspend():
            code = subprocess.call(argv, cwd=cwd, env=env)
    except SuspendNotSupported:
        # No terminal to hand over (headless, tests): run it detached from the screen.
        code = subprocess.call(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL)
    except OSError as exc:
        app.notify(f"Could not start {argv[0]}: {exc}", severity="error")
        return
    lines = why() if code and why is not None else []
    if code == 255 and lines:  # ssh's own failure (a remote shell's status is any other code)
        app.notify(f"{what} failed (exit 255): " + "; ".join(lines), severity="error", timeout=15)
    elif lines:
        app.notify(f"Back from {what} (exit {code}): " + "; ".join(lines), timeout=8)
    else:
        app.notify(f"Back from {what} (exit {code})", timeout=4)
    app.refresher.refresh()


def _job_environment(folder: Path, info: Any, job_id: str) -> dict[str, str]:
    """The running job's own environment (read from its process), else ours plus its env."""
    try:
        import psutil

        for proc in psutil.process_iter(["cwd"]):
            try:
                if proc.info.get("cwd") and Path(proc.info["cwd"]) == folder:
                    env = proc.environ()
                    if env.get("JOB_ID") == job_id or "JOB_ID" not in env:
                        return dict(env)
            except (psutil.Error, OSError):
                continue
    except ImportError:
        pass
    env = dict(os.environ)
    env.update({k: str(v) for k, v in ((info.environment if info else None) or {}).items()})
    env["JOB_ID"] = job_id
    return env
