"""The one way the console gets a jobs client: :func:`connect` gives a :class:`Backend` with `.api`.

`.api` is always a `huggingface_hub.HfApi`; only its endpoint and token differ:

- ``backend = "hub"``: huggingface.co (or `cfg.endpoint`), with huggingface_hub's own auth
  (`HF_TOKEN`, `hf auth login`). The console never reads, prints or stores that token.
- ``backend = "local"``: the embedded Jobs server. `cfg.endpoint` if set; else the server a
  `console serve` (or another console) announced in ``<data dir>/server.json``, if it answers;
  else one started in this process on a free loopback port and stopped by :meth:`Backend.close`.
  The token is the local server's (``$CONSOLE_SERVER_TOKEN`` or ``<data dir>/server/token``).

Pass ``namespace=backend.namespace`` to every jobs call: `HfApi.list_jobs` without a namespace asks
huggingface.co's whoami even when the endpoint is local (the `.api` here fills it in for
`list_jobs`, the only method with that flaw).

Every request of a connected backend goes through one resilient HTTP layer (:class:`ClientPolicy`,
installed as huggingface_hub's client factory and applied per endpoint): a bounded timeout where
huggingface_hub sets none, retries with exponential backoff and jitter for connection failures,
timeouts, 5xx and 429, and `Retry-After` honoured (up to a cap). Requests that would create
something (run a job, create a schedule, trigger, duplicate) are retried only when the server
certainly did not act on them (connection refused, 429, 503), never after a timeout or another
5xx, so a flaky link cannot start a job twice. `fetch_job_logs` resumes a cut stream where it
stopped (no line lost, none doubled). With `cfg.read_only` the `.api` refuses every call that
could change anything (:class:`ReadOnlyError`) before it reaches the network.

For local jobs, :attr:`Backend.artifacts_dir` (the stand-in for the Hub, `$CONSOLE_ARTIFACTS_DIR`
inside jobs), :attr:`Backend.trackio_dir` (`$TRACKIO_DIR` inside jobs) and
:meth:`Backend.job_workdir` (a running job's throwaway folder) say where things are on disk.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx2
from huggingface_hub import HfApi
from huggingface_hub.utils import _http as hf_http

if TYPE_CHECKING:
    from console.config import Config
    from console.server.serve import LocalServer

LOCAL = "local"
HUB = "hub"


class BackendError(RuntimeError):
    """The backend cannot be reached or started; the message is one line, ready to show."""


class ReadOnlyError(BackendError):
    """A call that could change something, refused because the console runs read-only."""


class ServerUnreachable(ConnectionError):
    """The jobs API did not answer (after the retries the request allowed); one line to show."""


# -- the resilient HTTP layer ------------------------------------------------------------------


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
                # nothing reached the server: always safe to try again
                if not self._may_retry(policy, attempt, started):
                    raise _unreachable(request, exc, attempt, sent=False) from exc
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


def install_policy(url: str, policy: ClientPolicy) -> None:
    """Apply `policy` to every request to `url`'s origin (installs the client factory once)."""
    with _FACTORY_LOCK:
        if hf_http._GLOBAL_CLIENT_FACTORY is not _client_factory:
            hf_http.set_client_factory(_client_factory)
    with _POLICIES_LOCK:
        _POLICIES[_origin(url)] = policy


def remove_policy(url: str, policy: ClientPolicy) -> None:
    with _POLICIES_LOCK:
        if _POLICIES.get(_origin(url)) is policy:
            del _POLICIES[_origin(url)]


# -- the jobs api --------------------------------------------------------------------------------

# What a read-only console may call: reads only. Everything else public is refused, so a method
# added to HfApi later is refused until someone decides it only reads.
_READ_PREFIXES = (
    "list_", "get_", "inspect_", "fetch_", "whoami", "auth_check", "repo_info", "model_info",
    "dataset_info", "space_info", "file_exists", "repo_exists", "revision_exists", "paper_info",
    "wait_for_",
)
_PLAIN_ATTRIBUTES = ("endpoint", "token", "library_name", "library_version", "user_agent",
                     "headers", "default_namespace", "read_only", "policy")


