"""What every subcommand shares: the one-line error they raise and how they load the config.

It sits below both `console.cli` (the entry point) and the subcommand modules, so neither has to
import the other for it. Standard library only at import time; `console.config` is read when a
command runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from console.config import Config


class CommandError(Exception):
    """A clear, one-line failure: printed as `console: <message>` with exit code 2 (or `code`)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def load_config(args: argparse.Namespace) -> Config:
    """The config named by `--config` (or the default one), with `--read-only` applied."""
    from console.config import ConfigError, load

    try:
        cfg = load(getattr(args, "config", None))
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    if getattr(args, "read_only", False):
        cfg.read_only = True
    return cfg
