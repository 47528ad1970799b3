"""What the local Hub accepts of an upload: the largest file it takes, and how long an upload may
send nothing before it is dropped. Both are read from the environment when a request asks:

- ``CONSOLE_HUB_MAX_FILE_BYTES``: the largest file a repo commit, an LFS upload or a Xet upload may
  claim (default 50 GiB, the Hub's own limit per file); a larger claim is a 413 naming it.
- a claim the disk has no room for is a 507 before any byte is sent (and a write that finds the disk
  full is a 507 too, on every write path: the Xet store's, the LFS upload's, a commit's).
- ``CONSOLE_HUB_UPLOAD_IDLE_SECONDS``: how long a request body may stall (default 60); past it
  the request is answered 408 and its connection closed, so a stalled client holds nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.requests import ClientDisconnect, Request

from console.server.jobs.wire import ApiError

log = logging.getLogger(__name__)
DEFAULT_MAX_FILE_BYTES = 50 * 1024**3
DEFAULT_IDLE_SECONDS = 60.0


def _env_number(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return value if value > 0 else default


def max_file_bytes() -> int:
    return int(_env_number("CONSOLE_HUB_MAX_FILE_BYTES", DEFAULT_MAX_FILE_BYTES))


def idle_seconds() -> float:
    return _env_number("CONSOLE_HUB_UPLOAD_IDLE_SECONDS", DEFAULT_IDLE_SECONDS)


def check_claim(size: int, field: str) -> int:
    """A file size an upload claims: a 413 naming `field` above the maximum."""
    limit = max_file_bytes()
    if size > limit:
        raise ApiError(413, f"{field}: {size} bytes is over the largest file this server takes ({limit} bytes; "
                       "CONSOLE_HUB_MAX_FILE_BYTES)")
    return size


ROOM_MARGIN_BYTES = 64 * 1024
"""Free space an upload leaves beside its own bytes (the commit's rows, the checkout's folders)."""
DISK_FULL = "disk full: the local Hub cannot store the upload; free space in the server's data folder"


def check_room(where: Path, need: int) -> None:
    """A 507 before an upload starts when the disk holding `where` has no room for its `need` bytes:
    the client gets its answer at once (hf_xet retries a 5xx from the Xet store for minutes)."""
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return
    if free < need + ROOM_MARGIN_BYTES:
        raise ApiError(507, f"{DISK_FULL} ({need} bytes to upload, {free} free)")


class Stalled(ApiError):
    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"the upload sent nothing for {seconds:g} s and was dropped")


class Dropped(ApiError):
    """The client closed the connection mid-upload: one log line, nothing stored."""

    def __init__(self, request: Request, got: int) -> None:
        super().__init__(400, "the client closed the connection before the upload ended")
        log.info("%s %s: the client closed the connection after %d bytes of the upload; nothing was stored",
                 request.method, request.url.path[:200], got)


async def body_chunks(request: Request) -> AsyncIterator[bytes]:
    """The request body, chunk by chunk; `Stalled` (a 408) when no byte comes within the idle limit,
    `Dropped` when the client goes away."""
    seconds = idle_seconds()
    stream = request.stream().__aiter__()
    got = 0
    while True:
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), seconds)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise Stalled(seconds) from None
        except ClientDisconnect:
            raise Dropped(request, got) from None
        got += len(chunk)
        yield chunk
