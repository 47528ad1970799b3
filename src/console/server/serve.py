"""Run the embedded Jobs server: uvicorn on 127.0.0.1, in a background thread or in the foreground.

:class:`LocalServer` owns one :class:`~console.server.core.JobsService` and one uvicorn server.
``start()`` returns once the socket listens (port 0 picks a free one; `url` says which);
``stop()`` ends the HTTP server, then kills the jobs still running (they end in ERROR, "the server
stopped while the job was running") and closes the database. The server never binds anything but
loopback.

Stopping waits (up to :data:`GRACEFUL_SECONDS`) for the requests in flight to be answered, but not
for followers: a job's log or metrics stream ends only with its job, so a stopping server closes
those connections at once (the follower sees its connection end) instead of holding the stop for
the whole wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import uvicorn

from console.server import paths
from console.server.app import create_app
from console.server.core import JobsService, ServiceSettings
from console.server.faults import FaultMiddleware, FaultPlan, faults_enabled_by_env
from console.server.host.grants import Grants
from console.server.shapes import HfShapes, strict_by_env

HOST = "127.0.0.1"
GRACEFUL_SECONDS = 2.0
"""How long a stopping server waits for the requests in flight to be answered."""
KEEP_ALIVE_SECONDS = 30
"""How long an idle connection stays open: longer than a client keeps one in its pool (httpx: 5 s),
so the client always closes first and never sends on a connection the server is closing (a reset)."""
_EVENT_STREAM = b"text/event-stream"


class ServerBusyError(RuntimeError):
    """Another server already runs jobs from this data folder."""


@dataclass
class ServerOptions:
    namespace: str
    port: int = 0
    max_running_jobs: int = 2
    python_mode: str = "self"
    token: str | None = None
    """None: $CONSOLE_SERVER_TOKEN or the token file under the data folder (created if needed)."""
    log_cap_bytes: int | None = None
    """Bytes of output kept per job log (None: the runner's LOG_CAP_BYTES)."""
    faults: bool = False
    """Arm the fault-injection hooks (console.server.faults); also on with $CONSOLE_SERVER_FAULTS=1.
    Off for every real use: tests turn it on."""
    strict: bool = False
    """Answer in the leaner shapes huggingface.co sends (console.server.shapes): finished jobs
    without `finishedAt` or `durations`, scheduled specs without a readable timeout, `suspend:
    null`; also on with $CONSOLE_SERVER_STRICT=1. Off for every real use: tests turn it on."""
    models: tuple[str, ...] = ()
    """Hub model repos the server answers model info for (`HfApi.model_info`), as the Hub does for
    the models it has; also $CONSOLE_SERVER_MODELS (comma-separated). Any other id is not found."""


def models_by_env() -> list[str]:
    """The model repos $CONSOLE_SERVER_MODELS names (comma-separated)."""
    return [m.strip() for m in os.environ.get("CONSOLE_SERVER_MODELS", "").split(",") if m.strip()]


def bind_loopback(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this: without it a keep-alive client waits ~40 ms per request
    # (Nagle on our split header/body writes against the client's delayed ACK).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((HOST, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.setblocking(False)
    return sock


class _Followers:
    """ASGI middleware noting the requests answered with an event stream (a job's log or metrics,
    followed until the job ends): the ones a stopping server does not wait for."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.scopes: dict[int, Any] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def noting_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers") or ():
                    if name.lower() == b"content-type" and value.startswith(_EVENT_STREAM):
                        self.scopes[id(scope)] = scope
            await send(message)

        try:
            await self.app(scope, receive, noting_send)
        finally:
            self.scopes.pop(id(scope), None)

    def follows(self, scope: Any) -> bool:
        return scope is not None and self.scopes.get(id(scope)) is scope


class _Server(uvicorn.Server):
    """uvicorn's server, whose shutdown closes the followers' connections instead of waiting them
    out: the requests in flight still get the graceful wait."""

    def __init__(self, config: uvicorn.Config, followers: _Followers) -> None:
        super().__init__(config)
        self.followers = followers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._exit_wanted: asyncio.Event | None = None

    async def main_loop(self) -> None:
        # uvicorn's loop, which also wakes at once when `exit_soon` asks (it looks every 0.1 s)
        self._exit_wanted = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit_wanted.wait(), 0.1)

    def exit_soon(self) -> None:
        """Stop serving (from any thread): the server begins its shutdown now, not at its next tick."""
        self.should_exit = True
        loop, wanted = self._loop, self._exit_wanted
        if loop is not None and wanted is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(wanted.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        closer = asyncio.get_running_loop().create_task(self._close_followers())
        try:
            await super().shutdown(sockets)
        finally:
            closer.cancel()

    async def _close_followers(self) -> None:
        # Each pass until the shutdown ends: a keep-alive connection may begin a follow late.
        while True:
            for connection in list(self.server_state.connections):
                cycle = getattr(connection, "cycle", None)
                transport = getattr(connection, "transport", None)
                if transport is not None and self.followers.follows(getattr(cycle, "scope", None)):
                    transport.close()  # the stream sees a disconnect and ends; the client, a cut
            await asyncio.sleep(0.02)


class LocalServer:
    """The Jobs server on loopback; use as a context manager or call start()/stop()."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.token = options.token or paths.load_or_create_token()
        self.service = JobsService(
            ServiceSettings(
                namespace=options.namespace,
                max_running_jobs=options.max_running_jobs,
                python_mode=options.python_mode,
                **({"log_cap_bytes": options.log_cap_bytes} if options.log_cap_bytes else {}),
            )
        )
        self.grants = Grants(self.token)
        """Each running job's own token, in place of this one (console.server.host.grants)."""
        self.service.runner.grant = self.grants.secrets_for
        self.service.runner.on_finish.append(lambda job: self.grants.revoke(job.id))
        self.app = create_app(self.service, self.token, models=(*options.models, *models_by_env()),
                              grants=self.grants)
        if options.strict or strict_by_env():
            self.app = HfShapes(self.app)
        self.faults: FaultPlan | None = None
        """The armed faults (None unless started with faults on)."""
        if options.faults or faults_enabled_by_env():
            self.faults = FaultPlan()
            self.app = FaultMiddleware(self.app, self.faults, self.token)
        self._sock: socket.socket | None = None
        self._uvicorn: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock_fd: int | None = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the server is not started")
        return f"http://{HOST}:{self.port}"

    def _take_lock(self) -> None:
        # One server per data folder: two runners on one database would fight over its jobs.
        fd = os.open(paths.server_dir() / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ServerBusyError(
                f"another Jobs server already runs from {paths.server_dir()}"
            ) from None
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None

    def _prepare(self) -> None:
        try:
            self._take_lock()
            try:
                self._sock = bind_loopback(self.options.port)
            except OSError:
                self._release_lock()
                raise
        except BaseException:
            self.service.store.close()
            raise
        self.port = self._sock.getsockname()[1]
        self.service.runner.hub_endpoint = self.url  # each job's $HF_ENDPOINT: the local Hub
        followers = _Followers(self.app)
        config = uvicorn.Config(
            followers,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
            ws="none",
            date_header=False,  # the app stamps a fresh one (see app._DateHeader)
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            proxy_headers=False,  # loopback only, behind no proxy: no X-Forwarded-* to honour
        )
        self._uvicorn = _Server(config, followers)
        self.service.start()

    def start(self) -> str:
        """Start serving in a background thread; returns the URL."""
        self._prepare()
        assert self._uvicorn is not None and self._sock is not None
        server, sock = self._uvicorn, self._sock

        def run() -> None:
            asyncio.run(server.serve(sockets=[sock]))

        self._thread = threading.Thread(target=run, name="console-jobs-http", daemon=True)
        self._thread.start()
        while not server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the Jobs server failed to start")
            self._thread.join(0.01)
        return self.url

    def serve_forever(self, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve in this thread until SIGINT / SIGTERM, then stop everything.

        `on_ready(url)` runs once the socket listens, before the first request is served.
        """
        self._prepare()
        assert self._uvicorn is not None and self._sock is not None
        try:
            if on_ready is not None:
                on_ready(self.url)
            self._uvicorn.run(sockets=[self._sock])
        finally:
            self._shutdown_service()

    def stop(self) -> None:
        if self._uvicorn is not None:
            self._uvicorn.exit_soon()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self._shutdown_service()

    def _shutdown_service(self) -> None:
        self.service.stop()
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
        self._release_lock()

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


logging.getLogger("uvicorn.error").propagate = False
