"""The resilient HTTP layer under every request the console makes to a jobs API.

:class:`ClientPolicy` says how requests to one endpoint time out and retry; :func:`install_policy`
makes huggingface_hub's client factory use :class:`ResilientTransport` for that endpoint: a bounded
timeout where huggingface_hub sets none, retries with exponential backoff and jitter for
connection failures, timeouts, 5xx and 429, `Retry-After` honoured (up to a cap). Requests that
would create something are retried only when the server certainly did not act on them.

Imports httpx2 and huggingface_hub's HTTP helpers; nothing of the console above `backend.errors`.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2
from huggingface_hub.utils import _http as hf_http
from huggingface_hub.utils import set_client_factory

from console.backend.errors import ServerUnreachable


@dataclass
class ClientPolicy:
    """How the console's requests to one endpoint time out and retry."""

    timeout: float = 20.0
    """Seconds to wait for an answer when huggingface_hub sets no timeout (streams set their own)."""
    connect_timeout: float = 5.0
    attempts: int = 5
    """Tries per request, the first included."""
    base_delay: float = 0.5
    """First backoff (seconds); doubles each retry, with jitter, up to `max_delay`."""
    max_delay: float = 8.0
    max_retry_after: float = 30.0
    """A `Retry-After` longer than this is not waited out: the 429/503 is returned to the caller."""
    budget: float = 45.0
    """Total seconds one request may spend retrying."""
    log_resumes: int = 20
    """How many times a followed log stream reconnects after failing before it gives up."""
    closing: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)
    """Set when the backend closes: retries stop waiting at once."""
    retries: int = field(default=0, compare=False)
    """Retries made so far (for the status line and tests)."""
    relocate: Callable[[], tuple[str, str] | None] | None = field(default=None, repr=False, compare=False)
    """Where the server is now, asked when a connection is refused: (base URL, token) of a server
    that moved (a local daemon started again on another port), else None. The request is then
    sent there, and so is every later one (the backend's `.api` is pointed at it too)."""

    def backoff(self, attempt: int) -> float:
        return min(self.max_delay, self.base_delay * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)


RETRY_STATUSES = (408, 429, 500, 502, 503, 504)
NOT_ACTED_STATUSES = (429, 503)
"""Answers that say the request was refused before it was acted on: safe to send again."""
_REPEATABLE_POSTS = ("/cancel", "/suspend", "/resume", "/schedule")
_POLICIES: dict[tuple[str, str, int], ClientPolicy] = {}
_POLICIES_LOCK = threading.Lock()


def _origin(url: Any) -> tuple[str, str, int]:
    parts = urlsplit(str(url))
    scheme = parts.scheme or "https"
    port = parts.port or (443 if scheme == "https" else 80)
    return scheme, (parts.hostname or "").lower(), port


