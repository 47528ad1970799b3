"""What every subcommand shares: the one-line error they raise and how they load the config.

It sits below both `console.cli` (the entry point) and the subcommand modules, so neither has to
import the other for it. Standard library only at import time; `console.config` is read when a
command runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from console.config import Config

NOW_ENV = "CONSOLE_NOW"
"""An ISO-8601 time a command (and the TUI) takes as "now" instead of the wall clock: every
projection of money reads the one clock it was given, so a report can be reproduced."""


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


def command_now() -> datetime:
    """The one clock of a command: `$CONSOLE_NOW` (ISO-8601; UTC when it names no zone) when set,
    else the wall clock (UTC). Raises CommandError for a time that does not parse."""
    text = os.environ.get(NOW_ENV, "").strip()
    if not text:
        return datetime.now(UTC)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CommandError(f"{NOW_ENV} must be an ISO-8601 time like 2026-12-07T12:00:00Z, got {text[:40]!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def command_clock() -> Callable[[], datetime] | None:
    """The clock an app or watcher is given: `$CONSOLE_NOW` held still when set, else None (the
    wall clock, their default)."""
    if not os.environ.get(NOW_ENV, "").strip():
        return None
    now = command_now()
    return lambda: now
