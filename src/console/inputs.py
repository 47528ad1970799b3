"""Checked inputs of the cost model: the error it raises, the ranges beyond which a number is a
typo rather than a plan, and HF Jobs timeouts and durations as people write them (7200, 90m, 2h);
and the one rule for a tenant id or an env (a label value HF accepts); and the one way a file a
person names (a config, a fleet file, a model's config.json) is read: bounded, regular files only.

Imports nothing of the console: the cost model, the cron counts and every form read these.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

from console import labels
from console.prices import HF_MAX_TIMEOUT_SECONDS

# Limits on what-if and submission inputs: beyond them a number is a typo, not a plan.
LIMITS = {
    "model_b": (0.001, 2000.0),
    "examples": (1, 100_000_000),
    "epochs": (0.01, 1000.0),
    "tenants": (0, 1_000_000),
    "seats": (1, 100_000),
    "--tail": (1, 10_000_000),
}
LABEL_VALUE_RE = labels.NAME_RE
"""A tenant id or an env the console accepts: what HF accepts in a label value (letters, digits,
'-', '_'; huggingface_hub 2.4: "only alphanumeric characters, dashes, and underscores", no '.'),
short enough that the run names built from it stay labels too."""
NAME_RULE = (f"must be letters, digits, '-' and '_' (at most {labels.NAME_MAX}; HF refuses '.' and any other "
             "character in a label)")


def is_label_name(text: object) -> bool:
    """Whether `text` can be a tenant id or an env: a label value HF accepts, as it is."""
    return labels.is_name(text)


_BUCKET_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}"
"""The patterns of this module are compiled (and kept by `re`) when first used, not as it loads."""


def bucket_id_problem(text: object) -> str | None:
    """Why `text` is not a bucket id (`namespace/name`), or None."""
    if not isinstance(text, str) or not re.fullmatch(_BUCKET_ID, text) or ".." in text or "--" in text:
        return f"{text!r} is not a bucket id like org/datasets-cache"
    return None


MAX_TIMEOUT_SECONDS = HF_MAX_TIMEOUT_SECONDS  # a week; longer is certainly a mistake for a training job


class CostInputError(ValueError):
    """An input the cost model refuses; the message says which and what is expected."""


def parse_count(name: str, text: str) -> int:
    """A whole number typed for `name` (a flag's text), in its LIMITS range. A sign is part of
    what was typed: "-0" is refused as "-1" is, not read as 0."""
    lo, hi = LIMITS[name]
    typed = text.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", typed):
        raise CostInputError(f"{name} must be a whole number from {lo:g} to {hi:g}, got {show_number(text)}")
    if typed.startswith("-"):
        raise CostInputError(f"{name} must be from {lo:g} to {hi:g}, got {typed if len(typed) <= 40 else 'a negative'}")
    return int(check_range(name, int(typed)))


KIB = 1024
MIB = 1024 * KIB


class UnreadableFile(OSError):
    """A file a person named that is not read: not a regular file, or larger than its use allows.
    An OSError with `strerror` saying why, so every caller's "cannot read PATH: ..." says it."""


def read_user_file(path: str | Path, *, max_bytes: int) -> bytes:
    """The bytes of a file a person named (a config, a fleet file, a model's config.json).

    Only a regular file of at most `max_bytes` is read: a device (/dev/zero), a FIFO (a read that
    would wait forever), a socket or a folder raises :class:`UnreadableFile` at once, and so does
    a file larger than the cap (checked before reading, and while reading, for one that grows).
    A missing or forbidden file raises the OSError `open` raises (FileNotFoundError...).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(Path(path), flags)  # O_NONBLOCK: opening a FIFO with no writer returns at once
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(errno.EINVAL, f"not a regular file ({_file_kind(info.st_mode)}), not read", str(path))
        if info.st_size > max_bytes:
            raise UnreadableFile(errno.EFBIG, f"{_size(info.st_size)}, more than the {_size(max_bytes)} allowed",
                                 str(path))
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 * MIB, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise UnreadableFile(errno.EFBIG, f"more than the {_size(max_bytes)} allowed", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def _size(n: int) -> str:
    if n >= MIB:
        return f"{n / MIB:.3g} MiB"
    if n >= KIB:
        return f"{n / KIB:.3g} KiB"
    return f"{n} bytes"


def show_number(value: object) -> str:
    """A value for a message; a huge integer (a TOML file may hold any) is not spelled out."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
        return f"a {int(value.bit_length() * 0.30103) + 1}-digit number"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def finite_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)  # any int: compared exactly below


