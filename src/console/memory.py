"""Memory the console no longer uses, given back to the system.

Reading 10,000 jobs parses tens of MB of JSON page by page; the pages are freed, but glibc's
allocator keeps their memory for reuse, and the console would sit at that peak for good.
:func:`give_back_memory` asks it to return the free heap (`malloc_trim`); elsewhere it does
nothing. Standard library only.
"""

from __future__ import annotations

from typing import Any

_LIBC: Any = None


def give_back_memory() -> None:
    """Return the free heap to the system (glibc's `malloc_trim(0)`; nothing elsewhere)."""
    global _LIBC
    try:
        if _LIBC is None:
            import ctypes  # on first use, not on the first frame's path
            import ctypes.util

            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _LIBC.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass
