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
        from console.ui.app import ConsoleApp

        ConsoleApp(cfg, backend).run()
    finally:
        backend.close()
    return 0
