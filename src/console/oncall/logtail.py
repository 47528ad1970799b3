"""A running job's log tail, read without waiting out the log stream's own timeout.

Standard library only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

QUIET_S = 0.5
"""A running job's log tail is read until no line came for this long (see `read_quietly`)."""


def read_quietly(open_stream: Callable[[], Iterable[T]], limit: int, *,
                 quiet_s: float = QUIET_S, max_s: float = 8.0) -> list[T]:
    """The lines a log stream replays, without waiting out its timeout.

    Asked for a running job's log without following, `HfApi.fetch_job_logs` replays the tail at
    once and then waits for new lines until its own read timeout (5 s). This reads it in a
    daemon thread and returns once no line came for `quiet_s` (or after `max_s`); the thread ends
    with the stream's timeout. A cut-short read only makes the tail look new (activity), never
    stalled. Raises what opening or reading the stream raised before any line came.
    """
    lines: list[T] = []
    failure: list[BaseException] = []
    done = threading.Event()
    lock = threading.Lock()
    last = [time.monotonic()]

    def pump() -> None:
        try:
            for line in open_stream():
                with lock:
                    lines.append(line)
                    last[0] = time.monotonic()
                    if len(lines) >= limit:
                        break
        except BaseException as exc:  # handed to the caller
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=pump, name="oncall-log-tail", daemon=True).start()
    start = time.monotonic()
    deadline = start + max_s
    while not done.wait(0.05):
        now = time.monotonic()
        with lock:
            # an empty log replays nothing: give the first line a little longer than the rest
            quiet = now - last[0] >= (quiet_s if lines else 4 * quiet_s)
        if quiet or now >= deadline:
            break
    with lock:
        if failure and not lines:
            raise failure[0]
        return list(lines[-limit:])
