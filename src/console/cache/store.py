"""The console's local cache: every job of a namespace it has seen, and the last picture it showed.

A fleet's history outgrows memory (100,000 jobs are hundreds of MB as `JobInfo` objects), and a
console that starts by reading it all back from the API paints its first frame seconds late. So
the console keeps what it learns in one SQLite file per backend and namespace, in the data dir:

- ``jobs``: one row per job, its table row (`console.jobs.JobRow`) in plain columns, the row's
  lower-case search text (what the `/` filter's free words match) and, deflated, the job as the
  API sent it (`console.cache.docs`), so a `JobInfo` can be rebuilt when more than the row is
  needed. The jobs table holds the newest few hundred; the rest are paged in from here on
  scroll or filter, and the filter's count covers every job.
- ``meta``: the last fleet rows and the last ledger summary (JSON), when the data they show was
  read, and when the whole job list was last read.

Nothing here is the truth: the API is. A corrupt or newer file is thrown away and rebuilt.
Every method may be called from any thread (one connection per thread, WAL mode).

Imports console.jobs and the standard library only (the first frame is painted from here before
huggingface_hub, the fleet or the ledger are imported); no Textual, no console.ui or
console.server.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console import paths, sqldb
from console.cache.docs import job_doc, pack, unpack
from console.jobs import JobFilter, JobRow
from console.kinds import TRAINING_KINDS
from console.sqldb import in_batches
from console.stages import COMPLETED, RUNNING, SCHEDULING, TERMINAL_STAGES, sql_list
from console.strings import shared

if TYPE_CHECKING:
    import sqlite3

PAGE_CACHE_KIB = 256
"""SQLite's page cache per connection (its default is 2 MiB). Each thread that reads the cache
has its own connection, and a whole-list read fills each one's cache: five 2 MiB caches were ten
MiB of a console's memory at 100,000 jobs. The operating system keeps the file's pages anyway."""

SCHEMA_VERSION = 2
"""2: `train` counts every training kind (a cache written by version 1 is rebuilt)."""
TERMINAL = TERMINAL_STAGES

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    rank INTEGER NOT NULL,
    created REAL NOT NULL,
    stage TEXT NOT NULL,
    tenant TEXT NOT NULL,
    kind TEXT NOT NULL,
    flavor TEXT NOT NULL,
    started REAL,
    finished REAL,
    running REAL,
    cost REAL,
    labels TEXT NOT NULL,
    message TEXT,
    ssh_url TEXT,
    scheduled_job_id TEXT,
    owner TEXT,
    train INTEGER NOT NULL,
    search TEXT NOT NULL,
    sync INTEGER NOT NULL DEFAULT 0,
    doc BLOB
);
CREATE INDEX IF NOT EXISTS jobs_order ON jobs (rank, created DESC, id DESC);
CREATE INDEX IF NOT EXISTS jobs_train ON jobs (train, tenant, created);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS fleet (tenant TEXT PRIMARY KEY, pos INTEGER NOT NULL, row TEXT NOT NULL);
"""

_ROW_COLUMNS = ("id, created, stage, tenant, kind, flavor, started, running, cost, labels, message, "
                "ssh_url, scheduled_job_id, owner")
_ORDER = "ORDER BY rank, created DESC, id DESC"
PUT_BATCH = 500
"""Rows written per transaction while a long read streams in."""


def cache_path(kind: str, namespace: str, endpoint: str | None = None) -> Path:
    """The cache file of one backend and namespace (`endpoint` when one is configured)."""
    try:  # the built-in SHA-1: hashlib would load OpenSSL on the first frame's path
        from _sha1 import sha1
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import sha1

    key = f"{kind}\n{namespace}\n{endpoint or ''}"
    digest = sha1(key.encode()).hexdigest()[:10]
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in namespace)[:40]
    return paths.data_dir() / "cache" / f"jobs-{kind}-{safe}-{digest}.sqlite"


def rank_of(stage: str) -> int:
    """The table's order: running jobs first, then queued ones, then the finished."""
    return 0 if stage == RUNNING else 1 if stage == SCHEDULING else 2