def _repeatable(request: httpx2.Request) -> bool:
    """Whether sending `request` twice does no more than sending it once."""
    if request.method in ("GET", "HEAD", "OPTIONS", "PUT", "DELETE"):
        return True
    return request.method == "POST" and request.url.path.endswith(_REPEATABLE_POSTS)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """`Retry-After` as seconds: a number, or an HTTP date (None when absent or unreadable)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # NaN / inf
        return None
    return max(0.0, seconds)


class ResilientTransport(httpx2.BaseTransport):
    """Timeouts and retries for requests to endpoints that have a ClientPolicy (others pass)."""

    def __init__(self, inner: httpx2.BaseTransport | None = None) -> None:
        self.inner = inner or httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        with _POLICIES_LOCK:
            policy = _POLICIES.get(_origin(request.url))
        if policy is None:
            return self.inner.handle_request(request)
        timeout = dict(request.extensions.get("timeout") or {})
        if not any(timeout.values()):
            request.extensions["timeout"] = {
                "connect": policy.connect_timeout, "read": policy.timeout,
                "write": policy.timeout, "pool": policy.timeout,
            }
        repeatable = _repeatable(request)
        started = time.monotonic()
        attempt = 0
        moved = False  # sent where the server moved to already: once per request
        while True:
            attempt += 1
            delay: float | None
            try:
                response = self.inner.handle_request(request)
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    # Read plain answers here, so a connection that breaks mid-body is retried
                    # like one that broke before it (streams are read, and resumed, by callers).
                    try:
                        response.read()
                    finally:
                        response.close()
            except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
                # nothing reached the server: always safe to try again, there or where it moved
                if not moved and _moved(request, policy):
                    moved, delay = True, 0.0
                elif not self._may_retry(policy, attempt, started):
                    raise _unreachable(request, exc, attempt, sent=False) from exc
                else:
                    delay = policy.backoff(attempt)
            except (httpx2.TimeoutException, httpx2.NetworkError, httpx2.RemoteProtocolError) as exc:
                if not repeatable or not self._may_retry(policy, attempt, started):
                    raise _unreachable(request, exc, attempt, sent=not repeatable) from exc
                delay = policy.backoff(attempt)
            else:
                status = response.status_code
                if status not in RETRY_STATUSES or not (
                    repeatable or status in NOT_ACTED_STATUSES
                ):
                    return response
                wait = retry_after_seconds(response.headers.get("retry-after"))
                if (
                    not self._may_retry(policy, attempt, started)
                    or (wait is not None and wait > policy.max_retry_after)
                    or (wait is not None and time.monotonic() - started + wait > policy.budget)
                ):
                    # Done retrying: raise it here, so no retry loop above us starts over
                    # (huggingface_hub's own backoff would wait out any Retry-After, uncapped).
                    response.request = request
                    response.read()
                    response.close()
                    hf_http.hf_raise_for_status(response)
                    return response
                delay = wait if wait is not None else policy.backoff(attempt)
                response.close()
            policy.retries += 1
            # (request bodies here are json=/content= byte streams: they replay as they are)
            if policy.closing.wait(delay):
                raise ServerUnreachable("the console is closing")

    @staticmethod
    def _may_retry(policy: ClientPolicy, attempt: int, started: float) -> bool:
        return (
            attempt < policy.attempts
            and time.monotonic() - started < policy.budget
            and not policy.closing.is_set()
        )

    def close(self) -> None:
        self.inner.close()


def _moved(request: httpx2.Request, policy: ClientPolicy) -> bool:
    """Point `request` at where its server is now, if `policy.relocate` says it moved."""
    if policy.relocate is None:
        return False
    try:
        moved = policy.relocate()
    except Exception:  # finding the server is a hint: never worse than not asking
        return False
    if moved is None:
        return False
    base, token = moved
    new = httpx2.URL(base)
    if _origin(new) == _origin(request.url):
        return False
    request.url = request.url.copy_with(scheme=new.scheme, host=new.host, port=new.port)
    request.headers["host"] = request.url.netloc.decode("ascii")
    if "authorization" in request.headers:
        request.headers["authorization"] = f"Bearer {token}"
    return True


def _unreachable(
    request: httpx2.Request, exc: Exception, attempts: int, *, sent: bool
) -> ServerUnreachable:
    what = f"{request.method} {request.url.copy_with(query=None)}"
    cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    tries = f" after {attempts} tries" if attempts > 1 else ""
    text = f"no answer from the jobs API{tries} ({what}: {cause})"
    if sent:
        text += "; it may have been done anyway: check before trying again"
    return ServerUnreachable(text)


def _client_factory() -> httpx2.Client:
    """huggingface_hub's default client, with the resilient transport underneath."""
    return httpx2.Client(
        event_hooks={"request": [hf_http.hf_request_event_hook]},
        follow_redirects=True,
        timeout=None,
        transport=ResilientTransport(),
    )


_FACTORY_LOCK = threading.Lock()
_factory_installed = False


def install_policy(url: str, policy: ClientPolicy) -> None:
    """Apply `policy` to every request to `url`'s origin (installs the client factory once, through
    huggingface_hub's public `set_client_factory`)."""
    global _factory_installed
    with _FACTORY_LOCK:
        if not _factory_installed:
            set_client_factory(_client_factory)
            _factory_installed = True
    with _POLICIES_LOCK:
        _POLICIES[_origin(url)] = policy


def remove_policy(url: str, policy: ClientPolicy) -> None:
    with _POLICIES_LOCK:
        if _POLICIES.get(_origin(url)) is policy:
            del _POLICIES[_origin(url)]
