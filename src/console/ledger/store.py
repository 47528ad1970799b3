"""The ledger file: entries kept in SQLite so every finished job is counted once and never lost.

Rows are keyed by job id and inserted with ``INSERT OR IGNORE``, so a recording run twice, two
consoles recording into the same file, or a console restarted after ``kill -9`` never count a job
twice; each recording is one committed transaction in WAL mode, so nothing committed is lost.

Imports the entries, the calibration and the standard library's sqlite3: no Textual, no
console.ui or console.server, no network, no training stack.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console import paths, sqldb
from console.costs import Calibration, Observation, calibrate
from console.ledger.calibration import batch_of, estimate_calibration, observations_from, steps_of
from console.ledger.entries import UNKNOWN, LedgerEntry, entry_from_job, is_loopback, is_terminal
from console.ledger.forecast import SpendTotals
from console.ledger.projection import SharedProjection
from console.prices import PriceBook, shipped_price_book
from console.sqldb import in_batches
from console.stages import COMPLETED, ERROR, sql_list
from console.strings import shared

LEDGER_FILENAME = "ledger.sqlite"
SCHEMA_VERSION = 2
"""1: the first; 2: adds exposed_ports and ports_usd (a file of schema 1 gets them, as 0)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    job_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    kind TEXT NOT NULL,
    env TEXT NOT NULL,
    flavor TEXT NOT NULL,
    price_per_hour REAL NOT NULL,
    price_source TEXT NOT NULL,
    running_seconds REAL NOT NULL,
    running_source TEXT NOT NULL,
    cost_usd REAL NOT NULL,
    stage TEXT NOT NULL,
    message TEXT,
    wasted INTEGER NOT NULL,
    created_at TEXT,
    started_at TEXT,
    finished_at TEXT,
    month TEXT NOT NULL,
    model_b REAL,
    examples INTEGER,
    epochs REAL,
    unsloth INTEGER,
    run_name TEXT,
    scheduled_job_id TEXT,
    labels TEXT NOT NULL,
    endpoint TEXT NOT NULL DEFAULT '',
    recorded_at TEXT NOT NULL,
    exposed_ports INTEGER NOT NULL DEFAULT 0,
    ports_usd REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS entries_month ON entries (month);
