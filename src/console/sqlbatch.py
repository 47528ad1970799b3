"""`WHERE x IN (...)` over many values, in batches one SQLite statement takes.

Older SQLite builds allow 999 parameters per statement. The stores ask about a refresh's job ids,
a list call's ids and an on-call pass's event keys `IN_BATCH` at a time.

Imports nothing of the console: the embedded server's store and the console's stores use it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

IN_BATCH = 500


def in_batches(values: Sequence[str], size: int = IN_BATCH) -> Iterator[tuple[list[str], str]]:
    """(batch, placeholders) for each `size` values in order: `placeholders` is `?,?,...`, one
    per value of the batch, for `IN ({placeholders})`."""
    for start in range(0, len(values), size):
        batch = list(values[start:start + size])
        yield batch, ",".join("?" * len(batch))
