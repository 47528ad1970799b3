"""Why a `console` process ended, kept in a file when `CONSOLE_EXIT_LOG` names one.

A console on a terminal that is gone (an SSH link dropped, a tmux pane killed) cannot show the
traceback or the message it ends with. With `CONSOLE_EXIT_LOG=/path/file` set, each `console`
process appends one entry there as it exits: its pid, its exit status and why (a signal, a message,
or the traceback of the exception that ended it). Nothing is written when it is not set.

Imports only the standard library: it runs on the TUI's start path and on a process's last steps.
"""

from __future__ import annotations

import os
import time

ENV = "CONSOLE_EXIT_LOG"
_reason: list[str] = []


def give_reason(why: str) -> None:
    """Say why the run is about to return its status (a message, a signal), for `record`."""
    _reason[:] = [why]


def take_reason() -> str:
    """The reason given for the status being returned ("returned" if none), and forget it."""
    why = _reason[0] if _reason else "returned"
    _reason.clear()
    return why


def record(status: int, why: str) -> None:
    """Append `status` and `why` (one line or a traceback) to the exit log, if there is one."""
    path = os.environ.get(ENV)
    if not path:
        return
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    entry = f"{stamp} pid {os.getpid()} exit {status}: {why.rstrip()}\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, entry.encode("utf-8", "replace"))  # one write: entries never interleave
        finally:
            os.close(fd)
    except OSError:
        pass


def record_exception(status: int, exc: BaseException) -> None:
    """Append `status` and the traceback of `exc`."""
    if not os.environ.get(ENV):
        return
    import traceback

    record(status, "".join(traceback.format_exception(exc)))