CREATE INDEX IF NOT EXISTS entries_tenant ON entries (tenant);
CREATE INDEX IF NOT EXISTS entries_schedule ON entries (scheduled_job_id);
"""

_COLUMNS = (
    "job_id", "tenant", "kind", "env", "flavor", "price_per_hour", "price_source",
    "running_seconds", "running_source", "cost_usd", "stage", "message", "wasted", "created_at",
    "started_at", "finished_at", "month", "model_b", "examples", "epochs", "unsloth", "run_name",
    "scheduled_job_id", "labels", "endpoint", "recorded_at", "exposed_ports", "ports_usd",
)
_ADDED_COLUMNS = {
    "exposed_ports": "INTEGER NOT NULL DEFAULT 0",
    "ports_usd": "REAL NOT NULL DEFAULT 0",
}
"""Columns added since schema 1, added to an older file when it is opened."""


_REPAIR_UNTIL_NOW = f"""
UPDATE entries SET running_seconds = 0, cost_usd = 0, running_source = '{UNKNOWN}'
WHERE running_source = 'timestamps' AND finished_at IS NULL
"""
"""Entries an older console costed "until now": a finished job with a start time but no finish time
was billed up to the moment it was recorded (one ERROR job: 2,776,734 s, $1,928). Their running
time is unknown; they become unknown entries (no total counts them) and are costed again if the
Jobs API later says how long they ran."""

_UPSERT_SET = ", ".join(f"{c} = excluded.{c}" for c in (
    "price_per_hour", "price_source", "running_seconds", "running_source", "cost_usd", "stage",
    "message", "wasted", "started_at", "finished_at", "month", "recorded_at", "exposed_ports", "ports_usd",
))


class LedgerError(Exception):
    """The ledger file cannot be used; the message names it and says why."""


_SHARED_COLUMNS = ("tenant", "kind", "env", "flavor", "price_source", "running_source", "stage",
                   "month", "message")
"""Columns whose values repeat across entries: each distinct value is kept once (a fleet's ledger
holds tens of thousands of entries, and the pane keeps them all)."""


def _to_row(entry: LedgerEntry) -> tuple[Any, ...]:
    d = entry.to_dict()
    d["wasted"] = int(entry.wasted)
    d["unsloth"] = None if entry.unsloth is None else int(entry.unsloth)
    d["labels"] = json.dumps(entry.labels, sort_keys=True)
    return tuple(d[c] for c in _COLUMNS)


def _from_row(row: Sequence[Any]) -> LedgerEntry:
    d = dict(zip(_COLUMNS, row, strict=True))
    d["wasted"] = bool(d["wasted"])
    d["unsloth"] = None if d["unsloth"] is None else bool(d["unsloth"])
    try:
        labels = json.loads(d["labels"] or "{}")
    except ValueError:
        labels = {}
    d["labels"] = (
        {shared(k): shared(v) for k, v in labels.items()} if isinstance(labels, dict) else {}
    )
    for name in _SHARED_COLUMNS:
        d[name] = shared(d[name])
    return LedgerEntry(**d)


@dataclass(frozen=True)
class FailureStreak:
    """A schedule's failed runs in a row: its runs that ended ERROR since its last COMPLETED one
    (or since its first run), oldest first. CANCELED and DELETED runs neither fail nor pass."""

    scheduled_job_id: str
    failures: int
    first_job_id: str
    last_job_id: str
    passed_job_id: str | None
    """The schedule's last run that passed before the streak (None: none ever did): with the
    schedule, what names the streak, for good (a run that passes ends it; the next failure starts
    a new one, after another pass)."""
    tenant: str
    since: str | None
    """When the first failed run of the streak was created (ISO, UTC)."""
    last_at: str | None
    """When the newest failed run of the streak ended (else started, else was created)."""
    last_message: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheduled_job_id": self.scheduled_job_id, "failures": self.failures,
            "first_job_id": self.first_job_id, "last_job_id": self.last_job_id,
            "passed_job_id": self.passed_job_id, "tenant": self.tenant,
            "since": self.since, "last_at": self.last_at, "last_message": self.last_message,
        }


_RUN_ORDER = ("COALESCE(created_at, started_at, recorded_at), COALESCE(started_at, ''), "
              "COALESCE(finished_at, ''), job_id")
"""The order a schedule's runs came in: when each was created (the firing), then started, ended
(the ledger keeps these to the second; a schedule fires a minute apart at the least)."""

_STREAKS = f"""
WITH runs AS (
    SELECT job_id, scheduled_job_id AS sj, stage, tenant, message, created_at, started_at, finished_at,
           ROW_NUMBER() OVER (PARTITION BY scheduled_job_id ORDER BY {_RUN_ORDER}) AS n
    FROM entries WHERE scheduled_job_id IS NOT NULL AND stage IN {sql_list((ERROR, COMPLETED))}
), passed AS (
    SELECT sj, MAX(n) AS n FROM runs WHERE stage IN {sql_list(COMPLETED)} GROUP BY sj
)
SELECT r.sj, r.job_id, r.tenant, r.message, r.created_at, COALESCE(r.finished_at, r.started_at, r.created_at),
       (SELECT job_id FROM runs q WHERE q.sj = r.sj AND q.n = p.n)
