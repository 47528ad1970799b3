"""`in_batches`: the IN (...) batches the stores ask SQLite in, within its 999-parameter limit."""

from __future__ import annotations

import sqlite3

from console.sqlbatch import IN_BATCH, in_batches


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
