"""What on-call must remember across restarts: the events found (each once, with what it said),
which consumer was given which event, each running job's last sign of activity, and each adapter
repo's live version as last read.

One SQLite file in the data dir (`oncall.sqlite`), shared by every console and every `console
watch` of that data dir. Each consumer keeps its own record of what it was given: the TUI
(`tui`), the apps `console web` serves (`web`), `console watch` (`watch`) and each webhook
channel (`webhook:<hash of its URL>`). Giving an event to a consumer is one ``INSERT OR
IGNORE``: of two watchers of one consumer that see the same event, exactly one gives it, a
watcher restarted after ``kill -9`` never gives it again, and what one consumer was given is
still news to every other (a read-only web tab swallows nothing for `console watch`). Each call
opens its own short-lived connection (WAL mode), so one store can be used from the UI thread,
thread workers and the webhook thread at once.

Standard library and console.paths only: no Textual, no console.ui, console.server or
console.backend, no network.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from console import paths, sqldb
from console.sqldb import in_batches

ONCALL_FILENAME = "oncall.sqlite"
SCHEMA_VERSION = 2
EVERYONE = "*"
"""The consumer name of deliveries made before consumers kept their own (schema 1): given to all."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sent (
    key     TEXT PRIMARY KEY,
    kind    TEXT NOT NULL,
    job_id  TEXT,
    at      REAL NOT NULL,
    payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS activity (
    job_id      TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    step        INTEGER,
    active_at   REAL NOT NULL,
    seen_at     REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS live (
    repo_id TEXT PRIMARY KEY,
    commit_id TEXT,
    made_at REAL,
    read_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sent_at ON sent (at);
CREATE TABLE IF NOT EXISTS delivered (
    consumer TEXT NOT NULL,
    key      TEXT NOT NULL,
    at       REAL NOT NULL,
    PRIMARY KEY (consumer, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


class OnCallStoreError(Exception):
    """The on-call file cannot be used; the message is one line, ready to show."""


@dataclass(frozen=True)
class ActivityMark:
    """A running job's last sign of life as the store remembers it."""

    job_id: str
    fingerprint: str
    """A hash of the job's log tail when it was last seen."""
    step: int | None
    """Its Trackio step when it was last seen."""
    active_at: float
    """Unix time of the last observation that showed activity (new log, new step or CPU)."""
    seen_at: float
    """Unix time of the last observation."""


@dataclass(frozen=True)
class LiveRead:
    """An adapter repo's live version as it was last read."""

    repo_id: str
    commit: str | None
    """The commit its live tag pointed at; None: no live tag (or no repo) then."""
    made_at: float | None
    """Unix time that commit was made."""
    read_at: float
    """Unix time of the read (the watcher's clock)."""


_CLAIM = "INSERT OR IGNORE INTO sent (key, kind, job_id, at, payload) VALUES (?, ?, ?, ?, ?)"
"""Record an event as found (the first to record it is the one that claimed it)."""


def default_path() -> Path:
    return paths.data_dir() / ONCALL_FILENAME


class OnCallStore:
    """The on-call SQLite file. Safe to share between threads and processes."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise OnCallStoreError(
                    f"{self.path}: written by a newer console (schema {version}, this one reads "
                    f"{SCHEMA_VERSION}); upgrade the console"
                )
            conn.executescript(_SCHEMA)
            if version == 1:  # what schema 1 sent, it sent to every channel there was
                conn.execute("INSERT OR IGNORE INTO delivered (consumer, key, at) "
                             "SELECT ?, key, at FROM sent", (EVERYONE,))
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _connect(self) -> AbstractContextManager[sqlite3.Connection]:
        return sqldb.session(self.path, OnCallStoreError)

    # -- events

    def claim(self, key: str, *, kind: str, job_id: str | None, at: float, payload: str) -> bool:
        """Record an event as found; True only for the one caller that recorded it first."""
        with self._connect() as conn:
            return conn.execute(_CLAIM, (key, kind, job_id, at, payload)).rowcount == 1

    def claim_and_deliver(self, found: Sequence[tuple[str, str, str | None, float, str]],
                          consumers: Sequence[str]) -> set[tuple[str, str]]:
        """`claim` each event (key, kind, job id, at, payload) and record it as given to each
        consumer (never one given to everyone under schema 1), in one transaction: a pass that
        finds 2,000 queued runs stuck writes them at once. The (consumer, key) pairs this call
        gave first."""
        given: set[tuple[str, str]] = set()
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for key, kind, job_id, at, payload in found:
                    conn.execute(_CLAIM, (key, kind, job_id, at, payload))
                    if conn.execute("SELECT 1 FROM delivered WHERE consumer = ? AND key = ?",
                                    (EVERYONE, key)).fetchone():
                        continue
                    for consumer in consumers:
                        cur = conn.execute("INSERT OR IGNORE INTO delivered (consumer, key, at) "
                                           "VALUES (?, ?, ?)", (consumer, key, at))
                        if cur.rowcount == 1:
                            given.add((consumer, key))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return given

    def delivered_keys(self, consumer: str, keys: Iterable[str]) -> set[str]:
        """Which of these events `consumer` was already given."""
        wanted = list(dict.fromkeys(keys))
        found: set[str] = set()
        with self._connect() as conn:
            for chunk, marks in in_batches(wanted):
                found.update(row[0] for row in conn.execute(
                    f"SELECT key FROM delivered WHERE consumer IN (?, ?) AND key IN ({marks})",
                    [consumer, EVERYONE, *chunk]))
        return found

    def payloads(self, keys: Iterable[str]) -> dict[str, str]:
        """The JSON each of these events was found with (those found so far)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, str] = {}
        with self._connect() as conn:
            for chunk, marks in in_batches(wanted):
                found.update(conn.execute(f"SELECT key, payload FROM sent WHERE key IN ({marks})", chunk))
        return found

    def undelivered(self, consumer: str, since: float) -> list[tuple[str, str]]:
        """(key, payload) of the events found at or after `since` that `consumer` was not given,
        oldest first."""
        with self._connect() as conn:
            return conn.execute(
                "SELECT key, payload FROM sent WHERE at >= ? AND NOT EXISTS (SELECT 1 FROM delivered d "
                "WHERE d.key = sent.key AND d.consumer IN (?, ?)) ORDER BY at, key",
                (since, consumer, EVERYONE),
            ).fetchall()

    def sent_keys(self, keys: Iterable[str]) -> set[str]:
        """Which of these events were already found (by any watcher)."""
        wanted = list(dict.fromkeys(keys))
        found: set[str] = set()
        with self._connect() as conn:
            for chunk, marks in in_batches(wanted):
                found.update(
                    row[0] for row in conn.execute(f"SELECT key FROM sent WHERE key IN ({marks})", chunk)
                )
        return found

    def sent_count(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM sent").fetchone()[0])

    # -- activity of running jobs

    def activity(self, job_id: str) -> ActivityMark | None:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT job_id, fingerprint, step, active_at, seen_at FROM activity WHERE job_id = ?",
                (job_id,),
            ).fetchone()
        return ActivityMark(*row) if row else None

    def save_activity(self, mark: ActivityMark) -> None:
        with self._connect() as conn:
            conn.execute(
                "INSERT INTO activity (job_id, fingerprint, step, active_at, seen_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (job_id) DO UPDATE SET "
                "fingerprint = excluded.fingerprint, step = excluded.step, "
                "active_at = excluded.active_at, seen_at = excluded.seen_at",
                (mark.job_id, mark.fingerprint, mark.step, mark.active_at, mark.seen_at),
            )

    def forget_activity(self, keep: Iterable[str]) -> int:
        """Drop the marks of jobs not in `keep` (they no longer run); returns how many."""
        keep = set(keep)
        with self._connect() as conn:
            gone = [r[0] for r in conn.execute("SELECT job_id FROM activity") if r[0] not in keep]
            conn.executemany("DELETE FROM activity WHERE job_id = ?", [(j,) for j in gone])
        return len(gone)

    # -- live adapter versions

    def live_reads(self) -> dict[str, LiveRead]:
        with self._connect() as conn:
            rows = conn.execute("SELECT repo_id, commit_id, made_at, read_at FROM live").fetchall()
        return {r[0]: LiveRead(*r) for r in rows}

    def save_live_reads(self, reads: Iterable[LiveRead]) -> None:
        with self._connect() as conn:
            conn.executemany(
                "INSERT INTO live (repo_id, commit_id, made_at, read_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (repo_id) DO UPDATE SET commit_id = excluded.commit_id, "
                "made_at = excluded.made_at, read_at = excluded.read_at",
                [(r.repo_id, r.commit, r.made_at, r.read_at) for r in reads],
            )

    # -- small facts

    def start_channel(self, channel: str, now: float) -> bool:
        """A webhook channel seen for the first time starts from now: every event found so far
        counts as given to it (a webhook added to the config is not sent the past). True when it
        was new."""
        with self._connect() as conn:
            cur = conn.execute("INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)",
                               (f"channel:{channel}", repr(now)))
            if cur.rowcount != 1:
                return False
            conn.execute("INSERT OR IGNORE INTO delivered (consumer, key, at) SELECT ?, key, at FROM sent",
                         (channel,))
            return True

    def first_watch_at(self, now: float, consumer: str | None = None) -> float:
        """When this data dir was first watched (by `consumer`, when given: each has its own), set
        to `now` on the first call."""
        name = "first_watch_at" if consumer is None else f"first_watch_at:{consumer}"
        with self._connect() as conn:
            conn.execute("INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)", (name, repr(now)))
            row = conn.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        try:
            return float(row[0])
        except (TypeError, ValueError):
            return now

    def meta(self, name: str) -> str | None:
        """A small fact kept by name (None: never set)."""
        with self._connect() as conn:
            row = conn.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, name: str, value: str) -> None:
        with self._connect() as conn:
            conn.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", (name, value))
