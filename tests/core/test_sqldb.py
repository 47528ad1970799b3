"""`console.sqldb`: how every store opens its SQLite database, and the IN (...) batches they ask in,
within its 999-parameter limit."""

from __future__ import annotations

import sqlite3

from console.sqldb import IN_BATCH, in_batches


def test_values_go_in_order_in_batches_with_one_placeholder_each():
    values = [f"id{i}" for i in range(2 * IN_BATCH + 1)]
    batches = list(in_batches(values))
    assert [len(b) for b, _ in batches] == [IN_BATCH, IN_BATCH, 1]
    assert [v for b, _ in batches for v in b] == values
    assert all(marks == ",".join("?" * len(b)) for b, marks in batches)
    assert list(in_batches([])) == []


def test_every_batch_is_one_statement_sqlite_takes():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id TEXT)")
    values = [str(i) for i in range(1234)]
    conn.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    found = [row[0] for batch, marks in in_batches(values)
             for row in conn.execute(f"SELECT id FROM t WHERE id IN ({marks})", batch)]
    assert sorted(found, key=int) == values


def test_every_store_opens_its_database_the_same_way(tmp_path):
    """Autocommit, the WAL journal, NORMAL sync and a busy timeout: what the ledger, on-call, the
    job cache and the server's job store rely on (two consoles and a server on one file)."""
    from console import sqldb

    conn = sqldb.connect(tmp_path / "a.sqlite")
    try:
        assert conn.isolation_level is None
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10000
    finally:
        conn.close()


def test_a_database_that_is_not_one_is_refused_in_one_line_naming_it(tmp_path):
    import pytest

    from console import sqldb

    class StoreError(Exception):
        pass

    bad = tmp_path / "ledger.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError) as caught:
        with sqldb.session(bad, StoreError) as conn:
            conn.execute("SELECT 1 FROM sqlite_master")
    assert str(caught.value).startswith(f"{bad}: ") and "\n" not in str(caught.value)
