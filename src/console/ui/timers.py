"""Every timer the console arms has a finite delay of at least `MIN_DELAY` seconds.

Textual's timer loop (`textual.timer.Timer._run`) never awaits when its interval is negative: it
recomputes how many ticks it missed, finds a negative count, and goes round again, for ever, on
the UI thread. Every key, `q` and ctrl+c included, is then ignored. A zero interval divides by
zero in the same loop, a NaN one ticks without pause, and one below Textual's half-millisecond
sleep floor repeats without yielding.

Such a delay comes from time arithmetic: a toast is built with the time its notification has
left (`Notification.time_left`), read after the toast rack checked it had not expired; when the
UI thread stalls between the two (a worker holding the interpreter, a busy machine) and a screen
opens just then, the toast is built with a negative time left and arms a negative timer. The
console's own delays are computed too (the refresh timer, the costs pane's pacing).

So the one place every timer is made, `Timer.__init__`, gets the delay through `safe_delay`:
negative, zero and NaN delays become `MIN_DELAY` (a toast whose time is up goes at once), an
infinite one `MAX_DELAY`. `guard()` installs it (once per process; `ConsoleBase` calls it), and
covers the app's `set_timer` / `set_interval`, every widget's, and Textual's own (toasts,
blinking cursors). `tests/core/test_pinned_overrides.py` pins the `Timer` it relies on.
"""

from __future__ import annotations

import functools
import math
from typing import Any

MIN_DELAY = 0.01
"""The shortest delay a timer is armed with, in seconds (above Textual's 0.5 ms sleep floor, so
an interval timer always yields to the UI between ticks)."""
MAX_DELAY = 365 * 24 * 3600.0
"""The longest: an infinite delay (a timer meant never to fire) becomes a year."""


def safe_delay(delay: Any) -> float:
    """`delay` as a timer may be armed with: a finite float in [MIN_DELAY, MAX_DELAY]; anything
    that is no number, NaN, negative or below MIN_DELAY gives MIN_DELAY, +inf gives MAX_DELAY."""
    try:
        value = float(delay)
    except (TypeError, ValueError):
        return MIN_DELAY
    if math.isnan(value) or value < MIN_DELAY:
        return MIN_DELAY
    return min(value, MAX_DELAY)


_GUARD = "_console_safe_delay"


def guard() -> None:
    """Make every `textual.timer.Timer` arm with `safe_delay(interval)` (idempotent)."""
    from textual.timer import Timer

    original = Timer.__init__
    if getattr(original, _GUARD, False):
        return

    @functools.wraps(original)
    def __init__(self: Timer, event_target: Any, interval: float, *args: Any, **kwargs: Any) -> None:
        original(self, event_target, safe_delay(interval), *args, **kwargs)

    setattr(__init__, _GUARD, True)
    Timer.__init__ = __init__  # type: ignore[method-assign]


def guarded() -> bool:
    """Whether `guard()` is in place."""
    from textual.timer import Timer

    return bool(getattr(Timer.__init__, _GUARD, False))
