"""`console` with no subcommand: open the TUI against the configured backend.

The terminal closing (SIGHUP: the SSH link dropped, the tmux pane killed) or a SIGTERM ends the
app the way `q` does: workers stop, an in-process Jobs server stops its jobs (they end in ERROR,
"the server stopped while the job was running") and nothing is left running.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Callable
from typing import Any

HANGUP_SIGNALS = (signal.SIGHUP, signal.SIGTERM)


def run_tui(args: argparse.Namespace) -> int:
    from console.backend import BackendError, connect
    from console.commands._common import CommandError, load_config

    cfg = load_config(args)
    try:
        backend = connect(cfg)
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
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # the app is not running (yet, or any more)
            raise SystemExit(128 + signum) from None
        loop.call_soon_threadsafe(exit_app)

    return handler
