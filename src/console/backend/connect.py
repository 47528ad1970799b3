"""Connecting: a :class:`Backend` for the config's `backend`, local (the embedded server) or hub.

Imports the embedded server only when it has to start one in this process: finding and using a
running one reads `console.paths` only.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from huggingface_hub import HfApi

from console.backend.client import JobsApi
from console.backend.errors import BackendError
from console.backend.server_info import find_running_server, forget_server_info, write_server_info
from console.backend.transport import ClientPolicy, install_policy, remove_policy

if TYPE_CHECKING:
    from console.config import Config
    from console.server.serve import LocalServer

LOCAL = "local"
HUB = "hub"


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
    _moving: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def follow_server(self) -> tuple[str, str] | None:
        """Where the data dir's server is now, if it moved: a shared local server found through
        ``server.json`` that answers on another URL (the daemon killed and started again). `.api`,
        `.url` and the request policy move there, and (url, token) is returned; else None.

        The transport asks this when a connection is refused, so every caller of `.api` (the
        TUI's refresh, `console watch`, a followed log) follows a restarted server at its next
        request instead of calling the old port forever."""
        with self._moving:
            found = find_running_server(timeout=1.0)
            if found is None:
                return None
            url, token = found
            if url != self.url:
                old, self.url = self.url, url
                self.api.endpoint = url
                self.api.token = token
                install_policy(url, self.policy)
                remove_policy(old, self.policy)
            return url, token

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


HERE = "here"
"""`connect(start=HERE)`: with no server running, start one inside this process (stopped by
`Backend.close`, and its running jobs with it): for tests and embedding, not for people."""
DAEMON = "daemon"
"""`connect(start=DAEMON)`: with no server running, start the data dir's background daemon
(:mod:`console.backend.daemon`); jobs outlive the console."""
NEVER = "never"
"""`connect(start=NEVER)`: use a running server or fail with one line; start nothing."""


def connect(cfg: Config, *, start: str = HERE, policy: ClientPolicy | None = None) -> Backend:
    """A Backend for the config's `backend` ("local" or "hub"); see the module docstring.

    `start` says what a local backend does when no server runs (:data:`HERE`, :data:`DAEMON` or
    :data:`NEVER`); a read-only config never starts anything. `policy` sets timeouts and retries
    (defaults: :class:`ClientPolicy`).
    """
    if start not in (HERE, DAEMON, NEVER):
        raise ValueError(f"start must be {HERE!r}, {DAEMON!r} or {NEVER!r}, not {start!r}")
    if cfg.read_only:
        start = NEVER
    policy = policy or ClientPolicy()
    if cfg.backend == HUB:
        kwargs: dict[str, Any] = {"endpoint": cfg.endpoint} if cfg.endpoint else {}
        api = JobsApi(
            default_namespace=cfg.namespace, read_only=bool(cfg.read_only), policy=policy,
            **kwargs,
        )
        install_policy(api.endpoint, policy)
        try:
            namespace = _hub_namespace(api, cfg)
        except BackendError:
            remove_policy(api.endpoint, policy)
            raise
        api.default_namespace = namespace
        return Backend(
            api=api, url=api.endpoint, kind=HUB, namespace=namespace,
            read_only=bool(cfg.read_only), policy=policy,
        )
    backend = _connect_local(cfg, start=start, policy=policy)
    install_policy(backend.url, policy)
    return backend


def _hub_namespace(api: JobsApi, cfg: Config) -> str:
    """The namespace on the Hub: the configured one if the token can use it, else (none
    configured: the config's default is the OS user name, meaningless there) the token's user,
    from `whoami`, cached (see :mod:`console.backend.identity`)."""
    from console.backend.identity import hub_namespace
    from console.config import namespace_is_set

    return hub_namespace(api, cfg.namespace if namespace_is_set(cfg) else None)


def _connect_local(cfg: Config, *, start: str, policy: ClientPolicy) -> Backend:
    from console import paths  # the client's half of the server's paths: no server import

    if cfg.endpoint:
        token = paths.read_server_token()
        if token is None:
            raise BackendError(
                f"no token for the local Jobs server at {cfg.endpoint}: set CONSOLE_SERVER_TOKEN "
                f"or run it with this data folder ({paths.server_token_path()} is missing)"
            )
        return _local_backend(cfg, cfg.endpoint, token, shared=True, policy=policy)

    running = find_running_server()
    if running is not None:
        url, token = running
        return _local_backend(cfg, url, token, shared=True, policy=policy, follow=True)
    if start == NEVER:
        raise BackendError(
            "no local Jobs server is running (`console` starts one; `console serve` runs one in the foreground)"
        )
    if start == DAEMON:
        from console.backend.daemon import ensure_daemon

        url, token = ensure_daemon(cfg)
        return _local_backend(cfg, url, token, shared=True, policy=policy, follow=True)

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
    cfg: Config, url: str, token: str, *, shared: bool, policy: ClientPolicy, follow: bool = False
) -> Backend:
    """`follow`: the server was found through ``server.json``; follow it where it moves."""
    read_only = bool(cfg.read_only)
    api = JobsApi(
        endpoint=url, token=token, default_namespace=cfg.namespace, read_only=read_only,
        policy=policy,
    )
    backend = Backend(
        api=api, url=url, kind=LOCAL, namespace=cfg.namespace, shared=shared,
        read_only=read_only, policy=policy,
    )
    if follow:
        policy.relocate = backend.follow_server
    return backend
