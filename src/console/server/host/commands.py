"""Turn a job's command into what runs on this host.

No container engine runs here: the command runs as is, on the host, with the job's environment.
The one rewrite is `uv run [uv flags] SCRIPT args...` when the server is configured to use its own
Python environment (`server.python = "self"`, the default, because a real `uv run` of a training
script would download a CUDA torch): it becomes `<server python> SCRIPT args...`, so a PEP 723
script runs unchanged on the packages already installed. `server.python = "uv"` runs real uv;
`"auto"` does so when `uv` is on PATH.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

# `uv run` options that take a value (the next argument, or `--opt=value`).
_UV_VALUE_OPTIONS = {
    "--with", "-w", "--with-requirements", "--with-editable", "--python", "-p", "--index",
    "--default-index", "--index-url", "-i", "--extra-index-url", "--find-links", "-f",
    "--env-file", "--project", "--directory", "--group", "--extra", "--package",
    "--cache-dir", "--config-file", "--index-strategy", "--resolution", "--prerelease",
    "--exclude-newer", "--link-mode", "--python-preference", "--color", "--only-group",
    "--no-group", "--refresh-package", "--reinstall-package", "--upgrade-package", "-P",
    "--keyring-provider", "--allow-insecure-host", "--python-platform",
}
_PYTHON_NAMES = {"python", "python3", f"python3.{sys.version_info.minor}"}


@dataclass(frozen=True)
class Plan:
    """What to execute for a job, and a note on how the command was interpreted."""

    argv: list[str]
    note: str | None = None
    download: str | None = None
    """A script URL to fetch into the working folder first (its local name is argv[1])."""


def find_uv() -> str | None:
    """The uv a job would run: the server's environment's own first (it leads a job's PATH)."""
    local = Path(sys.executable).parent / "uv"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which("uv")


def resolve_python_mode(mode: str) -> str:
    """"self" or "uv" for a configured mode ("auto" picks uv when it is installed)."""
    if mode == "auto":
        return "uv" if find_uv() else "self"
    return mode


def split_uv_run(argv: list[str]) -> tuple[list[str], list[str]] | None:
    """For `uv run ...`: (uv flags, [SCRIPT, *args]); None for any other command."""
    if len(argv) < 2 or Path(argv[0]).name != "uv" or argv[1] != "run":
        return None
    flags: list[str] = []
    i = 2
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-"):
            break
        flags.append(arg)
        if "=" not in arg and arg in _UV_VALUE_OPTIONS and i + 1 < len(argv):
            flags.append(argv[i + 1])
            i += 2
        else:
            i += 1
    return flags, argv[i:]


def plan_command(argv: list[str], python_mode: str) -> Plan:
    """The argv to execute for a job's `command + arguments` under the server's python mode."""
    mode = resolve_python_mode(python_mode)
    uv = split_uv_run(argv)
    if uv is None:
        return Plan(list(argv))
    flags, rest = uv
    if mode == "uv":
        if find_uv() is None:
            return Plan(list(argv), note="uv is not installed on this machine")
        return Plan(list(argv))
    if not rest:
        return Plan([sys.executable], note="`uv run` without a script")
    script, args = rest[0], rest[1:]
    ignored = " ".join(flags)
    note = f"ran with the server's Python; uv flags ignored: {ignored}" if flags else None
    if script.startswith(("https://", "http://")):
        name = script.split("?", 1)[0].split("#", 1)[0].rstrip("/").split("/")[-1] or "script.py"
        return Plan([sys.executable, name, *args], note=note, download=script)
    if script in _PYTHON_NAMES or script.endswith(".py") or "/" in script:
        if script in _PYTHON_NAMES:
            return Plan([sys.executable, *args], note=note)
        return Plan([sys.executable, script, *args], note=note)
    # `uv run TOOL args`: a console script of the server's environment, else whatever is on PATH.
    local = Path(sys.executable).parent / script
    return Plan([str(local) if local.exists() else script, *args], note=note)
