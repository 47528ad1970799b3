"""What the cache knows of the past: each tenant's runs as of a time, and the live adapter
versions the console saw.

- :func:`runs_as_of`: of each tenant, the newest training run created by a time and the newest
  one completed by then, rebuilt from the cache (`console.fleet.past.fleet_as_of` makes the rows).
- The live tag of an adapter repo moves without history on the Hub, so the console keeps what it
  sees: :func:`record_live` writes a tenant's Live cell (`a1b2c3d4 PASS`) with when it was first
  seen, only when it changed; :func:`live_as_of` reads the one seen last by a time. A move the
  console did not see (it was not running, or the tenant was not on screen) is known from the next
  time it looks, no earlier.

Headless: no Textual, no console.ui or console.server.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from console.cache.docs import job_info, unpack
from console.cache.store import JobCache
from console.sqldb import in_batches
from console.stages import COMPLETED, sql_list

_LIVE_SCHEMA = """
CREATE TABLE IF NOT EXISTS live_seen (
    tenant TEXT NOT NULL,
    seen REAL NOT NULL,
    cell TEXT NOT NULL,
    made REAL
);
CREATE INDEX IF NOT EXISTS live_seen_by_tenant ON live_seen (tenant, seen);
"""


def _conn(cache: JobCache) -> Any:
    conn = cache._conn
    conn.executescript(_LIVE_SCHEMA)  # IF NOT EXISTS: a cache written before keeps its jobs
    return conn


def runs_as_of(cache: JobCache, at: datetime, endpoint: str | None = None) -> list[Any]:
    """Each tenant's newest training run created by `at` and its newest completed by then, as
    `JobInfo`s read from the cache (their stage is today's: `fleet.past.as_of` reads it as of `at`)."""
    t = at.timestamp()
    sql = (
        "SELECT rid FROM ("
        " SELECT rowid AS rid, ROW_NUMBER() OVER (PARTITION BY tenant ORDER BY created DESC, id DESC) AS n"
        " FROM jobs WHERE train = 1 AND created <= ?) WHERE n = 1 "
        "UNION ALL "
        "SELECT rid FROM ("
        " SELECT rowid AS rid, ROW_NUMBER() OVER (PARTITION BY tenant"
        "  ORDER BY COALESCE(finished, started, created) DESC, id DESC) AS n"
        f" FROM jobs WHERE train = 1 AND stage IN {sql_list(COMPLETED)} AND COALESCE(finished, started, created) <= ?)"
        " WHERE n = 1"
    )
    conn = cache._conn
    rids = list(dict.fromkeys(r[0] for r in conn.execute(sql, (t, t))))
    out: list[Any] = []
    for chunk, marks in in_batches(rids):
        for (blob,) in conn.execute(f"SELECT doc FROM jobs WHERE rowid IN ({marks})", chunk):
            if blob:
                out.append(job_info(unpack(blob), endpoint))
    return out


def record_live(cache: JobCache, cells: dict[str, tuple[str, datetime | None]], seen: datetime) -> int:
    """Keep the Live cells that differ from the last one kept of their tenant; how many were new."""
    if not cells:
        return 0
    conn = _conn(cache)
    last = _latest(conn, list(cells), None)
    new = [(tenant, seen.timestamp(), cell, made.timestamp() if made else None)
           for tenant, (cell, made) in cells.items() if last.get(tenant, (None, None))[0] != cell]
    if new:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT INTO live_seen (tenant, seen, cell, made) VALUES (?,?,?,?)", new)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return len(new)


LiveCells = dict[str, tuple[str, datetime | None]]
"""tenant -> a Live cell (`a1b2c3d4 PASS`, `-`) and when that version was made."""


def live_as_of(cache: JobCache, at: datetime, tenants: list[str] | None = None) -> LiveCells:
    """tenant -> the Live cell the console saw last by `at`, and when that version was made."""
    return _latest(_conn(cache), tenants, at.timestamp())


def _latest(conn: Any, tenants: list[str] | None, at: float | None) -> dict[str, tuple[str, datetime | None]]:
    where, args = ["1"], []
    if at is not None:
        where.append("seen <= ?")
        args.append(at)
    if tenants is not None:
        if not tenants:
            return {}
        where.append(f"tenant IN ({','.join('?' * len(tenants))})")
        args.extend(tenants)
    sql = (
        "SELECT tenant, cell, made FROM ("
        " SELECT tenant, cell, made, ROW_NUMBER() OVER (PARTITION BY tenant ORDER BY seen DESC, rowid DESC) AS n"
        f" FROM live_seen WHERE {' AND '.join(where)}) WHERE n = 1"
    )
    return {tenant: (cell, datetime.fromtimestamp(made, UTC) if made is not None else None)
            for tenant, cell, made in conn.execute(sql, args)}
