"""Where the console keeps its files: config, data (ledger, embedded server), shipped resources.

`CONSOLE_CONFIG` overrides the config file path and `CONSOLE_DATA_DIR` the data folder (tests and
several isolated setups on one machine use them); otherwise platformdirs decides.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "console"


def default_config_path() -> Path:
    env = os.environ.get("CONSOLE_CONFIG")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def data_dir(create: bool = True) -> Path:
    """The user data folder (mode 0700: ledger, server database, logs and token live here)."""
    env = os.environ.get("CONSOLE_DATA_DIR")
    path = Path(env).expanduser() if env else Path(platformdirs.user_data_dir(APP_NAME))
    if create:
        path.mkdir(parents=True, exist_ok=True)
        try:
            path.chmod(0o700)
        except OSError:
            pass
    return path


SERVER_TOKEN_ENV = "CONSOLE_SERVER_TOKEN"
"""The local Jobs server's bearer token, when set (else the token file below)."""


def server_info_path() -> Path:
    """Where a running local Jobs server announces itself (``{"url", "pid", ...}``).

    The client's half of `console.server.paths`: a console connecting to a running server finds
    it here without importing the server."""
    return data_dir() / "server.json"


def server_token_path() -> Path:
    """The local Jobs server's token file (the server creates it, mode 0600)."""
    return data_dir() / "server" / "token"


def server_ssh_key_path() -> Path:
    """The private key the local Jobs server makes for this machine's user and accepts for ssh into
    its jobs (mode 0600, with its ``.pub``); the console's ssh passes it with ``-i``."""
    return data_dir() / "server" / "ssh" / "client_key"


def read_server_token() -> str | None:
    """The token for the local Jobs server of this data folder (None when there is none yet)."""
    env = os.environ.get(SERVER_TOKEN_ENV)
    if env:
        return env.strip()
    try:
        return server_token_path().read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None


def _package_root() -> Path:
    return Path(__file__).resolve().parent  # importlib.resources would load its zip reader


def resource_path(name: str) -> Path:
    """A file shipped with the package (`screens.tcss`, `training/...`).

    In a wheel they sit inside the package; in an editable checkout at the repository root.
    """
    inside = _package_root() / name
    if inside.exists():
        return inside
    repo_root = Path(__file__).resolve().parents[2]
    return repo_root / name


def training_dir() -> Path:
    return resource_path("training")


def stylesheet_path() -> Path:
    return resource_path("screens.tcss")
