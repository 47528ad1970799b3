"""How every SQLite store of the console opens its database, and `WHERE x IN (...)` in batches.

One helper for the ledger, the on-call store, the job cache and the embedded server's stores, so
they agree on what a connection is: autocommit (``isolation_level=None``: a store writes its own
``BEGIN`` ... ``COMMIT``), the WAL journal (readers never wait for the writer), ``synchronous =
NORMAL`` (safe with WAL, one fsync per checkpoint) and a busy timeout (a second console, or the
server's next request, waits for the write under way instead of failing).

Older SQLite builds allow 999 parameters per statement: the stores ask about a refresh's job ids,
a list call's ids and an on-call pass's event keys `IN_BATCH` at a time.

Imports nothing of the console: the embedded server's stores and the console's use it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

IN_BATCH = 500
BUSY_TIMEOUT_S = 10.0
"""How long a statement waits for another connection's write before it fails."""


def connect(path: Path | str, *, threads: bool = False, busy_timeout_s: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """A connection to `path` as every store opens one (see the module). `threads`: a long-lived
    connection the store uses from several threads under its own lock (the server's)."""
    import sqlite3  # with the first connection: a console's fresh first frame opens none

    conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=not threads)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


@contextmanager
def session(path: Path | str, error: type[Exception]) -> Iterator[sqlite3.Connection]:
    """A connection for one unit of work, closed after it; a database that cannot be opened or
    read raises `error` with the path and SQLite's reason, in one line."""
    import sqlite3

    try:
        conn = connect(path)
    except sqlite3.Error as exc:
        raise error(f"{path}: cannot be opened: {exc}") from None
    try:
        yield conn
    except sqlite3.DatabaseError as exc:
        raise error(f"{path}: {exc}") from None
    finally:
        conn.close()


def in_batches(values: Sequence[str], size: int = IN_BATCH) -> Iterator[tuple[list[str], str]]:
    """(batch, placeholders) for each `size` values in order: `placeholders` is `?,?,...`, one
    per value of the batch, for `IN ({placeholders})`."""
    for start in range(0, len(values), size):
        batch = list(values[start:start + size])
        yield batch, ",".join("?" * len(batch))