class _JobsApi(HfApi):
    """HfApi with the console's defaults (see the module docstring).

    - `list_jobs` defaults to the backend's namespace;
    - `fetch_job_logs` resumes a cut stream where it stopped;
    - with `read_only=True`, every method that could change anything raises ReadOnlyError.
    """

    def __init__(
        self,
        *args: Any,
        default_namespace: str,
        read_only: bool = False,
        policy: ClientPolicy | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.default_namespace = default_namespace
        self.read_only = read_only
        self.policy = policy or ClientPolicy()

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if (
            name.startswith("_")
            or name in _PLAIN_ATTRIBUTES
            or not callable(value)
            or not super().__getattribute__("read_only")
            or name.startswith(_READ_PREFIXES)
        ):
            return value

        def refused(*args: Any, **kwargs: Any) -> Any:
            raise ReadOnlyError(
                f"read-only: {name} refused (the console runs with --read-only or "
                "read_only = true; nothing was sent)"
            )

        return refused

    def list_jobs(self, *, namespace: str | None = None, **kwargs: Any) -> Iterable[Any]:
        return super().list_jobs(namespace=namespace or self.default_namespace, **kwargs)

    def fetch_job_logs(
        self,
        *,
        job_id: str,
        namespace: str | None = None,
        follow: bool = False,
        tail: int | None = None,
        token: bool | str | None = None,
    ) -> Iterator[str]:
        """huggingface_hub's log stream, reconnected when it fails part-way.

        The server replays a job's log from its first line on every connection, so after a
        failure this reconnects and skips the lines already given: none lost, none doubled. (A
        `tail=` request cannot be resumed that way; it is retried only if nothing came yet.)
        A followed stream that ends is checked once against a full replay, so lines cut off just
        before the job finished still arrive.
        """
        ns = namespace or self.default_namespace
        given = 0
        failures = 0
        verifying = False
        while True:
            stream = super().fetch_job_logs(
                job_id=job_id, namespace=ns, follow=follow and not verifying,
                tail=None if verifying else tail, token=token,
            )
            skip = given
            try:
                for line in stream:
                    if skip:
                        skip -= 1
                        continue
                    given += 1
                    failures = 0
                    yield line
                if not follow or tail is not None or verifying:
                    return
                verifying = True
                continue
            except GeneratorExit:
                raise
            except Exception as exc:
                failures += 1
                if (
                    not _resumable(exc)
                    or (tail is not None and given)
                    or failures > (self.policy.log_resumes if follow else 2)
                    or self.policy.closing.is_set()
                ):
                    raise
                if tail is not None:
                    given = 0
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
            if self.policy.closing.wait(self.policy.backoff(min(failures, 6))):
                return


def _resumable(exc: BaseException) -> bool:
    """A failure worth reconnecting after: the network, a timeout, a 5xx or a 429."""
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, HfHubHTTPError):
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        return status in RETRY_STATUSES
    return isinstance(exc, (httpx2.HTTPError, OSError))


@dataclass
class Backend:
    """A connected jobs backend. Close it (or use `with`) to stop an in-process server."""

    api: HfApi
    url: str
    kind: str
    namespace: str
    shared: bool = False
    """True when the local server belongs to another process (`console serve`)."""
    read_only: bool = False
    """True when `.api` refuses every call that could change anything."""
    policy: ClientPolicy = field(default_factory=ClientPolicy, repr=False)
    _server: LocalServer | None = field(default=None, repr=False)

    @property
    def artifacts_dir(self) -> Path | None:
        """Local backend: the durable artifact folder (None for the Hub)."""
        if self.kind != LOCAL:
            return None
        from console.server import paths

        return paths.artifacts_dir()

    @property
    def trackio_dir(self) -> Path | None:
        """Local backend: the Trackio store jobs log to (None for the Hub)."""
        if self.kind != LOCAL:
            return None
        from console.server import paths

        return paths.trackio_dir()

    def job_workdir(self, job_id: str) -> Path | None:
        """Local backend: where a job runs (exists only while it runs; None for the Hub)."""
        if self.kind != LOCAL:
            return None
        from console.server import paths

        return paths.job_workdir(job_id)

    def close(self) -> None:
        self.policy.closing.set()
        remove_policy(self.url, self.policy)
        server, self._server = self._server, None
        if server is not None:
            forget_server_info(server.url)
            server.stop()

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(
    cfg: Config, *, start: bool = True, policy: ClientPolicy | None = None
) -> Backend:
    """A Backend for the config's `backend` ("local" or "hub"); see the module docstring.

    With `start=False` a local backend never starts a server in this process (BackendError when
    none is running). `policy` sets timeouts and retries (defaults: :class:`ClientPolicy`).
    """
    policy = policy or ClientPolicy()
    if cfg.backend == HUB:
        kwargs: dict[str, Any] = {"endpoint": cfg.endpoint} if cfg.endpoint else {}
        api = _JobsApi(
            default_namespace=cfg.namespace, read_only=bool(cfg.read_only), policy=policy,
            **kwargs,
        )
        install_policy(api.endpoint, policy)
        return Backend(
            api=api, url=api.endpoint, kind=HUB, namespace=cfg.namespace,
            read_only=bool(cfg.read_only), policy=policy,
        )
    backend = _connect_local(cfg, start=start, policy=policy)
    install_policy(backend.url, policy)
    return backend


