"""`console` with no subcommand: open the TUI against the configured backend.

On the local backend the jobs run in the data dir's Jobs server, a background daemon started on
first use (`console server status|stop|logs`), so quitting the console, a crash or a dropped SSH
link never touches them; `--read-only` never starts it (no server running: one line, exit 2).

The terminal closing (SIGHUP: the SSH link dropped, the tmux pane killed) or a SIGTERM ends the
app the way `q` does: workers stop and nothing is left running. A terminal that is gone cannot
take the last frames, and Textual's shutdown can block on writing them; so the signal also arms a
deadline: if the app has not exited within `SHUTDOWN_GRACE_SECONDS`, the process exits anyway
with 128 + the signal (129 for a hangup).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

HANGUP_SIGNALS = (signal.SIGHUP, signal.SIGTERM)
SHUTDOWN_GRACE_SECONDS = 1.5
"""After a hangup or SIGTERM, the longest the app may take to close before the process exits."""


def run_tui(args: argparse.Namespace) -> int:
    from console.backend import DAEMON, BackendError, connect
    from console.commands._common import CommandError, load_config

    cfg = load_config(args)
    try:
        backend = connect(cfg, start=DAEMON)
    except BackendError as exc:
        raise CommandError(str(exc)) from None
    received: list[int] = []
    previous: dict[int, Any] = {}
    try:
        from huggingface_hub.utils import logging as hf_logging

        from console.jobs import Prefetch

        # huggingface_hub warns on stderr about each retry; on a full-screen app those lines
        # would land in the middle of the screen. The status line and the log pane say it.
        hf_logging.set_verbosity_error()
        # the first page of jobs is read while the screens load
        first = Prefetch(backend.api, getattr(backend, "namespace", None) or cfg.namespace)
        from console.ui.app import ConsoleApp

        app = ConsoleApp(cfg, backend, first_frame=first)
        for sig in HANGUP_SIGNALS:
            previous[sig] = signal.signal(sig, _exit_on_signal(app.exit, received))
        try:
            app.run()
        except OSError:
            if not received:  # a terminal that vanished cannot be restored: that is fine
                raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        backend.close()
    return 128 + received[0] if received else 0


def _exit_on_signal(exit_app: Callable[[], None], received: list[int]) -> Any:
    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        if len(received) == 1:
            deadline = threading.Timer(SHUTDOWN_GRACE_SECONDS, os._exit, args=(128 + signum,))
            deadline.daemon = True
            deadline.start()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # the app is not running (yet, or any more)
            raise SystemExit(128 + signum) from None
        loop.call_soon_threadsafe(exit_app)

    return handler
