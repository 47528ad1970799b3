"""`console` with no subcommand: open the TUI against the configured backend.

On the local backend the jobs run in the data dir's Jobs server, a background daemon started on
first use (`console server status|stop|logs`), so quitting the console, a crash or a dropped SSH
link never touches them; `--read-only` never starts it (no server running: one line, exit 2).

The terminal closing (SIGHUP: the SSH link dropped, the tmux pane killed) or a SIGTERM ends the
app the way `q` does: workers stop and nothing is left running. A terminal that is gone cannot
take the last frames, and Textual's shutdown can block on writing them; so the signal also arms a
deadline: if the app has not exited within `SHUTDOWN_GRACE_SECONDS`, the process exits anyway
with 128 + the signal (129 for a hangup). A thread watching the terminal itself arms the same
deadline for a hangup even when the main thread is stuck where a signal handler cannot run, or
when no SIGHUP comes (hangups ignored, as under `nohup`, and the terminal gone before the app ran).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from console import exitlog

if TYPE_CHECKING:
    import argparse

CONNECT_WAIT_SECONDS = 60.0
"""The longest an action waits for the backend to connect before it fails."""
HANGUP_SIGNALS = (signal.SIGHUP, signal.SIGTERM)
SHUTDOWN_GRACE_SECONDS = 1.5
"""After a hangup or SIGTERM, the longest the app may take to close before the process exits."""


def run_tui(args: argparse.Namespace) -> int:
    from console.commands._common import CommandError, load_config

    cfg = load_config(args)
    backend = Connecting(cfg)
    if problem := backend.refusal():
        raise CommandError(problem)
    received: list[int] = []
    previous: dict[int, Any] = {}
    try:
        # The app paints the last picture from the local cache first; huggingface_hub and the
        # connection to the backend load in its first refresh, after that frame.
        from console.commands._common import command_clock
        from console.config import ConfigError
        from console.ui.app import ConsoleApp

        try:
            app = ConsoleApp(cfg, backend, clock=command_clock())
        except ConfigError as exc:  # a bad `[keys]` entry or theme: one line, no screen
            raise CommandError(str(exc)) from None
        for sig in HANGUP_SIGNALS:
            previous[sig] = signal.signal(sig, _exit_on_signal(app.exit, received))
        _watch_for_hangup()
        try:
            app.run()
        except OSError:
            if not received:  # a terminal that vanished cannot be restored: that is fine
                raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        backend.close()
    if backend.fatal and not received:
        raise CommandError(backend.fatal)
    if received:
        exitlog.give_reason(f"{signal.Signals(received[0]).name}: the app closed")
        return 128 + received[0]
    if app.return_code:  # an exception inside the app: Textual has shown its traceback
        error = getattr(app, "_exception", None)
        exitlog.give_reason(f"the app failed: {type(error).__name__}: {error}" if error else "the app failed")
        return app.return_code
    return 0


class Connecting:
    """The backend the TUI works against, connected in the app's first refresh (a worker thread).

    Until then it knows what the config says (kind, namespace); `api` waits for the connection.
    A backend that cannot be reached at all (the daemon did not start) sets `fatal`: the app
    exits and `console` prints it, as it did before it opened a screen.
    """

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        self.kind = cfg.backend
        self.namespace = cfg.namespace
        self.url = cfg.endpoint or ""
        self.fatal: str | None = None
        self._backend: Any = None
        self._done = threading.Event()
        self._lock = threading.Lock()

    def refusal(self) -> str | None:
        """Why the TUI cannot start at all, when that is known without connecting: read-only
        with no local server running (read-only never starts one)."""
        if not self.cfg.read_only or self.kind != "local" or self.cfg.endpoint:
            return None
        import json

        from console import paths

        try:
            info = json.loads(paths.server_info_path().read_text(encoding="utf-8"))
            pid = int(info["pid"])
            os.kill(pid, 0)
        except (OSError, ValueError, KeyError, TypeError):
            return ("no local Jobs server is running (`console` starts one; `console serve` runs one "
                    "in the foreground)")
        return None

    @property
    def connected(self) -> bool:
        return self._backend is not None

    def ensure_connected(self) -> Any:
        with self._lock:
            if self._backend is not None:
                return self._backend
            from huggingface_hub.utils import logging as hf_logging

            from console.backend import DAEMON, BackendError, connect

            # huggingface_hub warns on stderr about each retry; on a full-screen app those lines
            # would land in the middle of the screen. The status line and the log pane say it.
            hf_logging.set_verbosity_error()
            try:
                self._backend = connect(self.cfg, start=DAEMON)
            except BackendError as exc:
                self.fatal = str(exc)
                raise
            finally:
                self._done.set()
            self.url = self._backend.url
            self.kind = self._backend.kind
            return self._backend

    def __getattr__(self, name: str) -> Any:
        # api, artifacts_dir, trackio_dir, job_workdir...: the connected backend's (waits for it)
        if name.startswith("_"):
            raise AttributeError(name)
        self._done.wait(CONNECT_WAIT_SECONDS)
        if self._backend is None:
            raise AttributeError(f"{name}: the backend is not connected ({self.fatal or 'not yet'})")
        return getattr(self._backend, name)

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()


def _watch_for_hangup(fd: int = 0) -> None:
    """A thread that ends the process `SHUTDOWN_GRACE_SECONDS` (and a little) after the terminal
    hangs up, whatever the main thread is doing. A Python signal handler runs only when the main
    thread is back in the interpreter: one stuck in C (a SQLite wait, a blocking write) would
    never arm the deadline above. `poll` on the terminal reports the hangup itself."""
    import select

    if not _is_terminal(fd):
        return

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, 0)  # no events asked for: only a hangup, an error or a closed fd
        while True:
            try:
                if poller.poll():
                    break
            except InterruptedError:
                continue
        threading.Event().wait(SHUTDOWN_GRACE_SECONDS + 0.5)
        _exit_now(signal.SIGHUP, "the terminal hung up and the app had not closed")

    threading.Thread(target=watch, name="console-hangup", daemon=True).start()


def _is_terminal(fd: int) -> bool:
    """Whether `fd` is a terminal, one already hung up included (`os.isatty` says no to that one: a
    console whose terminal closed before it set its handlers, with hangups ignored as under `nohup`
    or missed, must still see the hangup)."""
    import errno
    import termios

    try:
        termios.tcgetattr(fd)
    except termios.error as exc:
        return bool(exc.args) and exc.args[0] == errno.EIO
    except (OSError, ValueError):
        return False
    return True


def _exit_on_signal(exit_app: Callable[[], None], received: list[int]) -> Any:
    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        if len(received) == 1:
            deadline = threading.Timer(SHUTDOWN_GRACE_SECONDS, _exit_now,
                                       args=(signum, "the app had not closed in time"))
            deadline.daemon = True
            deadline.start()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # the app is not running (yet, or any more)
            raise SystemExit(128 + signum) from None
        loop.call_soon_threadsafe(exit_app)

    return handler


def _exit_now(signum: int, why: str) -> None:
    """End the process with 128 + `signum` at once (no cleanup: what is stuck stays stuck)."""
    exitlog.record(128 + signum, f"{signal.Signals(signum).name}: {why}")
    os._exit(128 + signum)