FROM runs r LEFT JOIN passed p ON p.sj = r.sj
WHERE r.stage IN {sql_list(ERROR)} AND r.n > COALESCE(p.n, 0)
ORDER BY r.sj, r.n
"""


@dataclass(frozen=True)
class RecordResult:
    added: int
    """New entries written by this recording."""
    terminal: int
    """Terminal jobs seen (new or already in the ledger)."""
    active: list[Any]
    """Jobs still scheduling or running (not costed yet; their minutes so far are in flight)."""
    price_source: str


def default_path() -> Path:
    return paths.data_dir() / LEDGER_FILENAME


class Ledger:
    """The SQLite ledger file. Safe to use from several threads and processes at once.

    Each call opens its own short-lived connection, so a Ledger can be shared by the UI thread and
    thread workers; every write is one committed transaction.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._cache: tuple[tuple[int, int], list[LedgerEntry]] | None = None
        self._calibration: tuple[tuple[int, int], tuple[Calibration, str]] | None = None
        self._store_calibration: tuple[tuple[int, int], tuple[Calibration, str]] | None = None
        self._calibrating = threading.Lock()
        """One calibration at a time: the costs pane and the watcher ask together, and the second
        takes the first one's answer instead of reading every entry again beside it."""
        self._store_totals: tuple[tuple[tuple[int, int], str], SpendTotals] | None = None
        self.projection = SharedProjection()
        """The schedules' money and the spend by tenant every summary of this ledger shares."""
        with self._connect() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise LedgerError(
                    f"{self.path}: written by a newer console (schema {version}, this one reads "
                    f"{SCHEMA_VERSION}); upgrade the console"
                )
            conn.executescript(_SCHEMA)
            have = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
            for name, decl in _ADDED_COLUMNS.items():
                if name not in have:
                    conn.execute(f"ALTER TABLE entries ADD COLUMN {name} {decl}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute(_REPAIR_UNTIL_NOW)

    def _connect(self) -> AbstractContextManager[sqlite3.Connection]:
        return sqldb.session(self.path, LedgerError)

    # -- writing

    def record(self, entries: Iterable[LedgerEntry]) -> int:
        """Insert entries not yet in the ledger (by job id); returns how many were new. An entry
        whose cost was unknown is replaced by one whose cost is known (and only then)."""
        rows = [_to_row(e) for e in entries]
        if not rows:
            return 0
        placeholders = ", ".join("?" for _ in _COLUMNS)
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                before = conn.total_changes
                conn.executemany(
                    f"INSERT INTO entries ({', '.join(_COLUMNS)}) VALUES ({placeholders}) "
                    f"ON CONFLICT (job_id) DO UPDATE SET {_UPSERT_SET} "
                    f"WHERE entries.running_source = '{UNKNOWN}' AND excluded.running_source != '{UNKNOWN}'",
                    rows,
                )
                added = conn.total_changes - before
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return added

    def record_finished(
        self, jobs: Iterable[Any], prices: PriceBook | None = None, *, now: datetime | None = None
    ) -> RecordResult:
        """Cost every terminal job not yet in the ledger, and those whose cost was unknown if the
        Jobs API now says how long they ran; idempotent."""
        prices = prices or shipped_price_book()
        now = now or datetime.now(UTC)
        jobs = list(jobs)
        known, unknown = self._recorded([str(job.id) for job in jobs if is_terminal(job)])
        new: list[LedgerEntry] = []
        active: list[Any] = []
        terminal = 0
        for job in jobs:
            if not is_terminal(job):
                active.append(job)
                continue
            terminal += 1
            job_id = str(job.id)
            if job_id in known and job_id not in unknown:
                continue
            entry = entry_from_job(job, prices, now=now)
            if entry is None or (job_id in unknown and not entry.known):
                continue
            new.append(entry)
            known.add(job_id)
            unknown.discard(job_id)
        return RecordResult(self.record(new), terminal, active, prices.describe())

    # -- reading

    def _recorded(self, job_ids: list[str]) -> tuple[set[str], set[str]]:
        """Which of `job_ids` the ledger has, and which of those have an unknown cost: asked of
        SQLite for these ids only (a recording of a few jobs must not read 100,000 ids)."""
        known: set[str] = set()
        unknown: set[str] = set()
        with self._connect() as conn:
            for chunk, marks in in_batches(job_ids):
                for job_id, source in conn.execute(
                        f"SELECT job_id, running_source FROM entries WHERE job_id IN ({marks})", chunk):
                    known.add(job_id)
                    if source == UNKNOWN:
                        unknown.add(job_id)
        return known, unknown

    def job_ids(self) -> set[str]:
        with self._connect() as conn:
            return {row[0] for row in conn.execute("SELECT job_id FROM entries")}

    def __len__(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def __contains__(self, job_id: object) -> bool:
        with self._connect() as conn:
            row = conn.execute("SELECT 1 FROM entries WHERE job_id = ?", (str(job_id),)).fetchone()
        return row is not None

    def get(self, job_id: str) -> LedgerEntry | None:
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM entries WHERE job_id = ?", (job_id,)
            ).fetchone()
        return None if row is None else _from_row(row)

    def entries(self, *, month: str | None = None, tenant: str | None = None) -> list[LedgerEntry]:
        """Entries, oldest first (by when they started, then by id).

        Entries are only ever added, or an unknown one costed, so the unfiltered list is cached by
        the row count and the count of unknown ones: a pane refreshing every few seconds re-reads
        the file only when a job was recorded or costed.
        """
        if month is None and tenant is None:
            version = self._version()
            cached = self._cache
            if cached is not None and cached[0] == version:
                return list(cached[1])
            entries = self._read_entries(None, None)
            self._cache = (version, entries)
            self._calibration = None
            return list(entries)
        return self._read_entries(month, tenant)

    def _version(self) -> tuple[int, int]:
        with self._connect() as conn:
            count, unknown = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(running_source = ?), 0) FROM entries", (UNKNOWN,)
            ).fetchone()
        return int(count), int(unknown)

    def spend_totals(self, month: str) -> SpendTotals:
        """:func:`~console.ledger.forecast.spend_totals` of every entry, added up by SQLite: a
        pane redrawing a fleet's ledger (100,000 entries) loads none of them. Cached until an entry
        is recorded or costed, as the calibration is: the same object, to be read, not changed."""
        version = self._version()
        cached = self._store_totals
        if cached is not None and cached[0] == (version, month):
            return cached[1]
        totals = self._sum_totals(month)
        self._store_totals = ((version, month), totals)
        return totals

    def _sum_totals(self, month: str) -> SpendTotals:
        totals = SpendTotals(month)
        known = "running_source != ?"
        with self._connect() as conn:
            totals.entries = int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
            totals.unknown = [r[0] for r in conn.execute(
                "SELECT job_id FROM entries WHERE running_source = ? "
                "ORDER BY COALESCE(started_at, created_at, recorded_at), job_id", (UNKNOWN,))]
            for tenant, runs, this_month, total, wasted in conn.execute(
                "SELECT tenant, COUNT(*), TOTAL(CASE WHEN month = ? THEN cost_usd END), TOTAL(cost_usd), "
                f"TOTAL(CASE WHEN month = ? AND wasted THEN cost_usd END) FROM entries WHERE {known} "
                "GROUP BY tenant", (month, month, UNKNOWN)):
                totals.tenants[shared(tenant)] = [int(runs), this_month, total, wasted]
            totals.by_month = {m: v for m, v in conn.execute(
                f"SELECT month, TOTAL(cost_usd) FROM entries WHERE {known} GROUP BY month", (UNKNOWN,))}
            mtd, wasted, runs = conn.execute(
                "SELECT TOTAL(cost_usd), TOTAL(CASE WHEN wasted THEN cost_usd END), "
                f"COALESCE(SUM(wasted), 0) FROM entries WHERE month = ? AND {known}", (month, UNKNOWN),
            ).fetchone()
        totals.month_to_date, totals.wasted, totals.wasted_runs = mtd, wasted, int(runs)
        return totals

    def history(self) -> Iterable[LedgerEntry]:
        """Every entry, read the first time it is iterated (an unlabelled schedule's forecast needs
        the history; a labelled fleet's never reads it)."""
        return _LazyEntries(self)

    def calibration_from_store(self) -> tuple[Calibration, str]:
        """:func:`estimate_calibration` of every entry, from the columns it reads (no entry is
        loaded, and the rows are streamed: 100,000 finished runs are not held at once); cached
        until an entry is recorded or costed."""
        with self._calibrating:
            return self._calibration_from_store()

    def _calibration_from_store(self) -> tuple[Calibration, str]:
        version = self._version()
        cached = self._store_calibration
        if cached is not None and cached[0] == version:
            return cached[1]
        where = (f"stage IN {sql_list(COMPLETED)} AND kind IN ('sft', '') AND running_source != ? "
                 "AND running_seconds > 0 AND model_b IS NOT NULL AND examples AND epochs IS NOT NULL")
        with self._connect() as conn:
            endpoints = [e for (e,) in conn.execute(f"SELECT DISTINCT endpoint FROM entries WHERE {where}",
                                                    (UNKNOWN,))]

            def observed(among: list[str]) -> Iterator[Observation]:
                if not among:
                    return
                rows = conn.execute(
                    "SELECT flavor, model_b, examples, epochs, running_seconds, unsloth, kind, "
                    "json_extract(labels, '$.max_steps') FROM entries "
                    f"WHERE {where} AND endpoint IN ({','.join('?' * len(among))}) "
                    "ORDER BY COALESCE(started_at, created_at, recorded_at), job_id",  # as entries() are
                    (UNKNOWN, *among),
                )
                for flavor, model_b, examples, epochs, running, unsloth, kind, steps in rows:
                    yield Observation(flavor=flavor, model_b=model_b, examples=examples, epochs=epochs,
                                      running_seconds=running, unsloth=bool(unsloth),
                                      max_steps=steps_of({"max_steps": str(steps)} if steps else None),
                                      batch_size=batch_of(kind))

            local = [e for e in endpoints if is_loopback(e)]
            found = calibrate(observed([e for e in endpoints if e not in local]))
            if found.runs:
                result = (found, "hf")
            else:
                found = calibrate(observed(local))
                result = (found, "local" if found.runs else "none")
        self._store_calibration = (version, result)
        return result

    def estimate_calibration(self) -> tuple[Calibration, str]:
        """:func:`estimate_calibration` of all entries, cached until an entry is recorded or costed."""
        entries = self.entries()
        cached = self._calibration
        version = self._cache[0] if self._cache is not None else None
        if cached is not None and version is not None and cached[0] == version:
            return cached[1]
        result = estimate_calibration(entries)
        if version is not None:
            self._calibration = (version, result)
        return result

    def _read_entries(self, month: str | None, tenant: str | None) -> list[LedgerEntry]:
        where, params = [], []
        if month is not None:
            where.append("month = ?")
            params.append(month)
        if tenant is not None:
            where.append("tenant = ?")
            params.append(tenant)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM entries"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY COALESCE(started_at, created_at, recorded_at), job_id"
        with self._connect() as conn:
            return [_from_row(r) for r in conn.execute(sql, params)]

    def failure_streaks(self) -> dict[str, FailureStreak]:
        """Scheduled job id -> its runs failed in a row up to its newest run (:class:`FailureStreak`),
        for each schedule whose newest finished run failed: the one answer to "is this schedule
        failing, and since when", for `console watch` and the TUI. Runs are a schedule's jobs
        (`scheduled_job_id`, from the Jobs API's initiator) in the order they were created."""
        out: dict[str, FailureStreak] = {}
        with self._connect() as conn:
            rows = conn.execute(_STREAKS).fetchall()
        for sj, job_id, tenant, message, created, ended, passed in rows:
            prev = out.get(sj)
            out[sj] = FailureStreak(
                scheduled_job_id=sj,
                failures=1 if prev is None else prev.failures + 1,
                first_job_id=job_id if prev is None else prev.first_job_id,
                last_job_id=job_id,
                passed_job_id=passed,
                tenant=shared(tenant),
                since=created if prev is None else prev.since,
                last_at=ended,
                last_message=message,
            )
        return out

    # -- calibration

    def observations(self, *, local: bool | None = None) -> list[Observation]:
        return observations_from(self.entries(), local=local)

    def calibration(self, *, local: bool | None = None) -> Calibration:
        return calibrate(self.observations(local=local))


class _LazyEntries:
    """`Ledger.entries()`, read on first iteration and kept for the next ones."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._entries: list[LedgerEntry] | None = None

    def __iter__(self) -> Iterator[LedgerEntry]:
        if self._entries is None:
            self._entries = self._ledger._read_entries(None, None)
        return iter(self._entries)
