"""The system `ssh` client into a job: the one argv every ssh of the console runs.

- **Identity.** On the local Jobs server, the key that server made for this machine's user
  (:func:`console.paths.server_ssh_key_path`) goes with ``-i`` and ``IdentitiesOnly=yes``: ssh offers
  that key only, so an agent holding many keys never ends in "Too many authentication failures".
  On the Hub the console knows no key: ssh picks the user's own, as ``hf jobs ssh`` does.
- **Host keys** are kept in ``<data>/ssh/known_hosts``, never in ``~/.ssh``. The local server's key
  is trusted on first use (``StrictHostKeyChecking=accept-new``) under one name, whatever port the
  server listens on this time (``HostKeyAlias``). On the Hub the user's ``~/.ssh/known_hosts`` is
  read too, and a new host key is asked about and written to the data folder's file.
- **ssh's own messages** (``Permission denied (publickey).``, a changed host key) go to a log file
  (``-E``) while the job's shell keeps the terminal: :func:`last_lines` reads them back, so the
  console can say why ssh failed.
"""

from __future__ import annotations

from pathlib import Path

from console import paths

LOCAL_HOST_ALIAS = "console-local-jobs-server"
"""The name the local server's host key is kept under in the data folder's known_hosts."""


def ssh_dir() -> Path:
    """The console's own ssh files: ``<data>/ssh`` (known_hosts, ssh's log while it runs)."""
    folder = paths.data_dir() / "ssh"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def known_hosts_path() -> Path:
    return ssh_dir() / "known_hosts"


def _option_path(path: Path) -> str:
    text = str(path)
    return f'"{text}"' if any(c.isspace() for c in text) else text


def ssh_argv(ssh: str, url: str, *, local: bool, log_file: Path | None = None) -> list[str]:
    """`ssh` (the client's path) into `url` (a job's ``status.sshUrl``), run on the terminal.

    `local`: the url is the local Jobs server's (its key, its host key under one alias).
    `log_file`: where ssh appends its own messages instead of the terminal (``-E``)."""
    argv = [ssh]
    if log_file is not None:
        argv += ["-E", str(log_file)]
    known = _option_path(known_hosts_path())
    if local:
        key = paths.server_ssh_key_path()
        if key.is_file():
            argv += ["-i", str(key), "-o", "IdentitiesOnly=yes"]
        argv += [
            "-o", f"UserKnownHostsFile={known}",
            "-o", "StrictHostKeyChecking=accept-new",
            "-o", f"HostKeyAlias={LOCAL_HOST_ALIAS}",
        ]
    else:
        argv += ["-o", f"UserKnownHostsFile={known} ~/.ssh/known_hosts"]
    return [*argv, url]


def last_lines(log_file: Path, count: int = 3) -> list[str]:
    """ssh's last `count` non-empty lines in `log_file` (raw text: display it as plain text)."""
    try:
        text = log_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()][-count:]
