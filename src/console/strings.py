"""One copy of each repeated string, and of each repeated small record.

Job lists and ledger rows repeat the same few hundred strings (label keys and values, flavors,
stages, command words) across thousands of records; the JSON decoder and SQLite make a new string
object for each. Kept records share one copy instead. The same goes for the small records a
fleet's jobs repeat (the mounts they name, their owner, how a finished job ended).
"""

from __future__ import annotations

import sys
from typing import Any

from console.stages import TERMINAL_STAGES

MAX_SHARED = 4096
"""Longer strings are kept as they are (rarely repeated, and hashing them costs)."""


def shared(value: Any) -> Any:
    """`value` itself, or the one shared copy of it if it is a string of at most MAX_SHARED."""
    return sys.intern(value) if isinstance(value, str) and len(value) <= MAX_SHARED else value


MAX_RECORDS = 4096
"""Records kept per kind; past it, a new record stays its own (nothing is ever evicted)."""
_RECORDS: dict[str, dict[tuple[Any, ...], Any]] = {}


def shared_record(record: Any, names: tuple[str, ...], kind: str) -> Any:
    """`record`, or the one kept copy of an equal record of its type: equal in the fields `names`
    (its strings shared). Only for records that are read back and never changed in place."""
    try:
        key = (type(record), *(getattr(record, name) for name in names))
        hash(key)
    except (AttributeError, TypeError):  # not the record expected, or a field is a list
        return record
    table = _RECORDS.setdefault(kind, {})
    kept = table.get(key)
    if kept is not None:
        return kept
    if len(table) < MAX_RECORDS:
        for name in names:
            if isinstance(value := getattr(record, name), str):
                setattr(record, name, shared(value))
        table[key] = record
    return record


_OWNER_FIELDS = ("id", "name", "type")
_STATUS_FIELDS = ("stage", "message", "expose_urls", "ssh_url")
_FINISHED_STAGES = frozenset(TERMINAL_STAGES)


def shared_owner(owner: Any) -> Any:
    """A job's or schedule's owner (a `JobOwner`), one copy per owner."""
    return shared_record(owner, _OWNER_FIELDS, "owner") if owner is not None else None


def shared_status(status: Any) -> Any:
    """A finished job's status (a `JobStatus`), one copy for every job that ended the same way;
    a live job's is its own (its stage moves on, its URLs are its own)."""
    stage = getattr(status, "stage", None)
    if str(getattr(stage, "value", stage)) not in _FINISHED_STAGES:
        return status
    return shared_record(status, _STATUS_FIELDS, "status")
