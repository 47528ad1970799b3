"""Faults on purpose: make the embedded Jobs server misbehave the way a real API does on a bad day.

Off by default. A server started with ``ServerOptions(faults=True)`` (or with
``CONSOLE_SERVER_FAULTS=1`` in its environment, e.g. a `console serve` under test) wraps its app in
:class:`FaultMiddleware` and exposes its :class:`FaultPlan`:

- in the same process: ``server.faults.add(Fault(...))`` / ``server.faults.clear()``;
- over HTTP (same bearer token as the API): ``POST /admin/faults`` with a JSON list of faults,
  ``GET /admin/faults`` to see what is armed, ``DELETE /admin/faults`` to clear.

A :class:`Fault` matches requests by method and a regular expression searched in the URL path, and
fires `times` times (None: until cleared). Kinds:

- ``status``: answer `status` at once (5xx, 429 ...), with ``Retry-After: retry_after`` if set;
  the request never reaches the service (nothing is created or changed).
- ``delay``: serve the request, then hold its answer back `seconds` (slow answers, past a client's
  timeout: the server may well have acted on a request whose client gave up).
- ``cut``: serve normally but end the response body after `after_events` SSE events; with
  ``drop=True`` the connection is broken instead of ended cleanly (no final chunk), which a client
  sees as a protocol error — a dropped connection mid-answer. On a non-streaming answer,
  ``after_events=0, drop=True`` breaks the connection right after the headers.

The fault routes never exist on a server started without faults.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

FAULTS_ENV = "CONSOLE_SERVER_FAULTS"
ADMIN_PATH = "/admin/faults"
KINDS = ("status", "delay", "cut")


def faults_enabled_by_env() -> bool:
    return os.environ.get(FAULTS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


class InjectedDrop(Exception):
    """Raised inside the ASGI app to make the server break a connection on purpose."""


@dataclass
class Fault:
    kind: str
    path: str = ".*"
    """A regular expression searched in the URL path (e.g. ``/logs$``)."""
    method: str | None = None
    """GET, POST, ...; None matches any."""
    times: int | None = 1
    """How many requests it fires on; None: until cleared."""
    status: int = 503
    retry_after: float | None = None
    message: str = "injected fault"
    seconds: float = 0.0
    after_events: int = 0
    drop: bool = False
    fired: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"fault kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        re.compile(self.path)

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and self.method.upper() != method.upper():
            return False
        return re.search(self.path, path) is not None

    @classmethod
    def from_json(cls, doc: Any) -> Fault:
        if not isinstance(doc, dict):
            raise ValueError("each fault must be a JSON object")
        known = {k: v for k, v in doc.items() if k in cls.__dataclass_fields__ and k != "fired"}
        unknown = sorted(set(doc) - set(known) - {"fired"})
        if unknown:
            raise ValueError(f"unknown fault field(s): {', '.join(unknown)}")
        try:
            return cls(**known)
        except TypeError as exc:
            raise ValueError(str(exc)) from None


class FaultPlan:
    """The armed faults of one server (thread-safe: tests arm them from their own thread)."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self.fired: list[tuple[str, str, str]] = []
        """(kind, method, path) of every fault that fired, oldest first."""

    def add(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def armed(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    def take(self, method: str, path: str) -> Fault | None:
        """The first armed fault matching this request (its count is used up)."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.fired += 1
                    if fault.times is not None and fault.fired >= fault.times:
                        self._faults.remove(fault)
                    self.fired.append((fault.kind, method, path))
                    return fault
        return None


class FaultMiddleware:
    """ASGI middleware that applies a FaultPlan (and serves /admin/faults)."""

    def __init__(self, app: Any, plan: FaultPlan, token: str) -> None:
        self.app = app
        self.plan = plan
        self.expected = f"Bearer {token}".encode()
        self.state = getattr(app, "state", None)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        if path == ADMIN_PATH:
            await self._admin(scope, receive, send)
            return
        fault = self.plan.take(method, path)
        if fault is None:
            await self.app(scope, receive, send)
        elif fault.kind == "status":
            await _answer(send, fault.status, {"error": fault.message}, fault.retry_after)
        elif fault.kind == "delay":
            await self.app(scope, receive, _delaying_send(send, fault.seconds))
        else:
            try:
                await self.app(scope, receive, _cutting_send(send, fault))
            except BaseException as exc:  # noqa: BLE001 (the cut ends the app on purpose)
                if not _contains(exc, _CutDone):
                    raise

    async def _admin(self, scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        if headers.get(b"authorization", b"") != self.expected:
            await _answer(send, 401, {"error": "Invalid credentials in Authorization header"})
            return
        method = scope["method"]
        if method == "GET":
            await _answer(send, 200, [_public(f) for f in self.plan.armed()])
        elif method == "DELETE":
            self.plan.clear()
            await _answer(send, 200, {})
        elif method == "POST":
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            try:
                doc = json.loads(body or b"[]")
                items = doc if isinstance(doc, list) else [doc]
                faults = [Fault.from_json(item) for item in items]
            except (ValueError, re.error) as exc:
                await _answer(send, 400, {"error": f"bad fault: {exc}"})
                return
            self.plan.add(*faults)
            await _answer(send, 200, [_public(f) for f in self.plan.armed()])
        else:
            await _answer(send, 405, {"error": f"{method} {ADMIN_PATH} is not supported"})


def _public(fault: Fault) -> dict[str, Any]:
    return asdict(fault)


async def _answer(
    send: Any, status: int, doc: Any, retry_after: float | None = None
) -> None:
    body = json.dumps(doc).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if isinstance(doc, dict) and "error" in doc:
        headers.append((b"x-error-message", str(doc["error"]).encode("ascii", "replace")))
    if retry_after is not None:
        value = str(int(retry_after)) if float(retry_after).is_integer() else str(retry_after)
        headers.append((b"retry-after", value.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _CutDone(Exception):
    """Stops the app once a cleanly cut response has ended."""


def _contains(exc: BaseException, kind: type[BaseException]) -> bool:
    if isinstance(exc, kind):
        return True
    inner = getattr(exc, "exceptions", None)
    return bool(inner) and any(_contains(e, kind) for e in inner)


def _delaying_send(send: Any, seconds: float) -> Any:
    """A `send` that holds the answer back: the request is served, its answer comes late."""

    async def late_send(message: Any) -> None:
        if message["type"] == "http.response.start":
            await asyncio.sleep(seconds)
        await send(message)

    return late_send


def _cutting_send(send: Any, fault: Fault) -> Any:
    """A `send` that ends (or breaks) the body after `fault.after_events` SSE events."""
    state = {"events": 0}

    async def stop() -> None:
        if fault.drop:
            raise InjectedDrop(f"connection dropped on purpose after {fault.after_events} events")
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        raise _CutDone()

    async def cut_send(message: Any) -> None:
        if message["type"] != "http.response.body":
            await send(message)
            if fault.after_events == 0:
                await stop()
            return
        body: bytes = message.get("body", b"")
        room = fault.after_events - state["events"]
        events = body.count(b"\n\n")
        if events < room or not message.get("more_body", False) and events == room:
            state["events"] += events
            await send(message)
            return
        pos = 0
        for _ in range(room):  # keep exactly `room` whole events of this chunk
            pos = body.index(b"\n\n", pos) + 2
        if pos:
            await send({"type": "http.response.body", "body": body[:pos], "more_body": True})
        await stop()

    return cut_send


class _QuietDrops(logging.Filter):
    """Injected drops are expected: keep uvicorn from printing their tracebacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return exc is None or not _contains(exc, InjectedDrop)


logging.getLogger("uvicorn.error").addFilter(_QuietDrops())
