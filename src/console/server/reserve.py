"""Space held back on the data disk, so that a job's end can still be recorded when the disk fills.

A job that fills the disk (with its log, or with files of its own) would otherwise leave no room for
the one write that matters after it: its final stage in SQLite. The runner holds a small file of
`RESERVE_BYTES`; when recording a job's end fails for want of space, it lets the file go and tries
again, then holds it again once the disk has room. API writes never spend it: they answer 507.

Imports only the standard library.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

RESERVE_BYTES = 256 * 1024
"""Enough for many SQLite transactions of a job's end (a few 4 KiB pages each)."""


def is_disk_full(exc: BaseException) -> bool:
    """A write refused for want of space (or of the user's quota): an OSError's ENOSPC / EDQUOT, or
    SQLite's "database or disk is full"."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return isinstance(exc, sqlite3.Error) and "full" in str(exc).lower()


class Reserve:
    """A file of `size` bytes at `path`, held while the disk has room and let go when it has none."""

    def __init__(self, path: Path, size: int = RESERVE_BYTES) -> None:
        self.path = path
        self.size = size

    @property
    def held(self) -> bool:
        try:
            return self.path.stat().st_size >= self.size
        except OSError:
            return False

    def hold(self) -> bool:
        """Take the space (whole or not at all); False when the disk has not that much free."""
        if self.held:
            return True
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        except OSError:
            return False
        try:
            taken = _allocate(fd, self.size)
            if taken:
                os.fsync(fd)
        except OSError:
            taken = False
        finally:
            os.close(fd)
        if not taken:
            self.release()
        return taken

    def release(self) -> bool:
        """Give the space back to the disk; True when there was some to give."""
        try:
            self.path.unlink()
            return True
        except OSError:  # not there (already let go), or not removable
            return False


def _allocate(fd: int, size: int) -> bool:
    try:
        os.posix_fallocate(fd, 0, size)
        return True
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            return False
    return os.pwrite(fd, b"\0" * size, 0) == size  # a file system without fallocate: write it
