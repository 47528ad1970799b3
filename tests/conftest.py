"""Every test runs away from the user's real config and data: both point into a fresh tmp folder,
and a Jobs server daemon a test started in that folder is stopped when the test ends.

Long-running checks (a job killed at a one-minute timeout, seconds of a log flood on a slow
terminal) run at a small size by default and at full size with ``CONSOLE_SOAK=full``: see
:func:`soak`."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

SOAK_FULL = os.environ.get("CONSOLE_SOAK", "").strip().lower() == "full"
"""``CONSOLE_SOAK=full``: the long-running checks at their full size."""


def soak(small, full):
    """`full` under ``CONSOLE_SOAK=full``, else `small`: the size of a long-running check."""
    return full if SOAK_FULL else small


def isolate(home, monkeypatch) -> None:
    """Point the console's config and data, and the Hub client's cache, into `home`."""
    monkeypatch.setenv("CONSOLE_CONFIG", str(home / "config" / "config.toml"))
    monkeypatch.setenv("CONSOLE_DATA_DIR", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("HF_HOME", str(home / ".cache" / "huggingface"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("CONSOLE_SERVER_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    isolate(home, monkeypatch)
    yield home
    _stop_daemon(home / "data" / "server.json")


def module_isolated_dirs(tmp_path_factory):
    """The isolation above for a whole module, for a module whose tests share one server (a
    module-scoped fixture starts before the per-test isolation would apply). A module opts in by
    overriding the fixture::

        @pytest.fixture(scope="module", autouse=True)
        def _isolated_dirs(tmp_path_factory):
            yield from module_isolated_dirs(tmp_path_factory)
    """
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        isolate(home, mp)
        yield home
    _stop_daemon(home / "data" / "server.json")


@pytest.fixture(autouse=True)
def _notifications_kept(monkeypatch):
    """A toast stays on screen until the test ends (on a loaded machine the seconds between an
    action and the test's look at the screen can outlast a toast's 3-8 s there), and each one the
    app raises is kept, in order, in its ``notifications_shown`` (read by ``tests.ui.conftest.shown``):
    what `App.notify` was asked to show, through Textual's public API."""
    from textual.app import App
    from textual.notifications import Notification

    monkeypatch.setattr(Notification, "time_left", property(lambda self: 24 * 3600.0))
    notify = App.notify

    def kept(self, message, *, title="", severity="information", timeout=None, markup=True):
        vars(self).setdefault("notifications_shown", []).append(
            Notification(str(message), str(title), severity, markup=markup))
        return notify(self, message, title=title, severity=severity, timeout=timeout, markup=markup)

    monkeypatch.setattr(App, "notify", kept)


def _stop_daemon(info_path) -> None:
    """SIGTERM the background server this test's data dir announces (never this process)."""
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError):
        return
    pid = info.get("pid") if isinstance(info, dict) else None
    if not isinstance(pid, int) or pid == os.getpid() or not info.get("daemon"):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child, now reaped
            return False
    except ChildProcessError:
        pass
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
