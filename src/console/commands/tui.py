"""`console` with no subcommand: open the TUI against the configured backend."""

from __future__ import annotations

import argparse


def run_tui(args: argparse.Namespace) -> int:
    from console.backend import BackendError, connect
    from console.cli import CommandError, load_config

    cfg = load_config(args)
    try:
        backend = connect(cfg)
    except BackendError as exc:
        raise CommandError(str(exc)) from None
    try:
        from huggingface_hub.utils import logging as hf_logging

        from console.ui.app import ConsoleApp

        # huggingface_hub warns on stderr about each retry; on a full-screen app those lines
        # would land in the middle of the screen. The status line and the log pane say it.
        hf_logging.set_verbosity_error()
        ConsoleApp(cfg, backend).run()
    finally:
        backend.close()
    return 0
