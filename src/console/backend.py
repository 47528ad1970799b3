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

For local jobs, :attr:`Backend.artifacts_dir` (the stand-in for the Hub, `$CONSOLE_ARTIFACTS_DIR`
inside jobs), :attr:`Backend.trackio_dir` (`$TRACKIO_DIR` inside jobs) and
:meth:`Backend.job_workdir` (a running job's throwaway folder) say where things are on disk.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from huggingface_hub import HfApi

if TYPE_CHECKING:
    from console.config import Config
    from console.server.serve import LocalServer

LOCAL = "local"
HUB = "hub"


class BackendError(RuntimeError):
    """The backend cannot be reached or started; the message is one line, ready to show."""


class _JobsApi(HfApi):
    """HfApi whose `list_jobs` defaults to the backend's namespace (see the module docstring)."""

    def __init__(self, *args: Any, default_namespace: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.default_namespace = default_namespace

    def list_jobs(self, *, namespace: str | None = None, **kwargs: Any) -> Iterable[Any]:
        return super().list_jobs(namespace=namespace or self.default_namespace, **kwargs)


@dataclass
class Backend:
    """A connected jobs backend. Close it (or use `with`) to stop an in-process server."""

    api: HfApi
    url: str
    kind: str
    namespace: str
    shared: bool = False
    """True when the local server belongs to another process (`console serve`)."""
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
        server, self._server = self._server, None
        if server is not None:
            forget_server_info(server.url)
            server.stop()

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(cfg: Config, *, start: bool = True) -> Backend:
    """A Backend for the config's `backend` ("local" or "hub"); see the module docstring.

    With `start=False` a local backend never starts a server in this process (BackendError when
    none is running).
    """
    if cfg.backend == HUB:
        api = (
            _JobsApi(endpoint=cfg.endpoint, default_namespace=cfg.namespace)
            if cfg.endpoint
            else _JobsApi(default_namespace=cfg.namespace)
        )
        return Backend(api=api, url=api.endpoint, kind=HUB, namespace=cfg.namespace)
    return _connect_local(cfg, start=start)


def _connect_local(cfg: Config, *, start: bool) -> Backend:
    from console.server import paths

    if cfg.endpoint:
        token = paths.read_token()
        if token is None:
            raise BackendError(
                f"no token for the local Jobs server at {cfg.endpoint}: set CONSOLE_SERVER_TOKEN "
                f"or run it with this data folder ({paths.token_path()} is missing)"
            )
        return _local_backend(cfg.endpoint, token, cfg.namespace, shared=True)

    running = find_running_server()
    if running is not None:
        url, token = running
        return _local_backend(url, token, cfg.namespace, shared=True)
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
    backend = _local_backend(server.url, server.token, cfg.namespace, shared=False)
    backend._server = server
    return backend


def _local_backend(url: str, token: str, namespace: str, *, shared: bool) -> Backend:
    api = _JobsApi(endpoint=url, token=token, default_namespace=namespace)
    return Backend(api=api, url=url, kind=LOCAL, namespace=namespace, shared=shared)


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
