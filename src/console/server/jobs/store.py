"""The embedded Jobs server's durable state: jobs and scheduled jobs in one SQLite file.

A job row keeps the submitted spec (without secrets), its secrets in a separate column that no API
answer ever reads, its stage and timestamps, and the process group it runs in (so a restarted
server can kill what a crashed one left behind). Labels are also kept in an indexed side table so
label filters are answered by SQL, not by scanning every job.

All methods are thread-safe (one connection, one lock); the server calls them from the event loop,
the runner thread and the scheduler thread.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console import sqldb
from console.sqldb import in_batches
from console.stages import ACTIVE_STAGES, sql_list

_ACTIVE = sql_list(ACTIVE_STAGES)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    namespace TEXT NOT NULL,
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    stage TEXT NOT NULL,
    message TEXT,
    spec TEXT NOT NULL,
    secrets TEXT NOT NULL DEFAULT '{}',
    labels TEXT NOT NULL DEFAULT '{}',
    initiator TEXT,
    scheduled_job_id TEXT,
    attempt INTEGER NOT NULL DEFAULT 1,
    pid INTEGER,
    pgid INTEGER
);
CREATE INDEX IF NOT EXISTS jobs_ns_stage ON jobs(namespace, stage);
CREATE INDEX IF NOT EXISTS jobs_ns_seq ON jobs(namespace, seq);
CREATE INDEX IF NOT EXISTS jobs_sched ON jobs(scheduled_job_id);
CREATE INDEX IF NOT EXISTS jobs_stage_seq ON jobs(stage, seq);
CREATE TABLE IF NOT EXISTS job_labels (
    job_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (job_id, key)
);
CREATE INDEX IF NOT EXISTS job_labels_kv ON job_labels(key, value);
CREATE TABLE IF NOT EXISTS scheduled_jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    namespace TEXT NOT NULL,
    created_at REAL NOT NULL,
    schedule TEXT NOT NULL,
    suspend INTEGER NOT NULL DEFAULT 0,
    concurrency INTEGER NOT NULL DEFAULT 0,
    spec TEXT NOT NULL,
    secrets TEXT NOT NULL DEFAULT '{}',
    last_job_id TEXT,
    last_job_at REAL,
    next_run_at REAL
);
CREATE INDEX IF NOT EXISTS scheduled_due ON scheduled_jobs(next_run_at) WHERE suspend = 0;
"""


@dataclass
class JobRecord:
    """One job as stored. `spec` is the normalised submission (camelCase keys, no secrets)."""

    id: str
    namespace: str
    created_at: float
    stage: str
    spec: dict[str, Any]
    secrets: dict[str, str] = field(default_factory=dict, repr=False)
    labels: dict[str, str] = field(default_factory=dict)
    started_at: float | None = None
    finished_at: float | None = None
    message: str | None = None
    initiator: dict[str, Any] | None = None
    scheduled_job_id: str | None = None
    attempt: int = 1
    pid: int | None = None
    pgid: int | None = None
    seq: int | None = None


@dataclass
class ScheduledJobRecord:
    id: str
    namespace: str
    created_at: float
    schedule: str
    spec: dict[str, Any]
    secrets: dict[str, str] = field(default_factory=dict, repr=False)
    suspend: bool = False
    concurrency: bool = False
    last_job_id: str | None = None
    last_job_at: float | None = None
    next_run_at: float | None = None
    seq: int | None = None


_JOB_COLUMNS = (
    "seq, id, namespace, created_at, started_at, finished_at, stage, message, spec, secrets, "
    "labels, initiator, scheduled_job_id, attempt, pid, pgid"
)
_SCHED_COLUMNS = (
    "seq, id, namespace, created_at, schedule, suspend, concurrency, spec, secrets, last_job_id, "
    "last_job_at, next_run_at"
)
_JOB_UPDATABLE = {
    "started_at", "finished_at", "stage", "message", "pid", "pgid", "attempt",
    "spec",  # as JSON text: only the exposed ports of a running job change
}
_SCHED_UPDATABLE = {
    "schedule", "suspend", "concurrency", "spec", "last_job_id", "last_job_at", "next_run_at",
}