def _epoch(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _when(epoch: float | None) -> datetime | None:
    return datetime.fromtimestamp(epoch, UTC) if epoch is not None else None


def is_training_job(labels: dict[str, str]) -> bool:
    """A console training run of a tenant (any kind: SFT, DPO, KTO, embeddings, the builder
    model): what the fleet's last-run columns are made of."""
    kind = labels.get("kind", "sft")
    return labels.get("app") == "console" and bool(labels.get("tenant")) and kind in TRAINING_KINDS


def _row_from(r: Sequence[Any]) -> JobRow:
    try:
        labels = json.loads(r[9]) if r[9] else {}
    except ValueError:
        labels = {}
    return JobRow(
        id=r[0],
        tenant=shared(r[3]),
        kind=shared(r[4]),
        stage=shared(r[2]),
        flavor=shared(r[5]),
        created_at=_when(r[1]) if r[1] else None,
        started_at=_when(r[6]),
        running_seconds=r[7],
        cost_usd=r[8],
        labels={shared(k): shared(v) for k, v in labels.items()},
        message=r[10],
        ssh_url=r[11],
        scheduled_job_id=r[12],
        owner=shared(r[13]) if r[13] else r[13],
    )


def _filter_sql(job_filter: JobFilter | None) -> tuple[str, list[Any]]:
    """`JobFilter.matches` as a WHERE clause (exact substrings, not LIKE patterns)."""
    if job_filter is None or job_filter.empty:
        return "", []
    where: list[str] = []
    args: list[Any] = []
    if job_filter.tenant:
        where.append("instr(lower(tenant), ?) > 0")
        args.append(job_filter.tenant.lower())
    if job_filter.stages:
        where.append("(" + " OR ".join("substr(lower(stage), 1, ?) = ?" for _ in job_filter.stages) + ")")
        for s in job_filter.stages:
            args.extend((len(s), s))
    for key, value in job_filter.labels:
        if value is None:
            where.append("EXISTS (SELECT 1 FROM json_each(jobs.labels) WHERE key = ?)")
            args.append(key)
        else:
            where.append("EXISTS (SELECT 1 FROM json_each(jobs.labels) WHERE key = ? AND value = ?)")
            args.extend((key, value))
    for word in job_filter.words:
        where.append("instr(search, ?) > 0")
        args.append(word)
    return "WHERE " + " AND ".join(where), args


class JobCache:
    """One cache file (see the module docstring). Cheap to construct: the file opens on first use."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._ready = False
        self.fleet_kept: dict[str, Any] = {}
        """The fleet rows as `snapshot` last wrote or read them, by tenant (the very objects)."""
        self.fleet_lock = threading.Lock()
        """Held while the fleet rows are compared with `fleet_kept` and written."""

    # -- the connection --------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqldb.connect(self.path)
        conn.execute(f"PRAGMA cache_size = -{PAGE_CACHE_KIB}")
        return conn

    def _prepare(self) -> None:
        """Create the schema once per process; a file this console cannot read is started anew."""
        import sqlite3  # with the first read or write: a fresh start's first frame has no file to open

        with self._lock:
            if self._ready:
                return
            try:
                conn = self._open()
                try:
                    version = conn.execute("PRAGMA user_version").fetchone()[0]
                    if version not in (0, SCHEMA_VERSION):  # another version: rebuilt from the API
                        raise sqlite3.DatabaseError(f"schema {version}")
                    conn.executescript(_SCHEMA)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                finally:
                    conn.close()
            except sqlite3.DatabaseError:
                for suffix in ("", "-wal", "-shm"):
                    Path(str(self.path) + suffix).unlink(missing_ok=True)
                conn = self._open()
                try:
                    conn.executescript(_SCHEMA)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                finally:
                    conn.close()
            self._ready = True

    @property
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self._prepare()
            conn = self._local.conn = self._open()
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- writing ---------------------------------------------------------------------------

    @staticmethod
    def _values(row: JobRow, info: Any, sync: int) -> tuple[Any, ...]:
        doc = pack(job_doc(info)) if info is not None else None
        return (
            row.id, rank_of(row.stage), _epoch(row.created_at) or 0.0, row.stage, row.tenant, row.kind,
            row.flavor, _epoch(row.started_at), _epoch(getattr(info, "finished_at", None)),
            row.running_seconds, row.cost_usd, json.dumps(row.labels, separators=(",", ":")),
            row.message, row.ssh_url, row.scheduled_job_id, row.owner,
            int(is_training_job(row.labels)), row.text(), sync, doc,
        )

    def put(self, rows: Iterable[tuple[JobRow, Any]], *, sync: int = 0) -> int:
        """Insert or replace jobs: (row, its JobInfo or None to keep the stored doc). Returns how
        many were written. `sync`: the full read this belongs to (see `begin_sync`). The rows are
        packed as they are written, not all first (10,000 packed docs held at once are tens of MB)."""
        packed = (self._values(row, info, sync) for row, info in rows)
        first = next(packed, None)
        if first is None:
            return 0
        with self._write() as conn:
            written = conn.executemany(
                "INSERT INTO jobs (id, rank, created, stage, tenant, kind, flavor, started, finished, "
                "running, cost, labels, message, ssh_url, scheduled_job_id, owner, train, search, sync, doc) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET rank=excluded.rank, created=excluded.created, "
                "stage=excluded.stage, tenant=excluded.tenant, kind=excluded.kind, flavor=excluded.flavor, "
                "started=excluded.started, finished=excluded.finished, running=excluded.running, "
                "cost=excluded.cost, labels=excluded.labels, message=excluded.message, "
                "ssh_url=excluded.ssh_url, scheduled_job_id=excluded.scheduled_job_id, owner=excluded.owner, "
                "train=excluded.train, search=excluded.search, "
                "sync=MAX(jobs.sync, excluded.sync), doc=COALESCE(excluded.doc, jobs.doc)",
                itertools.chain((first,), packed),
            ).rowcount  # an insert or an update: one change a row
        return written

    def remove(self, job_ids: Iterable[str]) -> None:
        ids = [(i,) for i in job_ids]
        if ids:
            with self._write() as conn:
                conn.executemany("DELETE FROM jobs WHERE id = ?", ids)

    def begin_sync(self) -> int:
        """A number for a read of the whole job list: pass it to `put`, then `end_sync`."""
        row = self._conn.execute("SELECT COALESCE(MAX(sync), 0) FROM jobs").fetchone()
        return int(row[0]) + 1

    def end_sync(self, sync: int) -> list[str]:
        """The whole list was read: drop the jobs it did not contain; returns their ids."""
        with self._write() as conn:
            gone = [r[0] for r in conn.execute("SELECT id FROM jobs WHERE sync < ?", (sync,))]
            conn.execute("DELETE FROM jobs WHERE sync < ?", (sync,))
        self.set_meta("synced_at", str(datetime.now(UTC).timestamp()))
        return gone

    # -- reading ---------------------------------------------------------------------------

    def count(self, job_filter: JobFilter | None = None) -> int:
        where, args = _filter_sql(job_filter)
        return int(self._conn.execute(f"SELECT COUNT(*) FROM jobs {where}", args).fetchone()[0])

    def page(
        self, job_filter: JobFilter | None = None, *, limit: int = 500, after: JobRow | None = None
    ) -> list[JobRow]:
        """Rows in the table's order (running, queued, then newest first), filtered; `after`:
        the rows that come after this one (the next page)."""
        where, args = _filter_sql(job_filter)
        if after is not None:
            rank, created = rank_of(after.stage), _epoch(after.created_at) or 0.0
            where = (where + " AND " if where else "WHERE ") + (
                "(rank > ? OR (rank = ? AND (created < ? OR (created = ? AND id < ?))))"
            )
            args = [*args, rank, rank, created, created, after.id]
        sql = f"SELECT {_ROW_COLUMNS} FROM jobs {where} {_ORDER} LIMIT ?"
        return [_row_from(r) for r in self._conn.execute(sql, [*args, limit])]

    def active(self) -> list[JobRow]:
        """The jobs last seen queued or running."""
        sql = f"SELECT {_ROW_COLUMNS} FROM jobs WHERE rank < 2 {_ORDER}"
        return [_row_from(r) for r in self._conn.execute(sql)]

    def stages(self, job_ids: Sequence[str]) -> dict[str, str]:
        """id -> stage for the ids the cache holds."""
        out: dict[str, str] = {}
        for chunk, marks in in_batches(job_ids):
            out.update(self._conn.execute(f"SELECT id, stage FROM jobs WHERE id IN ({marks})", chunk))
        return out

    def row(self, job_id: str) -> JobRow | None:
        r = self._conn.execute(f"SELECT {_ROW_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return _row_from(r) if r else None

    def doc(self, job_id: str) -> dict[str, Any] | None:
        r = self._conn.execute("SELECT doc FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return unpack(r[0]) if r and r[0] else None

    def latest_runs(self, tenants: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """The docs of each tenant's newest training run and newest completed one (by when it
        finished): what the fleet's last-run columns need, without the rest of the history.
        Read a batch at a time as they are iterated: 20,000 docs are not all held at once."""
        wanted = None if tenants is None else list(tenants)
        scope, args = "", []
        if wanted is not None:
            if not wanted:
                return
            scope = f" AND tenant IN ({','.join('?' * len(wanted))})"
            args = wanted
        # the window ranks row ids only: carrying each job's doc through the sort of every
        # training run took ten times as long; the docs of the few winners are read after
        sql = (
            "SELECT rid FROM ("
            " SELECT rowid AS rid, ROW_NUMBER() OVER (PARTITION BY tenant ORDER BY created DESC, id DESC) AS n"
            f" FROM jobs WHERE train = 1{scope}) WHERE n = 1 "
            "UNION ALL "
            "SELECT rid FROM ("
            " SELECT rowid AS rid, ROW_NUMBER() OVER (PARTITION BY tenant"
            "  ORDER BY COALESCE(finished, started, created) DESC, id DESC) AS n"
            f" FROM jobs WHERE train = 1 AND stage IN {sql_list(COMPLETED)}{scope}) WHERE n = 1"
        )
        rids = list(dict.fromkeys(r[0] for r in self._conn.execute(sql, [*args, *args])))
        for chunk, marks in in_batches(rids):
            docs = dict(self._conn.execute(f"SELECT rowid, doc FROM jobs WHERE rowid IN ({marks})", chunk))
            yield from (unpack(blob) for rid in chunk if (blob := docs.get(rid)))

    # -- the snapshot ----------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        if not self._ready and not self.path.exists():  # a first start: nothing kept, nothing to open
            return None
        r = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return r[0] if r else None

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def fleet_docs(self) -> Iterator[str]:
        """The kept fleet rows (JSON, one per tenant), in the order they were shown."""
        if not self._ready and not self.path.exists():
            return iter(())
        return (r[0] for r in self._conn.execute("SELECT row FROM fleet ORDER BY pos"))

    def put_fleet(self, changed: Iterable[tuple[str, int, str]], gone: Iterable[str],
                  order: Sequence[str] | None = None) -> None:
        """Keep the fleet rows a row at a time: `changed` (tenant, position, JSON) written, the
        `gone` tenants' rows dropped, and with `order` (every tenant, as shown) each position set."""
        with self._write() as conn:
            conn.executemany("DELETE FROM fleet WHERE tenant = ?", ((t,) for t in gone))
            conn.executemany(
                "INSERT INTO fleet (tenant, pos, row) VALUES (?, ?, ?) "
                "ON CONFLICT(tenant) DO UPDATE SET pos = excluded.pos, row = excluded.row", changed)
            if order is not None:
                conn.executemany("UPDATE fleet SET pos = ? WHERE tenant = ?", ((i, t) for i, t in enumerate(order)))
            conn.execute("DELETE FROM meta WHERE key = 'fleet'")  # the older single-value form

    def synced_at(self) -> float | None:
        """When the whole job list was last read into this cache (Unix time), if ever."""
        value = self.get_meta("synced_at")
        try:
            return float(value) if value else None
        except ValueError:
            return None

