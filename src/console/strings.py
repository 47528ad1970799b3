"""One copy of each repeated string.

Job lists and ledger rows repeat the same few hundred strings (label keys and values, flavors,
stages, command words) across thousands of records; the JSON decoder and SQLite make a new string
object for each. Kept records share one copy instead.
"""

from __future__ import annotations

import sys
from typing import Any

MAX_SHARED = 4096
"""Longer strings are kept as they are (rarely repeated, and hashing them costs)."""


def shared(value: Any) -> Any:
    """`value` itself, or the one shared copy of it if it is a string of at most MAX_SHARED."""
    return sys.intern(value) if isinstance(value, str) and len(value) <= MAX_SHARED else value