def check_range(name: str, value: float) -> float:
    lo, hi = LIMITS[name]
    if not finite_number(value):
        raise CostInputError(
            f"{name} must be a number from {lo:g} to {hi:g}, got {show_number(value)}"
        )
    if not lo <= value <= hi:
        raise CostInputError(f"{name} must be from {lo:g} to {hi:g}, got {show_number(value)}")
    return value


_TIMEOUT_RE = r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*([smhd]?)\s*$"
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_timeout(value: int | float | str) -> int:
    """Seconds from an HF Jobs timeout: 7200, "90m", "2h", "1.5h", "30s", "1d".

    Refuses zero, negatives, non-numbers and anything over a week, with a message saying why.
    """
    if isinstance(value, bool):
        raise CostInputError(f"timeout must be seconds or a duration like 90m / 2h, got {value!r}")
    if isinstance(value, int):
        if not 0 < value <= MAX_TIMEOUT_SECONDS:  # exact for any int, however large
            raise CostInputError(
                f"timeout must be from 1 second to 7 days, got {show_number(value)}"
            )
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CostInputError(f"timeout must be a finite duration, got {value!r}")
        seconds = value
    elif isinstance(value, str):
        m = re.match(_TIMEOUT_RE, value, re.IGNORECASE)
        if not m:
            raise CostInputError(
                f"timeout {value!r} is not a duration: use seconds (7200) or a number with "
                "s, m, h or d (90m, 2h, 1.5h)"
            )
        seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2).lower()]
    else:
        raise CostInputError(
            f"timeout must be seconds or a duration like 90m / 2h, got {show_number(value)}"
        )
    if seconds <= 0:
        raise CostInputError(f"timeout must be longer than zero, got {show_number(value)}")
    if seconds > MAX_TIMEOUT_SECONDS:
        raise CostInputError(f"timeout {show_number(value)} is over the 7-day limit")
    return max(1, math.ceil(seconds))


def format_coarse(seconds: float | None) -> str:
    """A duration in at most four characters, its largest unit only: 45s, 12m, 3h, 2d (hours up
    to two days) — for a table cell that must not grow."""
    s = max(0, int(seconds or 0))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400 * 2:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def format_duration(seconds: float) -> str:
    """1h25m, 45m, 30s, 2d3h: short and exact to the minute (seconds under 10 minutes). The one
    way the console writes a duration in words (:func:`format_coarse` for a four-character cell)."""
    seconds = max(0, int(round(seconds)))
    days, rem = divmod(seconds, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes:02d}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs:02d}s" if secs and minutes < 10 else f"{minutes}m"
    return f"{secs}s"




_AGO = r"^(\d+(?:\.\d+)?)\s*([smhd])$"
_AGO_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: datetime, field: str = "--since") -> datetime:
    """`--since` as people write it: a time ago (`90s`, `30m`, `2h`, `1d`), an ISO time
    (`2026-12-04T09:30`, `...Z`, with an offset) or a clock time today (`09:30`), UTC unless it
    says otherwise. Raises ValueError with a one-line message naming `field`."""
    value = str(text).strip()
    ago = re.match(_AGO, value.lower())
    if ago:
        return now - timedelta(seconds=float(ago.group(1)) * _AGO_SECONDS[ago.group(2)])
    try:
        if re.fullmatch(r"\d{1,2}:\d{2}(:\d{2})?", value):
            clock = datetime.strptime(value if value.count(":") == 2 else value + ":00", "%H:%M:%S")
            return now.astimezone(UTC).replace(hour=clock.hour, minute=clock.minute, second=clock.second,
                                               microsecond=0)
        when = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise ValueError(
            f"{field}: expected a time ago (30m, 2h, 1d), an ISO time (2026-12-04T09:30) or HH:MM, got {value[:40]!r}"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class LineFilter:
    """Which log lines a filter term keeps: the lines that contain the text, or, for a term
    written `/.../`, the lines a regular expression finds in. Case is ignored either way, as in the
    log's search. The one rule the log pane's filter and `console logs --grep` share."""

    __slots__ = ("term", "regex", "_needle", "_pattern")

    def __init__(self, term: str) -> None:
        self.term = term
        self.regex = len(term) >= 2 and term.startswith("/") and term.endswith("/")
        self._needle = term.lower()
        self._pattern: re.Pattern[str] | None = None
        if self.regex:
            try:
                self._pattern = re.compile(term[1:-1], re.IGNORECASE)
            except re.error as exc:
                raise ValueError(f"filter {term!r}: not a regular expression ({exc})") from None

    def __call__(self, line: str) -> bool:
        if self._pattern is not None:
            return self._pattern.search(line) is not None
        return self._needle in line.lower()

    def __repr__(self) -> str:
        return f"LineFilter({self.term!r})"
