"""The wire of the HF Jobs API: the error answer, request bodies read and checked for JSON and
Unicode, datetimes and JSON out. What the bodies may hold is :mod:`console.server.jobs.schema`;
what the answers hold is :mod:`console.server.jobs.answers`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import msgspec


class ApiError(Exception):
    """An error answer: HTTP status and a one-line message (sent as `{"error": message}`), and the
    Hub's `X-Error-Code` where it sends one (``RepoNotFound`` makes huggingface_hub raise its
    not-found error class)."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def iso(ts: float | None) -> str | None:
    """`2026-12-02T10:00:00.000Z` for a Unix time (None stays None)."""
    if ts is None:
        return None
    dt = datetime.fromtimestamp(ts, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def dumps_bytes(obj: Any) -> bytes:
    """Compact UTF-8 JSON (of plain values or the Structs of console.server.jobs.answers)."""
    return _ENCODER.encode(obj)


_ENCODER = msgspec.json.Encoder()


# ---------------------------------------------------------------------------------------------
# Incoming


def _dict_items(value: dict[str, Any], where: str) -> Iterator[tuple[Any, str]]:
    for key, item in value.items():
        yield key, f"{where}.{key!r}" if where else repr(key)  # the key first: repr is printable
        yield item, f"{where}.{key}" if where else str(key)


def _list_items(value: list[Any], where: str) -> Iterator[tuple[Any, str]]:
    for i, item in enumerate(value):
        yield item, f"{where}[{i}]"


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_WALK_BUDGET = 200_000


def check_unicode(doc: Any, raw: bytes | None = None) -> Any:
    """`doc` (parsed JSON, from `raw` if given) if every string in it, keys too, is valid Unicode;
    a lone surrogate (`"\\ud800"`, which JSON allows) is a 400 naming where it is: stored, it could
    be neither answered (UTF-8 cannot encode it) nor run, and the runner would retry it forever.

    Cheap for any body: a lone surrogate can only come from a `\\uD8xx`-`\\uDFxx` escape, so a body
    without one is not looked at; one with one is re-encoded in C, and only a body that fails is
    walked (at most 200,000 values) to name the field."""
    if raw is not None and not _SURROGATE_ESCAPE.search(raw):
        return doc
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
        return doc
    except UnicodeEncodeError:
        pass
    # depth first, each container's items drawn lazily: the budget bounds the work, not the body
    stack: list[Iterator[tuple[Any, str]]] = [iter([(doc, "")])]
    budget = _WALK_BUDGET
    while stack and budget > 0:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        budget -= 1
        value, where = step
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ApiError(400, f"{where or 'the body'}: not valid Unicode (a lone surrogate "
                               "escape such as \\ud800)") from None
        elif isinstance(value, dict):
            stack.append(_dict_items(value, where))
        elif isinstance(value, list):
            stack.append(_list_items(value, where))
    raise ApiError(400, "the body: not valid Unicode (a lone surrogate escape such as \\ud800)")


MAX_BODY_BYTES = 8 * 1024 * 1024
"""The largest JSON request body read (a job spec with its environment is a few KB; 413 beyond)."""


async def read_json_body(request: Any, limit: int = MAX_BODY_BYTES) -> Any:
    """A request's JSON body (None if empty), read at most `limit` bytes: a 413 past it, a 400 for
    anything that is not JSON, nested too deeply or not valid Unicode."""
    declared = request.headers.get("content-length", "")
    too_big = f"the request body is over {limit / (1024 * 1024):g} MiB"
    if declared.isdigit() and int(declared) > limit:
        raise ApiError(413, too_big)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, too_big)
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw:
        return None
    try:
        return check_unicode(json.loads(raw), raw)
    except ValueError:
        raise ApiError(400, "the request body is not valid JSON") from None
    except RecursionError:
        raise ApiError(400, "the request body is nested too deeply") from None