def _job_from_row(row: Sequence[Any]) -> JobRecord:
    return JobRecord(
        seq=row[0],
        id=row[1],
        namespace=row[2],
        created_at=row[3],
        started_at=row[4],
        finished_at=row[5],
        stage=row[6],
        message=row[7],
        spec=json.loads(row[8]),
        secrets=json.loads(row[9]),
        labels=json.loads(row[10]),
        initiator=json.loads(row[11]) if row[11] else None,
        scheduled_job_id=row[12],
        attempt=row[13],
        pid=row[14],
        pgid=row[15],
    )


def _sched_from_row(row: Sequence[Any]) -> ScheduledJobRecord:
    return ScheduledJobRecord(
        seq=row[0],
        id=row[1],
        namespace=row[2],
        created_at=row[3],
        schedule=row[4],
        suspend=bool(row[5]),
        concurrency=bool(row[6]),
        spec=json.loads(row[7]),
        secrets=json.loads(row[8]),
        last_job_id=row[9],
        last_job_at=row[10],
        next_run_at=row[11],
    )


class Store:
    """SQLite-backed jobs and scheduled jobs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqldb.connect(path, threads=True, busy_timeout_s=5.0)
        try:
            path.chmod(0o600)
        except OSError:
            pass
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(jobs)")}
        if "seen_at" not in columns:  # a database from before heartbeats
            self._db.execute("ALTER TABLE jobs ADD COLUMN seen_at REAL")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- jobs ------------------------------------------------------------------------------

    def insert_job(self, job: JobRecord) -> JobRecord:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                cur = self._db.execute(
                    "INSERT INTO jobs (id, namespace, created_at, started_at, finished_at, "
                    "stage, message, spec, secrets, labels, initiator, scheduled_job_id, "
                    "attempt, pid, pgid) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        job.id, job.namespace, job.created_at, job.started_at, job.finished_at,
                        job.stage, job.message, json.dumps(job.spec), json.dumps(job.secrets),
                        json.dumps(job.labels),
                        json.dumps(job.initiator) if job.initiator else None,
                        job.scheduled_job_id, job.attempt, job.pid, job.pgid,
                    ),
                )
                job.seq = cur.lastrowid
                self._db.executemany(
                    "INSERT INTO job_labels (job_id, key, value) VALUES (?,?,?)",
                    [(job.id, k, v) for k, v in job.labels.items()],
                )
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # a failed COMMIT (a full disk) has rolled back already
                    self._db.execute("ROLLBACK")
                raise
        return job

    def insert_jobs_bulk(self, jobs: Iterable[JobRecord]) -> int:
        """Insert many finished jobs in one transaction (history imports and benchmarks)."""
        n = 0
        with self._lock:
            self._db.execute("BEGIN")
            try:
                for job in jobs:
                    self._db.execute(
                        "INSERT INTO jobs (id, namespace, created_at, started_at, finished_at, "
                        "stage, message, spec, secrets, labels, initiator, scheduled_job_id, "
                        "attempt) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (
                            job.id, job.namespace, job.created_at, job.started_at,
                            job.finished_at, job.stage, job.message, json.dumps(job.spec),
                            json.dumps(job.secrets), json.dumps(job.labels),
                            json.dumps(job.initiator) if job.initiator else None,
                            job.scheduled_job_id, job.attempt,
                        ),
                    )
                    self._db.executemany(
                        "INSERT INTO job_labels (job_id, key, value) VALUES (?,?,?)",
                        [(job.id, k, v) for k, v in job.labels.items()],
                    )
                    n += 1
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # a failed COMMIT (a full disk) has rolled back already
                    self._db.execute("ROLLBACK")
                raise
        return n

    def get_job(self, job_id: str) -> JobRecord | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)
            ).fetchone()
        return _job_from_row(row) if row else None

    def get_stage(self, job_id: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT stage FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return row[0] if row else None

    def list_jobs(
        self,
        namespace: str,
        *,
        stages: Sequence[str] = (),
        labels: dict[str, str] | None = None,
        before_seq: int | None = None,
        limit: int | None = None,
    ) -> list[JobRecord]:
        """Newest first, filtered by stage (any of) and labels (all of)."""
        sql, args = _job_query(_JOB_COLUMNS, namespace, stages, labels, before_seq, limit)
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [_job_from_row(r) for r in rows]

    def list_job_keys(
        self,
        namespace: str,
        *,
        stages: Sequence[str] = (),
        labels: dict[str, str] | None = None,
        before_seq: int | None = None,
        limit: int | None = None,
    ) -> list[tuple[int, str, str]]:
        """Like :meth:`list_jobs` but only (seq, id, stage): cheap enough for every list call."""
        sql, args = _job_query("seq, id, stage", namespace, stages, labels, before_seq, limit)
        with self._lock:
            return [tuple(r) for r in self._db.execute(sql, args).fetchall()]

    def get_jobs(self, job_ids: Sequence[str]) -> dict[str, JobRecord]:
        out: dict[str, JobRecord] = {}
        for chunk, marks in in_batches(job_ids):
            with self._lock:
                rows = self._db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id IN ({marks})", chunk).fetchall()
            for row in rows:
                job = _job_from_row(row)
                out[job.id] = job
        return out

    def jobs_in_stages(self, stages: Sequence[str]) -> list[JobRecord]:
        """Oldest first: the order the runner starts queued jobs in."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE stage IN ({','.join('?' * len(stages))}) "
                "ORDER BY seq ASC",
                list(stages),
            ).fetchall()
        return [_job_from_row(r) for r in rows]

    def update_job(self, job_id: str, **fields: Any) -> None:
        self._update("jobs", "job", _JOB_UPDATABLE, job_id, fields, list(fields.values()))

    def _update(self, table: str, what: str, allowed: set[str], row_id: str,
                fields: dict[str, Any], values: list[Any]) -> None:
        """UPDATE `table` SET `fields` (as `values`) for row `row_id`; only `allowed` columns."""
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update {what} fields {sorted(unknown)}")
        if not fields:
            return
        sets = ", ".join(f"{name} = ?" for name in fields)
        with self._lock:
            self._db.execute(f"UPDATE {table} SET {sets} WHERE id = ?", [*values, row_id])

    def finish_job_if_active(self, job_id: str, stage: str, message: str | None, at: float) -> bool:
        """Move an active job to a terminal stage; False when it was already terminal."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE jobs SET stage = ?, message = ?, finished_at = ? "
                f"WHERE id = ? AND stage IN {_ACTIVE}",
                (stage, message, at, job_id),
            )
        return cur.rowcount > 0

    def finish_job_at_last_sight(self, job_id: str, stage: str, message: str | None) -> bool:
        """Like `finish_job_if_active`, for a job this server lost sight of (it stopped or crashed
        while the job ran): the job ends when it was last seen alive (its last heartbeat), so it
        is billed for the time it is known to have run, not until the restart."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE jobs SET stage = ?, message = ?, finished_at = COALESCE(seen_at, started_at, created_at) "
                f"WHERE id = ? AND stage IN {_ACTIVE}",
                (stage, message, job_id),
            )
        return cur.rowcount > 0

    def heartbeat(self, at: float) -> None:
        """Every running job was seen alive at `at` (see `finish_job_at_last_sight`)."""
        with self._lock:
            self._db.execute("UPDATE jobs SET seen_at = ? WHERE stage = 'RUNNING'", (at,))

    def mark_running(self, job_id: str, pid: int, started_at: float, attempt: int) -> bool:
        """SCHEDULING (or RUNNING, for a retry) -> RUNNING; False when it was canceled meanwhile."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE jobs SET stage = 'RUNNING', pid = ?, pgid = ?, started_at = ?, seen_at = ?, attempt = ? "
                f"WHERE id = ? AND stage IN {_ACTIVE}",
                (pid, pid, started_at, started_at, attempt, job_id),
            )
        return cur.rowcount > 0

    def set_job_labels(self, job_id: str, labels: dict[str, str]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.execute(
                    "UPDATE jobs SET labels = ? WHERE id = ?", (json.dumps(labels), job_id)
                )
                self._db.execute("DELETE FROM job_labels WHERE job_id = ?", (job_id,))
                self._db.executemany(
                    "INSERT INTO job_labels (job_id, key, value) VALUES (?,?,?)",
                    [(job_id, k, v) for k, v in labels.items()],
                )
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # a failed COMMIT (a full disk) has rolled back already
                    self._db.execute("ROLLBACK")
                raise

    def count_active_for_schedule(self, scheduled_job_id: str) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM jobs WHERE scheduled_job_id = ? "
                f"AND stage IN {_ACTIVE}",
                (scheduled_job_id,),
            ).fetchone()
        return int(row[0])

    # -- scheduled jobs --------------------------------------------------------------------

    def insert_scheduled(self, sj: ScheduledJobRecord) -> ScheduledJobRecord:
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO scheduled_jobs (id, namespace, created_at, schedule, suspend, "
                "concurrency, spec, secrets, last_job_id, last_job_at, next_run_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    sj.id, sj.namespace, sj.created_at, sj.schedule, int(sj.suspend),
                    int(sj.concurrency), json.dumps(sj.spec), json.dumps(sj.secrets),
                    sj.last_job_id, sj.last_job_at, sj.next_run_at,
                ),
            )
            sj.seq = cur.lastrowid
        return sj

    def get_scheduled(self, sj_id: str) -> ScheduledJobRecord | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {_SCHED_COLUMNS} FROM scheduled_jobs WHERE id = ?", (sj_id,)
            ).fetchone()
        return _sched_from_row(row) if row else None

    def list_scheduled(self, namespace: str | None = None) -> list[ScheduledJobRecord]:
        with self._lock:
            if namespace is None:
                rows = self._db.execute(
                    f"SELECT {_SCHED_COLUMNS} FROM scheduled_jobs ORDER BY seq ASC"
                ).fetchall()
            else:
                rows = self._db.execute(
                    f"SELECT {_SCHED_COLUMNS} FROM scheduled_jobs WHERE namespace = ? "
                    "ORDER BY seq ASC",
                    (namespace,),
                ).fetchall()
        return [_sched_from_row(r) for r in rows]

    def iter_scheduled(self, namespace: str, *, batch: int = 200) -> Iterator[ScheduledJobRecord]:
        """Like :meth:`list_scheduled`, read `batch` at a time: 10,000 schedules with their specs
        are hundreds of MB once parsed, and a listing needs one at a time."""
        after = 0
        while True:
            with self._lock:
                rows = self._db.execute(
                    f"SELECT {_SCHED_COLUMNS} FROM scheduled_jobs WHERE namespace = ? AND seq > ? "
                    "ORDER BY seq ASC LIMIT ?",
                    (namespace, after, batch),
                ).fetchall()
            if not rows:
                return
            for row in rows:
                yield _sched_from_row(row)
            after = rows[-1][0]

    def due_scheduled(self, now: float) -> list[ScheduledJobRecord]:
        """The schedules that are not suspended and due at `now` (an index answers: the scheduler
        asks five times a second, whatever the number of schedules)."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_SCHED_COLUMNS} FROM scheduled_jobs "
                "WHERE suspend = 0 AND next_run_at IS NOT NULL AND next_run_at <= ? ORDER BY seq ASC",
                (now,),
            ).fetchall()
        return [_sched_from_row(r) for r in rows]

    def scheduled_timing(self) -> list[tuple[str, str, bool, float | None]]:
        """(id, schedule, suspended, next run) of every scheduled job, without their specs."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, schedule, suspend, next_run_at FROM scheduled_jobs ORDER BY seq ASC"
            ).fetchall()
        return [(r[0], r[1], bool(r[2]), r[3]) for r in rows]

    def update_scheduled(self, sj_id: str, **fields: Any) -> None:
        values = [
            json.dumps(v) if k == "spec" else (int(v) if isinstance(v, bool) else v)
            for k, v in fields.items()
        ]
        self._update("scheduled_jobs", "scheduled job", _SCHED_UPDATABLE, sj_id, fields, values)

    def delete_scheduled(self, sj_id: str) -> bool:
        with self._lock:
            cur = self._db.execute("DELETE FROM scheduled_jobs WHERE id = ?", (sj_id,))
        return cur.rowcount > 0


def _job_query(
    columns: str,
    namespace: str,
    stages: Sequence[str],
    labels: dict[str, str] | None,
    before_seq: int | None,
    limit: int | None,
) -> tuple[str, list[Any]]:
    """The SELECT behind the job lists: newest first, by stage (any of) and labels (all of)."""
    sql = [f"SELECT {columns} FROM jobs WHERE namespace = ?"]
    args: list[Any] = [namespace]
    if stages:
        sql.append(f"AND stage IN ({','.join('?' * len(stages))})")
        args.extend(stages)
    for key, value in (labels or {}).items():
        sql.append("AND id IN (SELECT job_id FROM job_labels WHERE key = ? AND value = ?)")
        args.extend((key, value))
    if before_seq is not None:
        sql.append("AND seq < ?")
        args.append(before_seq)
    sql.append("ORDER BY seq DESC")
    if limit is not None:
        sql.append("LIMIT ?")
        args.append(limit)
    return " ".join(sql), args