def _connect_local(cfg: Config, *, start: bool, policy: ClientPolicy) -> Backend:
    from console.server import paths

    if cfg.endpoint:
        token = paths.read_token()
        if token is None:
            raise BackendError(
                f"no token for the local Jobs server at {cfg.endpoint}: set CONSOLE_SERVER_TOKEN "
                f"or run it with this data folder ({paths.token_path()} is missing)"
            )
        return _local_backend(cfg, cfg.endpoint, token, shared=True, policy=policy)

    running = find_running_server()
    if running is not None:
        url, token = running
        return _local_backend(cfg, url, token, shared=True, policy=policy)
    if not start:
        raise BackendError("no local Jobs server is running (start one with `console serve`)")

    from console.server import LocalServer, ServerBusyError, ServerOptions

    options = ServerOptions(
        namespace=cfg.namespace,
        port=cfg.server.port,
        max_running_jobs=cfg.server.max_running_jobs,
        python_mode=cfg.server.python,
    )
    server = LocalServer(options)
    try:
        try:
            server.start()
        except OSError:
            if options.port == 0:
                raise
            options.port = 0  # the configured port is taken: any free one will do in-process
            server = LocalServer(options)
            server.start()
    except ServerBusyError as exc:
        raise BackendError(
            f"{exc}, but it does not answer; stop it or start a shared one with `console serve`"
        ) from None
    except OSError as exc:
        raise BackendError(f"cannot start the local Jobs server: {exc}") from None
    write_server_info(server.url)
    backend = _local_backend(cfg, server.url, server.token, shared=False, policy=policy)
    backend._server = server
    return backend


def _local_backend(
    cfg: Config, url: str, token: str, *, shared: bool, policy: ClientPolicy
) -> Backend:
    read_only = bool(cfg.read_only)
    api = _JobsApi(
        endpoint=url, token=token, default_namespace=cfg.namespace, read_only=read_only,
        policy=policy,
    )
    return Backend(
        api=api, url=url, kind=LOCAL, namespace=cfg.namespace, shared=shared,
        read_only=read_only, policy=policy,
    )


# -- server.json: where the shared local server listens ----------------------------------------


def write_server_info(url: str) -> Path:
    """Announce a server of this process in ``<data dir>/server.json``."""
    from console.config import atomic_write_bytes
    from console.server import paths

    path = paths.server_info_path()
    payload = json.dumps({"url": url, "pid": os.getpid()}).encode()
    atomic_write_bytes(path, payload, mode=0o600)
    return path


def forget_server_info(url: str) -> None:
    """Remove server.json if it still announces `url` from this process."""
    from console.server import paths

    path = paths.server_info_path()
    info = _read_server_info()
    if info and info.get("url") == url and info.get("pid") == os.getpid():
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _read_server_info() -> dict[str, Any] | None:
    from console.server import paths

    try:
        info = json.loads(paths.server_info_path().read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, OSError):
        return None
    return info if isinstance(info, dict) else None


def find_running_server(timeout: float = 2.0) -> tuple[str, str] | None:
    """(url, token) of the server announced in server.json, if its process lives and it answers."""
    import urllib.error
    import urllib.request

    import psutil

    from console.server import paths

    info = _read_server_info()
    if not info:
        return None
    url, pid = info.get("url"), info.get("pid")
    if not isinstance(url, str) or not isinstance(pid, int) or not psutil.pid_exists(pid):
        return None
    token = paths.read_token()
    if token is None:
        return None
    request = urllib.request.Request(
        f"{url}/api/whoami-v2", headers={"authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 (loopback)
            if resp.status != 200:
                return None
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return url, token
